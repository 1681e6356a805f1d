"""The evidence protocol on RotatedFashionMNISTFlat (docs/evidence.md): run, shard, analyse.

Two commands, writing under --output_dir:

``run``: the sweep's jobs (``psda.domainbed.sweep.make_jobs``: DomainBed's
``make_args_list`` and ``Job``, expanded per sampler) for the rows ERM and DANN
(DomainBed's loaders) and UDA_MMD / UDA_CORAL × --samplers; domain adaptation, each
test env of --test_envs held out in turn, UDA split --uda_holdout_fraction, hparam draws
--n_hparams_from .. --n_hparams - 1 (DomainBed: seed 0 = the defaults, seeds >= 1 = random
draws; the draw's seed is ``seed_hash(hparams_seed, trial_seed)``, and every hparam is
drawn from ``seed_hash(that, hparam name)``, so it does not depend on the sampler).
Jobs are ordered (trial, test env, draw, row), and ``--shard i/N`` runs jobs i, i + N, ...
of that list, so N processes started together finish whole (trial, test env) units
(every row, every draw) one after another: a run stopped early leaves complete units.
With ``--queue TOKEN`` the processes share the whole ordered list instead: each takes the
next job that no other has claimed (a file under ``claims-TOKEN/``, created exclusively),
so they stay on the earliest unit whatever each job costs. With ``--deadline T`` (Unix
seconds) a process starts a job only while now + 1.25 × the longest job recorded so far
in --output_dir ends before T (tools/gpu_protocol.sh: a run sized by its time budget).
DomainBed's train.py trains on CUDA when torch sees a device, on the CPU otherwise.
Every job runs in this process through ``psda.domainbed.__main__.main`` (DomainBed's
unmodified train.py); a job whose directory holds ``done`` is skipped. Each job appends
one line to ``records-shard<i>.jsonl``: wall seconds, CPU seconds
(``time.process_time``, all threads of this process), the sampler's set-up seconds (the
first feature pass and matching, as psda prints it in out.txt) and its refresh seconds
(the training thread's time in each refresh), and the job's hparams.

``analyze``: from the jobs' DomainBed records (results.jsonl) and records-*.jsonl,
writes tables.md, selected.jsonl (one line per (row, test env, trial): the draw
training-domain validation picks, its hparams and accuracies) and the figures
accuracy_strip.png / accuracy_strip.pdf. Selection is DomainBed's
``model_selection.IIDAccuracySelectionMethod`` (best mean validation accuracy of the
training environments over draws and checkpoints; test accuracy on the test env's
in-split). See docs/evidence.md for what each table holds. Rerunnable at any time.

Example (the protocol of docs/evidence.md; two workers)::

    export PYTHONPATH=$PWD/python:/path/to/DomainBed
    for i in 0 1; do nohup nice -n 5 python tools/fashion_protocol.py run --shard $i/2 \\
        --output_dir results/fashion > results/fashion-$i.log 2>&1 & done
    python tools/fashion_protocol.py analyze --output_dir results/fashion
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import re
import shutil
import sys
import time

#: The rows of the tables: (algorithm, sampler); ERM and DANN run DomainBed's loaders.
BASELINES = ["ERM", "DANN"]
ALGORITHMS = ["UDA_MMD", "UDA_CORAL"]
SAMPLERS = ["uniform", "paired", "double-paired"]

#: hparams fixed for every job: the subset, DomainBed's default MLP and psda's default
#: refresh interval; the random search varies k, lr, weight decay and the trade-off.
FIXED = {"psda_env_size": 1000, "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0, "psda_refresh_steps": 500}

_SETUP = re.compile(r"^psda: .* sampler over .*; built in ([0-9.]+) s", re.M)
_REFRESH = re.compile(r"^psda: refresh \d+ after \d+ steps took ([0-9.]+) s", re.M)


def _rows(args):
    return [(b, "uniform") for b in args.baselines] + [(a, s) for a in args.algorithms for s in args.samplers]


def list_jobs(args):
    """The protocol's jobs in run order: (trial, test env, draw, row)."""
    from psda.domainbed import install
    from psda.domainbed.samplers import parse_algorithm
    from psda.domainbed.sweep import _parser, make_jobs

    install()
    common = ["launch", "--datasets", args.dataset, "--task", "domain_adaptation", "--uda_holdout_fraction",
              str(args.uda_holdout_fraction), "--single_test_envs", "--n_hparams_from", str(args.n_hparams_from),
              "--n_hparams", str(args.n_hparams), "--n_trials", str(args.n_trials), "--steps", str(args.steps),
              "--output_dir", args.output_dir, "--data_dir", args.data_dir, "--command_launcher", "local",
              "--skip_confirmation",
              "--hparams", json.dumps(args.fixed), "--test_envs", *map(str, args.test_envs)]
    jobs = make_jobs(_parser().parse_args(common + ["--algorithms", *args.baselines])) if args.baselines else []
    if args.algorithms:
        jobs += make_jobs(_parser().parse_args(common + ["--algorithms", *args.algorithms,
                                                         "--samplers", *args.samplers]))
    rows = _rows(args)

    def key(job):
        ta = job.train_args
        return (ta["trial_seed"], args.test_envs.index(ta["test_envs"][0]), ta["hparams_seed"],
                rows.index(parse_algorithm(ta["algorithm"])))

    return sorted(jobs, key=key)


def job_argv(train_args, extra):
    """train.py's arguments for a Job's train_args, as DomainBed's Job writes its command."""
    argv = []
    for k, v in sorted(train_args.items()):
        argv += ["--" + k, *map(str, v)] if isinstance(v, (list, tuple)) else ["--" + k, str(v)]
    return argv + extra


def sampler_times(out_txt: str):
    """(set-up seconds or None, [refresh seconds]) from a job's out.txt, as psda's
    loaders print them (psda.domainbed.loaders.DomainBedPSDA)."""
    text = open(out_txt).read() if os.path.exists(out_txt) else ""
    m = _SETUP.search(text)
    return (float(m.group(1)) if m else None), [float(v) for v in _REFRESH.findall(text)]


def claim(claims_dir: str, job) -> bool:
    """claim returns True when this process takes ``job``: it created the job's claim file
    in ``claims_dir`` (O_EXCL, so one process of those sharing the directory wins)."""
    try:
        fd = os.open(os.path.join(claims_dir, os.path.basename(job.output_dir)), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, b"%d\n" % os.getpid())
    os.close(fd)
    return True


def longest_job(output_dir: str) -> float:
    """The longest wall time (s) of the jobs recorded in output_dir's records files, 0 if none."""
    return max((r["wall_s"] for r in _records(output_dir)), default=0.0)


def run(args):
    import torch

    from psda.domainbed.__main__ import main as train_main

    torch.set_num_threads(args.threads)
    i, n = (int(v) for v in args.shard.split("/"))
    if not 0 <= i < n:
        sys.exit("--shard %s: want i/N with 0 <= i < N" % args.shard)
    if args.queue is not None and not re.fullmatch(r"[\w.-]+", args.queue):
        sys.exit("--queue %r: want a token of letters, digits, '.', '_' and '-' (it names a directory)" % args.queue)
    jobs = list_jobs(args)
    mine = jobs if args.queue else jobs[i::n]
    todo = [j for j in mine if not os.path.exists(os.path.join(j.output_dir, "done"))]
    if args.queue:
        claims = os.path.join(args.output_dir, "claims-" + args.queue)
        os.makedirs(claims, exist_ok=True)
        print("fashion protocol: %d jobs, %d to run, worker %d takes them from the queue %s"
              % (len(jobs), len(todo), i, claims), flush=True)
    else:
        print("fashion protocol: %d jobs, shard %d/%d has %d, %d to run" % (len(jobs), i, n, len(mine), len(todo)),
              flush=True)
    extra = ["--checkpoint_freq", str(args.checkpoint_freq), "--skip_model_save"]
    log = open(os.path.join(args.output_dir, "records-shard%d.jsonl" % i), "a")
    t_start = time.perf_counter()
    ran = 0
    for j, job in enumerate(todo):
        if args.deadline is not None:
            estimate = 1.25 * longest_job(args.output_dir)
            if time.time() + estimate > args.deadline:
                print("fashion protocol: worker %d stops at the deadline: %.0f s left, next job estimated at %.0f s "
                      "(1.25 x the longest so far); %d jobs run here" % (i, args.deadline - time.time(), estimate, ran),
                      flush=True)
                break
        if args.queue and not claim(claims, job):
            continue
        ran += 1
        if os.path.exists(job.output_dir):  # incomplete: start it again, as delete_incomplete does
            shutil.rmtree(job.output_dir)
        w0, c0 = time.perf_counter(), time.process_time()
        train_main(job_argv(job.train_args, extra))
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        setup, refreshes = sampler_times(os.path.join(job.output_dir, "out.txt"))
        ta = job.train_args
        with open(os.path.join(job.output_dir, "results.jsonl")) as f:
            hparams = json.loads(f.readline())["hparams"]
        log.write(json.dumps({"algorithm": ta["algorithm"], "test_env": ta["test_envs"][0],
                              "trial_seed": ta["trial_seed"], "hparams_seed": ta["hparams_seed"],
                              "wall_s": wall, "cpu_s": cpu, "setup_s": setup, "refresh_s": refreshes,
                              "hparams": hparams, "output_dir": os.path.basename(job.output_dir)}) + "\n")
        log.flush()
        done = time.perf_counter() - t_start
        if args.queue:  # the others' jobs are not this worker's progress
            count, eta = "worker %d's job %d" % (i, ran), ""
        else:
            count, eta = "%d/%d" % (j + 1, len(todo)), " (eta %.0f min)" % (done / (j + 1) * (len(todo) - j - 1) / 60)
        print("fashion protocol: %s %s env %d trial %d draw %d: %.1f s wall, %.1f s CPU%s"
              % (count, ta["algorithm"], ta["test_envs"][0], ta["trial_seed"], ta["hparams_seed"], wall, cpu, eta),
              flush=True)


# ---------------------------------------------------------------- analysis


def mean_se(values):
    """(mean, standard error with the sample std (ddof 1)); SE is nan for one value."""
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, float("nan")
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1) / n)


def paired_stats(a, b):
    """paired_stats compares a[u] - b[u] over units u (both dicts unit -> value, same
    keys): n, mean, SE (ddof 1), paired t-test and Wilcoxon signed-rank p-values
    (two-sided, scipy), wins (a > b), losses (a < b), ties."""
    from scipy import stats

    units = sorted(set(a) & set(b))
    d = [a[u] - b[u] for u in units]
    out = {"n": len(d), "wins": sum(v > 0 for v in d), "losses": sum(v < 0 for v in d),
           "ties": sum(v == 0 for v in d)}
    if len(d) < 2:
        return dict(out, mean=d[0] if d else float("nan"), se=float("nan"), t_p=float("nan"), w_p=float("nan"))
    m, se = mean_se(d)
    t_p = float(stats.ttest_rel([a[u] for u in units], [b[u] for u in units]).pvalue) if se > 0 else float("nan")
    w_p = float(stats.wilcoxon(d).pvalue) if any(v != 0 for v in d) else float("nan")
    return dict(out, mean=m, se=se, t_p=t_p, w_p=w_p)


def _exact(val_acc):
    """val_acc as compared by the selection. It is a mean of accuracies over a few hundred
    images, whose float value depends on the summation order: 823 of 1,000 images can come out
    as 0.8230000000000001 or 0.8229999999999998. Rounded, equal accuracies tie and the rules
    (first checkpoint, lowest draw) decide, not the rounding noise."""
    return round(val_acc, 9)


def _load(output_dir):
    """(runs, chosen): runs[(algorithm, test env, trial, draw)] is a run's own selected
    checkpoint (DomainBed's IIDAccuracySelectionMethod.run_acc: best mean validation
    accuracy of the training envs over checkpoints; test accuracy on the test env's
    in-split), with its hparams; chosen[(algorithm, test env, trial)] is the draw with
    the best validation accuracy (as the method's sweep_acc; ties: the lowest draw)."""
    from domainbed import model_selection

    method = model_selection.IIDAccuracySelectionMethod
    by = collections.defaultdict(list)
    for d in sorted(os.listdir(output_dir)):  # finished jobs only: a running job's records are partial
        if os.path.exists(os.path.join(output_dir, d, "done")):
            with open(os.path.join(output_dir, d, "results.jsonl")) as f:
                for line in f:
                    r = json.loads(line)
                    a = r["args"]
                    if len(a["test_envs"]) == 1:
                        by[(a["algorithm"], a["test_envs"][0], a["trial_seed"], a["hparams_seed"])].append(r)
    runs, chosen = {}, {}
    for key, rs in by.items():
        accs = [method._step_acc(r) for r in rs]  # as run_acc: argmax of val_acc over checkpoints (first max)
        i = max(range(len(rs)), key=lambda j: _exact(accs[j]["val_acc"]))
        runs[key] = dict(test_acc=100 * accs[i]["test_acc"], val_acc=100 * accs[i]["val_acc"], step=rs[i]["step"],
                         hparams=rs[0]["hparams"], hparams_seed=key[3])
    units = collections.defaultdict(list)
    for (alg, env, trial, hs), v in runs.items():
        units[(alg, env, trial)].append(v)
    for k, vs in units.items():
        chosen[k] = max(vs, key=lambda v: (_exact(v["val_acc"]), -v["hparams_seed"]))  # ties: the lowest draw
    return runs, chosen


def _fmt(m, se):
    return "%.1f ± %.1f" % (m, se) if not math.isnan(se) else "%.1f" % m


def _p(v):
    return "n/a" if math.isnan(v) else ("%.3g" % v)


def analyze(args):
    from psda.domainbed import install
    from psda.domainbed.samplers import DISPLAY, display_name

    install()
    runs, chosen = _load(args.output_dir)
    # a (row, test env, trial) counts once all its draws have finished (a partial run's tables)
    draws = collections.Counter(k[:3] for k in runs)
    chosen = {k: v for k, v in chosen.items() if draws[k] == args.n_hparams - args.n_hparams_from}
    rows = [display_name(a, s) for a, s in _rows(args)]
    envs = sorted({e for (_, e, _) in chosen if e in args.test_envs})
    trials = sorted({t for (_, _, t) in chosen})
    complete = [(e, t) for e in envs for t in trials if all((r, e, t) in chosen for r in rows)]
    with open(os.path.join(args.output_dir, "selected.jsonl"), "w") as f:
        for (alg, e, t), v in sorted(chosen.items()):
            f.write(json.dumps(dict(algorithm=alg, test_env=e, trial_seed=t, **v)) + "\n")
    n_jobs = sum(1 for _ in runs)
    out = ["# %s: the protocol's tables (docs/evidence.md)" % args.dataset, "",
           "Generated by `python tools/fashion_protocol.py analyze --output_dir %s` from %d finished jobs; "
           "complete (test env, trial) units, every row and draw present: %d. Accuracy: test env's in-split, %%, after "
           "training-domain validation over draws and checkpoints." % (args.output_dir, n_jobs, len(complete)), ""]

    # 1. accuracy per row: mean ± SE over trials per env, and the per-trial env-average.
    out += ["## Accuracy (mean ± SE over trials; Avg: mean ± SE over trials of the per-trial average over "
            "test envs, complete trials only)", "",
            "| Row | " + " | ".join("%d° (env %d)" % (15 * e, e) for e in envs) + " | Avg | trials in Avg |",
            "|---" * (len(envs) + 3) + "|"]
    need = []
    for r in rows:
        cells = []
        for e in envs:
            v = [chosen[(r, e, t)]["test_acc"] for t in trials if (r, e, t) in chosen]
            cells.append((_fmt(*mean_se(v)) + ("" if len(v) == args.n_trials else " (%d)" % len(v))) if v else "–")
        full = [t for t in trials if all((r, e, t) in chosen for e in envs)]
        avgs = [sum(chosen[(r, e, t)]["test_acc"] for e in envs) / len(envs) for t in full]
        if avgs:
            m, se = mean_se(avgs)
            cells += [_fmt(m, se), str(len(avgs))]
            if len(avgs) > 1 and se > 1:
                sd = se * math.sqrt(len(avgs))
                need.append("%s: SE %.1f over %d trials (sd %.1f): about %d trials for SE 1" %
                            (r, se, len(avgs), sd, math.ceil(sd ** 2)))
        else:
            cells += ["–", "0"]
        out.append("| %s | %s |" % (r, " | ".join(cells)))
    out += [""] + (["Rows whose average has SE > 1 point, and the trials n ≈ (sd / 1)² that would bring it to "
                    "1 point:", ""] + ["- " + s for s in need] if need else
                   ["Every row's average has SE ≤ 1 point." if len(trials) > 1 else "SE needs two trials or more."])
    out.append("")

    # 2. paired differences over (test env, trial) units.
    out += ["## Paired differences after selection (units: (test env, trial), same seeds and draws)", "",
            "| Comparison | units | mean ± SE (points) | paired t p | Wilcoxon p | wins / losses / ties | verdict |",
            "|---|---|---|---|---|---|---|"]
    for a in args.algorithms:
        for s in [s for s in args.samplers if s != "uniform"]:
            x, y = display_name(a, s), display_name(a, "uniform")
            st = paired_stats({(e, t): chosen[(x, e, t)]["test_acc"] for e, t in complete},
                              {(e, t): chosen[(y, e, t)]["test_acc"] for e, t in complete})
            sig = (not math.isnan(st["t_p"])) and st["t_p"] < 0.05 and st["w_p"] < 0.05
            verdict = ("%s better" % DISPLAY[s] if st["mean"] > 0 else "uniform better") if sig else "not established"
            out.append("| %s − %s | %d | %s | %s | %s | %d / %d / %d | %s |"
                       % (x, y, st["n"], _fmt(st["mean"], st["se"]), _p(st["t_p"]), _p(st["w_p"]), st["wins"],
                          st["losses"], st["ties"], verdict))
    out += ["", "Verdict: \"better\" only where both tests give p < 0.05 (two-sided); otherwise \"not established\".", ""]

    # 3. failures against ERM.
    out += ["## Failures: selected runs below ERM's selected run of the same (test env, trial)", "",
            "| Row | units | below ERM | below ERM − 5 points |", "|---|---|---|---|"]
    for r in (rows[1:] if rows and rows[0] == "ERM" else []):
        u = [(e, t) for e, t in complete]
        below = sum(chosen[(r, e, t)]["test_acc"] < chosen[("ERM", e, t)]["test_acc"] for e, t in u)
        far = sum(chosen[(r, e, t)]["test_acc"] < chosen[("ERM", e, t)]["test_acc"] - 5 for e, t in u)
        out.append("| %s | %d | %d | %d |" % (r, len(u), below, far))
    out.append("")

    # 3b. collapsed draws (descriptive; added after launch, having seen runs near chance in the
    # figure of the partial tables): a draw's test accuracy below 20 % (chance is 10 %).
    units3 = {(e, t) for e, t in complete}
    out += ["## Collapsed draws (descriptive, added after launch): every draw's own selected checkpoint "
            "with test accuracy < 20 % (chance: 10 %), in the complete units", "",
            "| Row | draws | collapsed | share |", "|---|---|---|---|"]
    for r in rows:
        v = [x["test_acc"] for k, x in runs.items() if k[0] == r and (k[1], k[2]) in units3]
        if v:
            c = sum(a < 20 for a in v)
            out.append("| %s | %d | %d | %.0f%% |" % (r, len(v), c, 100 * c / len(v)))
    out.append("")

    # 4. time per sampler.
    recs = _records(args.output_dir)
    out += ["## Time per job (s, mean ± SE over jobs; every draw, env and trial)", "",
            "Wall and CPU: the whole job (data, %d steps, evaluation at every checkpoint). Set-up: the sampler's first "
            "feature pass and matching; refresh: the training thread's time in the refreshes (every "
            "psda_refresh_steps steps); shares are of the job's wall time." % args.steps, "",
            "| Row | jobs | wall | CPU | set-up | refreshes | set-up share | refresh share |",
            "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rr = [x for x in recs if x["algorithm"] == r]
        if not rr:
            continue
        w, c = [x["wall_s"] for x in rr], [x["cpu_s"] for x in rr]
        su = [x["setup_s"] or 0.0 for x in rr]
        rf = [sum(x["refresh_s"]) for x in rr]
        has = any(x["setup_s"] is not None for x in rr)
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            r, len(rr), _fmt(*mean_se(w)), _fmt(*mean_se(c)),
            _fmt(*mean_se(su)) if has else "–", _fmt(*mean_se(rf)) if has else "–",
            "%.1f%%" % (100 * sum(su) / sum(w)) if has else "–", "%.1f%%" % (100 * sum(rf) / sum(w)) if has else "–"))
    out.append("")
    if args.background:
        out += background_table(args.background)
    text = "\n".join(out) + "\n"
    with open(os.path.join(args.output_dir, "tables.md"), "w") as f:
        f.write(text)
    print(text, flush=True)
    figure(args, runs, chosen, rows, envs)


def _records(d):
    import glob

    recs = []
    for p in sorted(glob.glob(os.path.join(d, "records-shard*.jsonl"))):
        # Only whole lines: another worker may be appending its line right now (--queue).
        recs += [json.loads(line) for line in open(p) if line.endswith("\n") and line.strip()]
    return recs


def background_table(dirs):
    """Rows of the time table for the background-refresh run: ``dirs`` = (off, on), the
    same jobs (UDA_MMD + Double-paired) with psda_background False and True. Jobs are
    matched by (test env, trial, draw); the refresh column is the training thread's stall."""
    off, on = ({(r["test_env"], r["trial_seed"], r["hparams_seed"]): r for r in _records(d)} for d in dirs)
    keys = sorted(set(off) & set(on))
    lines = ["## Background refresh (UDA_MMD + Double-paired; the same jobs with psda_background off and on)", "",
             "Jobs matched by (test env, trial, draw): %d. Refresh: the seconds the training thread waited in "
             "refreshes (with background on, the matching runs in a thread and is installed at the next epoch "
             "boundary)." % len(keys), "",
             "| psda_background | jobs | wall | CPU | set-up | refresh stall | refresh share |", "|---|---|---|---|---|---|---|"]
    for name, recs in (("False", off), ("True", on)):
        rr = [recs[k] for k in keys]
        if not rr:
            continue
        w, c = [x["wall_s"] for x in rr], [x["cpu_s"] for x in rr]
        su, rf = [x["setup_s"] or 0.0 for x in rr], [sum(x["refresh_s"]) for x in rr]
        lines.append("| %s | %d | %s | %s | %s | %s | %.1f%% |" % (
            name, len(rr), _fmt(*mean_se(w)), _fmt(*mean_se(c)), _fmt(*mean_se(su)), _fmt(*mean_se(rf)),
            100 * sum(rf) / sum(w)))
    if len(keys) > 1:
        st = paired_stats({k: on[k]["wall_s"] for k in keys}, {k: off[k]["wall_s"] for k in keys})
        lines += ["", "Wall on − off per job: %s s (paired t p %s, Wilcoxon p %s)." % (
            _fmt(st["mean"], st["se"]), _p(st["t_p"]), _p(st["w_p"]))]
    return lines + [""]


def figure(args, runs, chosen, rows, envs):
    """A strip plot per row: every selected run's test accuracy (left, one point per
    (test env, trial)) and every draw's (right), so bimodality shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(rows) + 1.6), sharey=True)
    rng = np.random.default_rng(0)  # jitter only
    cmap = plt.get_cmap("viridis")
    for ax, source, title in ((axes[0], chosen, "selected run per (test env, trial)"),
                              (axes[1], runs, "every draw (each run's own selected checkpoint)")):
        for i, r in enumerate(rows):
            for e in envs:
                v = [x["test_acc"] for k, x in source.items() if k[0] == r and k[1] == e]
                if v:
                    ax.scatter(v, i + rng.uniform(-0.25, 0.25, len(v)), s=12, alpha=0.75,
                               color=cmap(envs.index(e) / max(1, len(envs) - 1)),
                               label="%d°" % (15 * e) if i == 0 else None)
            ms = [x["test_acc"] for k, x in source.items() if k[0] == r]
            if ms:
                ax.plot([np.median(ms)] * 2, [i - 0.35, i + 0.35], color="k", lw=1.5)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("test accuracy (%)")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(rows)))
    axes[0].set_yticklabels(rows)
    axes[0].invert_yaxis()
    axes[0].legend(title="test env", fontsize=8, loc="lower left")
    fig.suptitle("%s, domain adaptation (black bar: median)" % args.dataset, fontsize=11)
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(os.path.join(args.output_dir, "accuracy_strip." + ext), dpi=150)
    plt.close(fig)


def compare(args):
    """compare: the selected runs of --output_dir (A) against those of --against (B), unit by
    unit ((algorithm, test env, trial) present in both): per-env and average mean ± SE of each,
    and the paired difference A − B with paired_stats; printed and written to
    compare.md in --output_dir. For two runs of the same jobs under one changed fixed hparam
    (e.g. psda_imbalance), so that the units pair up."""
    _, a = _load(args.output_dir)
    _, b = _load(args.against)
    units = sorted(set(a) & set(b))
    if not units:
        raise SystemExit("compare: no (algorithm, test env, trial) unit finished in both %s and %s"
                         % (args.output_dir, args.against))
    lines = ["| run | " + " | ".join("env %d" % e for e in sorted({u[1] for u in units})) + " | Avg (units) |",
             "|---|" + "---|" * (len({u[1] for u in units}) + 1)]
    for name, sel in ((args.output_dir, a), (args.against, b)):
        cells = [_fmt(*mean_se([sel[u]["test_acc"] for u in units if u[1] == e])) for e in sorted({u[1] for u in units})]
        lines.append("| %s | %s | %s |" % (name, " | ".join(cells), _fmt(*mean_se([sel[u]["test_acc"] for u in units]))))
    st = paired_stats({u: a[u]["test_acc"] for u in units}, {u: b[u]["test_acc"] for u in units})
    lines += ["", "A − B over %d units: %s points, paired t p %s, Wilcoxon p %s, wins / losses / ties %d / %d / %d"
              % (st["n"], _fmt(st["mean"], st["se"]), _p(st["t_p"]), _p(st["w_p"]), st["wins"], st["losses"], st["ties"])]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(args.output_dir, "compare.md"), "w") as f:
        f.write(text)


def parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["run", "analyze", "list", "compare"])
    p.add_argument("--output_dir", required=True)
    p.add_argument("--dataset", default="RotatedFashionMNISTFlat")
    p.add_argument("--data_dir", default="", help="DomainBed's --data_dir: a directory holding Fashion-MNIST's IDX "
                                                  "files (default: Debian's /usr/share/datasets/fashion-mnist)")
    p.add_argument("--shard", default="0/1", help="i/N: run jobs i, i + N, ... of the ordered list")
    p.add_argument("--n_hparams_from", type=int, default=1, help="first draw (0 = DomainBed's defaults)")
    p.add_argument("--n_hparams", type=int, default=4, help="draws n_hparams_from .. n_hparams - 1")
    p.add_argument("--n_trials", type=int, default=5)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--checkpoint_freq", type=int, default=100)
    p.add_argument("--test_envs", type=int, nargs="+", default=[0, 3, 5])
    p.add_argument("--uda_holdout_fraction", type=float, default=0.2)
    p.add_argument("--fixed", type=json.loads, default=dict(FIXED),
                   help="JSON hparams fixed for every job (default %s)" % json.dumps(FIXED))
    p.add_argument("--baselines", nargs="*", default=BASELINES)
    p.add_argument("--algorithms", nargs="*", default=ALGORITHMS)
    p.add_argument("--samplers", nargs="+", default=SAMPLERS)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--queue", default=None, metavar="TOKEN",
                   help="run: take jobs from the whole ordered list, claiming each under claims-TOKEN/ (processes "
                        "started together with one TOKEN share the list); --shard's i then names the records file")
    p.add_argument("--deadline", type=float, default=None, metavar="UNIX_SECONDS",
                   help="run: start no job that would end after this time (estimate: 1.25 x the longest job "
                        "recorded in --output_dir)")
    p.add_argument("--background", nargs=2, metavar=("OFF_DIR", "ON_DIR"), default=None,
                   help="analyze: add the background-refresh time table from these two run directories")
    p.add_argument("--against", default=None, help="compare: the run directory B to pair --output_dir (A) with")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    os.makedirs(args.output_dir, exist_ok=True)
    if args.command == "run":
        run(args)
    elif args.command == "compare":
        if not args.against:
            raise SystemExit("compare needs --against DIR (the run to pair --output_dir with)")
        compare(args)
    elif args.command == "list":
        for j in list_jobs(args):
            ta = j.train_args
            print(ta["trial_seed"], ta["test_envs"][0], ta["hparams_seed"], ta["algorithm"], ta["seed"])
    else:
        analyze(args)


if __name__ == "__main__":
    main()
