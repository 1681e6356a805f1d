#!/usr/bin/env python3
"""The analysis fixed in PROTOCOL.md beside this file: added wall time of the refreshes.

Reads ``records-shard*.jsonl`` of the arms (by default ``none``, ``fg``, ``bg``) in a run
directory (by default this file's), pairs the jobs by (test env, trial, draw), and prints a
Markdown table: per arm, the job's wall and CPU seconds and the training thread's refresh stall,
and for every arm but ``none`` the added wall time against ``none`` as a share of ``none``'s
(mean ± SE, paired t and Wilcoxon p, one-sided 95% upper and lower bounds) with the protocol's
verdict against the 10% goal.

Args (command line):
    --dir: the run directory holding one folder per arm.
    --arms: the arms, ``none`` first.

Example::

    python results/fashion/refresh_cost/analyze.py > results/fashion/refresh_cost/RESULTS.md
    python results/fashion/refresh_cost/analyze.py --dir results/fashion/refresh_cost_quiet \
        --arms none fg bg bg1
"""

import argparse

import glob
import json
import math
import os
import sys

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL = 0.10
JOBS = 18


def records(run_dir, arm):
    """{(test env, trial, draw): record} of one arm's finished jobs."""
    out = {}
    for p in sorted(glob.glob(os.path.join(run_dir, arm, "records-shard*.jsonl"))):
        for line in open(p):
            r = json.loads(line)
            out[(r["test_env"], r["trial_seed"], r["hparams_seed"])] = r
    return out


def mean_se(x):
    x = np.asarray(x, float)
    return x.mean(), (x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", default=HERE, help="run directory (default: this file's)")
    p.add_argument("--arms", nargs="+", default=["none", "fg", "bg"], help="arms, none first")
    args = p.parse_args(argv)
    ARMS = args.arms
    if ARMS[0] != "none":
        p.error("--arms: the first arm must be 'none', the baseline the others are compared with")
    rec = {a: records(args.dir, a) for a in ARMS}
    units = sorted(set.intersection(*(set(r) for r in rec.values())))
    lines = ["# Results (analyze.py; protocol in PROTOCOL.md)", "",
             "Jobs finished per arm: " + ", ".join("%s %d" % (a, len(rec[a])) for a in ARMS) +
             "; paired over the %d jobs every arm finished." % len(units), "",
             "| arm | jobs | wall s | CPU s | set-up s | refresh stall s |", "|---|---|---|---|---|---|"]
    for a in ARMS:
        rs = [rec[a][u] for u in units]
        cols = [mean_se([r["wall_s"] for r in rs]), mean_se([r["cpu_s"] for r in rs]),
                mean_se([r["setup_s"] or 0.0 for r in rs]), mean_se([sum(r["refresh_s"] or []) for r in rs])]
        lines.append("| %s | %d | %s |" % (a, len(rs), " | ".join("%.2f ± %.2f" % c for c in cols)))
    lines += ["", "Added wall time against `none`, as a share of `none`'s wall (per job, then averaged):", "",
              "| arm | mean ± SE | 95% one-sided bounds | paired t p | Wilcoxon p | verdict (goal ≤ 10%) |",
              "|---|---|---|---|---|---|"]
    n = len(units)
    q = stats.t.ppf(0.95, n - 1) if n > 1 else float("nan")
    for a in ARMS[1:]:
        d = np.array([(rec[a][u]["wall_s"] - rec["none"][u]["wall_s"]) / rec["none"][u]["wall_s"] for u in units])
        m, se = mean_se(d)
        lo, hi = m - q * se, m + q * se
        t_p = stats.ttest_1samp(d, 0.0).pvalue if n > 1 else float("nan")
        w_p = stats.wilcoxon(d).pvalue if n > 1 and np.any(d != 0) else float("nan")
        verdict = ("≤ 10% established" if hi < GOAL else "> 10%" if lo > GOAL else "not established")
        lines.append("| %s | %+.1f%% ± %.1f%% | [%+.1f%%, %+.1f%%] | %.3f | %.3f | %s |"
                     % (a, 100 * m, 100 * se, 100 * lo, 100 * hi, t_p, w_p, verdict))
    missing = {a: len(rec[a]) for a in ARMS}
    lines += ["", "Jobs that did not finish (of %d an arm): " % JOBS +
              ", ".join("%s %d" % (a, JOBS - missing[a]) for a in ARMS) + "."]
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
