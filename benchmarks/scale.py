"""Time and peak memory of psda.match at scale (issue 6).

Each case runs in a fresh child process, so that its peak resident set
(VmHWM, read from /proc at the end of the child; ru_maxrss where /proc is
missing) is its own. Features are float32, d columns, scaled so that squared
distances are O(1): --data gaussian draws one isotropic Gaussian per domain
(target shifted) -- structureless, the hardest case for candidate edges;
--data classes draws 65 class clusters (as Office-Home's classes) with
within-class noise and a domain shift, closer to penultimate-layer features;
--data clustered draws five tight clusters (tests/test_stage2_exact.py's),
whose near-ties make large blossoms in Stage 2.

    python benchmarks/scale.py                       # paper scale + a small sweep
    python benchmarks/scale.py --cases 15000x2000 30000x2000
    python benchmarks/scale.py --cases 50000x50000 --solver sparse
    python benchmarks/scale.py --cases 20000x20000 --solver sparse --cost coral
    python benchmarks/scale.py --markdown            # a table for README.md

Columns: data, cost (discrepancy and kernel), solver, n_s, n_t, d, stages, wall seconds, CPU seconds
(user+sys of the child: more than wall when both cores work), peak RSS in GB,
the Stage 1 cost, and the Stage 2 gap ((cost - bound) / bound; 0 proves
optimality).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

CHILD = r"""
import json, os, resource, sys, time
import numpy as np
import psda
ns, nt, d, stages, k, seed = (int(x) for x in sys.argv[1:7])
data, solver, cost = sys.argv[7], sys.argv[8], sys.argv[9]
discrepancy, _, kernel = cost.partition("-")
rng = np.random.default_rng(seed)
if data == "classes":
    centres = rng.normal(0.0, 1.0, size=(65, d)).astype(np.float32)
    shift = rng.normal(0.0, 0.3, size=d).astype(np.float32)
    src = centres[rng.integers(65, size=ns)] + rng.normal(0.0, 0.5, size=(ns, d)).astype(np.float32)
    tgt = centres[rng.integers(65, size=nt)] + shift + rng.normal(0.0, 0.5, size=(nt, d)).astype(np.float32)
elif data == "clustered":
    # tests/test_stage2_exact.py's five tight clusters: near-ties, large blossoms.
    centres = rng.normal(0.0, 4.0, size=(5, d))
    src = (centres[rng.integers(5, size=ns)] + 0.05 * rng.normal(size=(ns, d))).astype(np.float32)
    tgt = (centres[rng.integers(5, size=nt)] + 0.05 * rng.normal(size=(nt, d)) + 0.5).astype(np.float32)
else:
    src = rng.normal(0.0, 1.0, size=(ns, d)).astype(np.float32)
    tgt = rng.normal(0.2, 1.0, size=(nt, d)).astype(np.float32)
# Scale so that squared distances are O(1)-O(10): the paper's RBF mixture
# (gammas 0.001..10) then has informative terms, as with normalised features.
src /= np.sqrt(d); tgt /= np.sqrt(d)
t0, c0 = time.perf_counter(), time.process_time()
m = psda.match(src, tgt, batch_size=k, stages=stages, solver=solver, discrepancy=discrepancy,
               kernel=kernel or "rbf", progress=False)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = None
try:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
except OSError:
    pass
if peak is None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
print(json.dumps(dict(wall=wall, cpu=cpu, peak=peak, stage1=m.stage1_cost, gap=m.stage2_gap)))
"""


def run(ns: int, nt: int, d: int, stages: int, k: int, data: str, solver: str, cost: str, timeout: float) -> dict:
    cmd = [sys.executable, "-c", CHILD, str(ns), str(nt), str(d), str(stages), str(k), "0", data, solver, cost]
    start = time.perf_counter()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(error="timeout after %.0f s" % timeout)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["exit %d" % res.returncode])[-1]
        return dict(error=last[:120], wall=time.perf_counter() - start)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["2000x2000", "4000x4000", "8000x2000", "15000x2000"],
                    help="n_s x n_t sizes, e.g. 15000x2000")
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--data", choices=["gaussian", "classes", "clustered"], default="gaussian")
    ap.add_argument("--solver", choices=["auto", "dense", "sparse"], default="auto")
    ap.add_argument("--cost", choices=["mmd-rbf", "mmd-linear", "coral"], default="mmd-rbf")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print("# psda %s, %d CPUs, load average %.1f at start" % (_version(), os.cpu_count() or 0, load), file=sys.stderr)
    header = ["data", "cost", "solver", "n_s", "n_t", "d", "stages", "wall s", "CPU s", "peak RSS GB", "stage 1 cost", "stage 2 gap"]
    rows = []
    for case in args.cases:
        ns, nt = (int(x) for x in case.lower().split("x"))
        r = run(ns, nt, args.dim, args.stages, args.batch_size, args.data, args.solver, args.cost, args.timeout)
        if "error" in r:
            row = [args.data, args.cost, args.solver, ns, nt, args.dim, args.stages, r["error"], "", "", "", ""]
        else:
            row = [args.data, args.cost, args.solver, ns, nt, args.dim, args.stages, "%.1f" % r["wall"], "%.1f" % r["cpu"],
                   "%.2f" % (r["peak"] / 1e9), "%.6g" % r["stage1"], "%.2g" % r["gap"]]
        rows.append([str(x) for x in row])
        print("  ".join(rows[-1]), file=sys.stderr, flush=True)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
        for row in rows:
            print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


def _version() -> str:
    try:
        import psda

        return psda.__version__ if hasattr(psda, "__version__") else psda.version()
    except Exception as e:  # the table is still useful without it
        return "unknown (%s)" % e


if __name__ == "__main__":
    main()
