"""The paper's DomainBed tables in miniature, on RotatedDigits (offline, CPU), in one process.

Three parts, each skippable, all writing under --output_dir:

1. ``sweep``: the jobs ``python -m psda.domainbed.sweep launch`` would list (its
   ``make_jobs``: DomainBed's ``make_args_list`` and ``Job``, expanded per sampler) for
   ERM and DANN (DomainBed's loaders) and for UDA_MMD and UDA_CORAL with every sampler
   psda offers; domain adaptation, each test env of --test_envs held out in turn, UDA
   split 0.2. Every job runs in this process, one after the other, through
   ``psda.domainbed.__main__.main`` (DomainBed's unmodified train.py, run with runpy), so
   torch and DomainBed are imported once; each job writes the same directory (named by
   DomainBed's Job hash), out.txt, results.jsonl and ``done`` as a launched job does, and a
   rerun skips the jobs that are done. Jobs run test env by test env, trial by trial,
   so a stopped run leaves whole columns. Each job's wall-clock time goes to jobs.jsonl.
2. ``tables``: the accuracy table (training-domain validation, DomainBed's
   ``model_selection.IIDAccuracySelectionMethod`` over its ``reporting`` records; mean
   +/- standard error over trials as DomainBed's collect_results computes them, per test
   env and the average over the test envs run) and the wall-clock table per sampler
   (training time of a job: the sum of its steps' times, sampler construction and
   refreshes included, evaluation excluded; mean +/- s.e. over the jobs of UDA_MMD and
   of UDA_CORAL), saved as tables.md; ``python -m psda.domainbed.collect_results`` is
   run as well (results.txt).
3. ``gradients``: one UDA_MMD trajectory (uniform sampler, test env 0, trial 0, the
   sweep's hparams) and, at steps 0, S/2 and S, for every sampler built from the
   features of the model at that step (as a refresh builds it), the relative error of
   minibatch gradients against the full-data gradient (all source and UDA-split rows), for
   the discrepancy (MMD^2) alone and for the whole objective (task loss + trade-off x
   MMD^2), averaged over --grad_batches batches: ``mean ||g_batch - g_full||^2 /
   ||g_full||^2``. Every sampler is measured at the same parameters. Written to
   gradient_errors.jsonl and printed.

The miniature run of docs/domainbed.md (about an hour of a shared 2-core machine)::

    PYTHONPATH=python:/path/to/DomainBed nohup nice -n 10 python tools/domainbed_tables.py \\
        --output_dir domainbed_tables > domainbed_tables.log 2>&1 &

The paper's protocol (5 draws x 3 trials x 1,000 steps, every test env, DomainBed's
batch size; hours on a free many-core machine)::

    PYTHONPATH=python:/path/to/DomainBed python tools/domainbed_tables.py \\
        --output_dir domainbed_full --n_hparams 5 --n_trials 3 --steps 1000 \\
        --test_envs 0 1 2 3 4 5 --hparams '{}' --checkpoint_freq 100 --threads 0

A check that everything runs (a minute or two)::

    PYTHONPATH=python:/path/to/DomainBed python tools/domainbed_tables.py \\
        --output_dir /tmp/tables --tiny
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import shutil
import sys
import time


def available_samplers():
    from psda.domainbed.samplers import SAMPLERS

    return list(SAMPLERS)


def list_jobs(args):
    """The jobs of ``python -m psda.domainbed.sweep launch`` for the baselines (their own
    loaders) and for the algorithms with every sampler, in run order."""
    from psda.domainbed import install
    from psda.domainbed.samplers import SAMPLERS, parse_algorithm
    from psda.domainbed.sweep import _parser, make_jobs

    install()
    common = ["launch", "--datasets", args.dataset, "--task", "domain_adaptation", "--uda_holdout_fraction",
              str(args.uda_holdout_fraction), "--single_test_envs", "--n_hparams", str(args.n_hparams),
              "--n_trials", str(args.n_trials), "--steps", str(args.steps), "--output_dir", args.output_dir,
              "--command_launcher", "local", "--skip_confirmation", "--test_envs", *map(str, args.test_envs)]
    if args.hparams:
        common += ["--hparams", args.hparams]
    jobs = make_jobs(_parser().parse_args(common + ["--algorithms", *args.baselines]))
    jobs += make_jobs(_parser().parse_args(common + ["--algorithms", *args.algorithms,
                                                     "--samplers", *args.samplers]))
    algorithms = args.baselines + args.algorithms

    def key(job):
        ta = job.train_args
        base, sampler = parse_algorithm(ta["algorithm"])
        return (ta["test_envs"], ta["trial_seed"], ta["hparams_seed"], algorithms.index(base),
                SAMPLERS.index(sampler))

    return sorted(jobs, key=key)


def job_argv(train_args, extra):
    """train.py's arguments for a Job's train_args, as DomainBed's Job writes its command."""
    argv = []
    for k, v in sorted(train_args.items()):
        if isinstance(v, (list, tuple)):
            argv += ["--" + k, *map(str, v)]
        else:
            argv += ["--" + k, str(v)]
    return argv + extra


def run_sweep(args):
    from domainbed.scripts import sweep as db_sweep

    from psda.domainbed.__main__ import main as train_main

    jobs = list_jobs(args)
    Job = db_sweep.Job
    todo = [j for j in jobs if j.state != Job.DONE]
    if args.reverse:
        todo.reverse()
    # Directories present now are incomplete runs to start again; one that appears later
    # belongs to another process running the same list (e.g. with --reverse): skip it.
    stale = {j.output_dir for j in todo if os.path.exists(j.output_dir)}
    print("psda tables: %d jobs, %d done, %d to run" % (len(jobs), len(jobs) - len(todo), len(todo)), flush=True)
    extra = ["--checkpoint_freq", str(args.checkpoint_freq or args.steps), "--skip_model_save"]
    log = open(os.path.join(args.output_dir, "jobs.jsonl"), "a")
    t_start = time.perf_counter()
    for i, job in enumerate(todo):
        if os.path.exists(os.path.join(job.output_dir, "done")) or \
                (os.path.exists(job.output_dir) and job.output_dir not in stale):  # another process has it
            continue
        if os.path.exists(job.output_dir):  # incomplete: start it again, as delete_incomplete does
            shutil.rmtree(job.output_dir)
        t0 = time.perf_counter()
        train_main(job_argv(job.train_args, extra))
        secs = time.perf_counter() - t0
        ta = job.train_args
        log.write(json.dumps({"algorithm": ta["algorithm"], "test_envs": ta["test_envs"],
                              "trial_seed": ta["trial_seed"], "hparams_seed": ta["hparams_seed"],
                              "seconds": secs, "output_dir": job.output_dir}) + "\n")
        log.flush()
        done = time.perf_counter() - t_start
        print("psda tables: job %d/%d %s test env %s trial %d: %.1f s (eta %.0f min)"
              % (i + 1, len(todo), ta["algorithm"], ta["test_envs"], ta["trial_seed"], secs,
                 done / (i + 1) * (len(todo) - i - 1) / 60), flush=True)


def mean_se(values):
    """Mean and standard error as DomainBed's collect_results.format_mean: std / sqrt(n)
    with the population std (ddof 0)."""
    n = len(values)
    m = sum(values) / n
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / n) / math.sqrt(n)


def job_train_seconds(path):
    """Sum over checkpoint intervals of the mean step time x steps in the interval."""
    rows = [json.loads(line) for line in open(path)]
    total, prev = 0.0, -1
    for r in rows:
        total += r["step_time"] * (r["step"] - prev)
        prev = r["step"]
    return total, rows[-1]["args"]["algorithm"]


def accuracy_table(args):
    from domainbed import model_selection
    from domainbed.lib import reporting

    from psda.domainbed.collect_results import order_algorithms

    records = reporting.load_records(args.output_dir)
    groups = reporting.get_grouped_records(records)
    method = model_selection.IIDAccuracySelectionMethod
    accs = collections.defaultdict(list)  # (algorithm, test env) -> accuracy per trial
    for g in groups:
        if g["test_env"] not in args.test_envs:
            continue
        acc = method.sweep_acc(g["records"])
        if acc is not None:
            accs[(g["algorithm"], g["test_env"])].append(100 * acc)
    names = order_algorithms([a for a, _ in accs], args.baselines + args.algorithms)
    envs = sorted({e for _, e in accs})
    lines = ["| Algorithm | " + " | ".join("%d° (env %d)" % (15 * e, e) for e in envs) + " | Avg |",
             "|---" * (len(envs) + 2) + "|"]
    for name in names:
        cells, means = [], []
        for e in envs:
            v = accs.get((name, e))
            if v:
                m, se = mean_se(v)
                means.append(m)
                cells.append("%.1f ± %.1f" % (m, se) + ("" if len(v) == args.n_trials else " (%d)" % len(v)))
            else:
                cells.append("X")
        avg = "%.1f" % (sum(means) / len(means)) if len(means) == len(envs) else "X"
        lines.append("| %s | %s | %s |" % (name, " | ".join(cells), avg))
    return "\n".join(lines)


def time_table(args):
    from psda.domainbed.samplers import DISPLAY, parse_algorithm

    times = collections.defaultdict(list)  # (algorithm, sampler) -> training seconds per job
    for d in sorted(os.listdir(args.output_dir)):
        p = os.path.join(args.output_dir, d, "results.jsonl")
        if os.path.exists(os.path.join(args.output_dir, d, "done")):
            secs, name = job_train_seconds(p)
            if json.loads(open(p).readline())["args"]["test_envs"][0] not in args.test_envs:
                continue
            times[parse_algorithm(name)].append(secs)
    algs = [a for a in args.baselines + args.algorithms if any(b == a for b, _ in times)]
    lines = ["| Sampler | " + " | ".join(algs) + " |", "|---" * (len(algs) + 1) + "|"]
    for sampler in DISPLAY:
        if any(s == sampler for _, s in times):
            cells = []
            for a in algs:
                v = times.get((a, sampler))
                cells.append("%.1f ± %.1f (%d)" % (*mean_se(v), len(v)) if v else "")
            lines.append("| %s | %s |" % (DISPLAY[sampler], " | ".join(cells)))
    return "\n".join(lines)


def tables(args):
    import contextlib
    import io

    from psda.domainbed import install
    from psda.domainbed.collect_results import main as collect_main

    install()
    buf = io.StringIO()
    saved = sys.stdout
    try:
        with contextlib.redirect_stdout(buf):
            collect_main(["--input_dir", args.output_dir])  # DomainBed's script: writes results.txt
    finally:
        if sys.stdout is not saved and hasattr(getattr(sys.stdout, "file", None), "close"):
            sys.stdout.file.close()  # its Tee
        sys.stdout = saved
    text = ("## Accuracy (" + args.dataset + ", domain adaptation, training-domain validation, %, mean ± s.e. over "
            "trials)\n\n" + accuracy_table(args) + "\n\n"
            "## Training time per job (s, mean ± s.e. (jobs); steps incl. sampler construction and refreshes, "
            "evaluation excluded)\n\n" + time_table(args) + "\n")
    with open(os.path.join(args.output_dir, "tables.md"), "w") as f:
        f.write(text)
    print(text, flush=True)


def gradient_errors(args):
    """UDA_MMD trained with the uniform sampler; at checkpoints, every sampler's minibatch
    gradient error against the full-data gradient, at the same parameters."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from psda.domainbed import UDA_MMD, install
    from psda.domainbed.algorithms import rbf_mmd
    from psda.domainbed import PSDA_DATASETS
    from psda.domainbed.samplers import batch_limit, make_batch_sampler

    install()
    from domainbed import hparams_registry
    from domainbed.lib import misc

    test_env, trial = 0, 0
    hp = hparams_registry.default_hparams("UDA_MMD", args.dataset)
    hp.update(json.loads(args.hparams or "{}"))
    dataset = PSDA_DATASETS[args.dataset]()
    train, uda = [], []
    for i, env in enumerate(dataset):  # DomainBed's train.py splits
        out, in_ = misc.split_dataset(env, int(len(env) * 0.2), misc.seed_hash(trial, i))
        if i == test_env:
            u, in_ = misc.split_dataset(in_, int(len(in_) * args.uda_holdout_fraction), misc.seed_hash(trial, i))
            uda.append(u)
        else:
            train.append(in_)
    xs_all = torch.stack([d[j][0] for d in train for j in range(len(d))])
    ys_all = torch.tensor([int(d[j][1]) for d in train for j in range(len(d))])
    xt_all = torch.stack([d[j][0] for d in uda for j in range(len(d))])
    n_s, n_t = len(xs_all), len(xt_all)
    steps = args.grad_steps if args.grad_steps is not None else args.steps
    checkpoints = sorted({0, steps // 2, steps})
    log = open(os.path.join(args.output_dir, "gradient_errors.jsonl"), "a")

    torch.manual_seed(0)
    alg = UDA_MMD(dataset.input_shape, dataset.num_classes, len(train), hp)
    feat = list(alg.featurizer.parameters())
    cls = list(alg.classifier.parameters())
    chunk = 256

    def grads(xs, ys, xt):
        """(discrepancy gradient, whole gradient) over all parameters, flattened. The
        featurizer's part is accumulated chunk by chunk through the features' gradient
        (exact: the losses are functions of the features)."""
        x = torch.cat([xs, xt])
        with torch.no_grad():
            z = torch.cat([alg.featurizer(x[i:i + chunk]) for i in range(0, len(x), chunk)])
        z.requires_grad_(True)
        zs, zt = z[: len(xs)], z[len(xs):]
        task = F.cross_entropy(alg.classifier(zs), ys)
        disc = rbf_mmd(zs, zt, alg.gammas)
        gz_task, *gc_task = torch.autograd.grad(task, [z, *cls])
        (gz_disc,) = torch.autograd.grad(disc, [z])
        gf_task = [torch.zeros_like(p) for p in feat]
        gf_disc = [torch.zeros_like(p) for p in feat]
        for i in range(0, len(x), chunk):
            zc = alg.featurizer(x[i:i + chunk])
            a = torch.autograd.grad(zc, feat, grad_outputs=gz_task[i:i + chunk], retain_graph=True)
            b = torch.autograd.grad(zc, feat, grad_outputs=gz_disc[i:i + chunk])
            gf_task = [u + v for u, v in zip(gf_task, a)]
            gf_disc = [u + v for u, v in zip(gf_disc, b)]
        flat = lambda gs: torch.cat([g.reshape(-1) for g in gs])  # noqa: E731
        g_disc = torch.cat([flat(gf_disc), torch.zeros(sum(p.numel() for p in cls))])  # MMD: not the classifier
        g_task = torch.cat([flat(gf_task), flat(gc_task)])
        return g_disc, g_task + hp["mmd_gamma"] * g_disc, z.detach()

    want = hp["batch_size"] * len(train)
    rows = []
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for step in range(steps + 1):
        if step in checkpoints:
            full_d, full_w, z = grads(xs_all, ys_all, xt_all)
            zs, zt = z[:n_s].numpy(), z[n_s:].numpy()
            for sampler in args.samplers:
                k = min(want, batch_limit(sampler, n_s, n_t))
                k -= k % 2 if sampler == "double-paired" else 0
                bs = make_batch_sampler(sampler, zs, zt, k, seed=step, discrepancy="mmd", gammas=alg.gammas)
                errs_d, errs_w, it = [], [], iter(bs)
                while len(errs_d) < args.grad_batches:
                    try:
                        idx = np.asarray(next(it))
                    except StopIteration:
                        it = iter(bs)
                        continue
                    s, t = idx[:k], idx[k:] - n_s
                    bd, bw, _ = grads(xs_all[s], ys_all[s], xt_all[t])
                    errs_d.append(float((bd - full_d).pow(2).sum() / full_d.pow(2).sum()))
                    errs_w.append(float((bw - full_w).pow(2).sum() / full_w.pow(2).sum()))
                row = {"sampler": sampler, "step": step, "k": k, "batches": len(errs_d),
                       "disc_grad_rel_err": float(np.mean(errs_d)), "whole_grad_rel_err": float(np.mean(errs_w)),
                       "disc_grad_rel_err_se": float(np.std(errs_d) / np.sqrt(len(errs_d))),
                       "whole_grad_rel_err_se": float(np.std(errs_w) / np.sqrt(len(errs_w))),
                       "seconds": time.perf_counter() - t0}
                rows.append(row)
                log.write(json.dumps(row) + "\n")
                log.flush()
                print("psda tables: gradients step %d %s: disc %.4f whole %.4f"
                      % (step, sampler, row["disc_grad_rel_err"], row["whole_grad_rel_err"]), flush=True)
        if step == steps:
            break
        s = rng.integers(n_s, size=want)  # the trajectory: uniform k + k batches, as UDA_MMD's default
        t = rng.integers(n_t, size=want)
        alg.update([(xs_all[s], ys_all[s])], [xt_all[t]])
    lines = ["| Sampler | " + " | ".join("step %d: MMD² grad | whole grad" % c for c in checkpoints) + " |",
             "|---" * (2 * len(checkpoints) + 1) + "|"]
    for sampler in args.samplers:
        cells = []
        for c in checkpoints:
            r = next(r for r in rows if r["sampler"] == sampler and r["step"] == c)
            cells += ["%.3f ± %.3f" % (r["disc_grad_rel_err"], r["disc_grad_rel_err_se"]),
                      "%.3f ± %.3f" % (r["whole_grad_rel_err"], r["whole_grad_rel_err_se"])]
        lines.append("| %s | %s |" % (sampler, " | ".join(cells)))
    text = ("## Relative gradient error against the full-data gradient (UDA_MMD, %s, test env 0, "
            "k = %d; mean ± s.e. over %d batches)\n\n" % (args.dataset, want, args.grad_batches) + "\n".join(lines) + "\n")
    with open(os.path.join(args.output_dir, "gradients.md"), "w") as f:
        f.write(text)
    print(text, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output_dir", required=True)
    p.add_argument("--dataset", default="RotatedDigitsFlat", choices=["RotatedDigitsFlat", "RotatedDigits"],
                   help="RotatedDigitsFlat: DomainBed's MLP; RotatedDigits: its MNIST CNN (about 200x the compute)")
    p.add_argument("--n_hparams", type=int, default=1, help="hparam draws (1: DomainBed's defaults only)")
    p.add_argument("--n_trials", type=int, default=2)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--checkpoint_freq", type=int, default=None, help="default: --steps (evaluate at 0 and last)")
    p.add_argument("--test_envs", type=int, nargs="+", default=[0, 5], help="held out in turn")
    p.add_argument("--uda_holdout_fraction", type=float, default=0.2)
    p.add_argument("--hparams", default=json.dumps({"batch_size": 8}),
                   help="JSON hparams for every job ('{}' for the registry's)")
    p.add_argument("--algorithms", nargs="+", default=["UDA_MMD", "UDA_CORAL"])
    p.add_argument("--baselines", nargs="+", default=["ERM", "DANN"])
    p.add_argument("--samplers", nargs="+", default=None, help="default: every sampler psda offers")
    p.add_argument("--grad_steps", type=int, default=None, help="default: --steps")
    p.add_argument("--grad_batches", type=int, default=10)
    p.add_argument("--reverse", action="store_true",
                   help="run the jobs last first (a second process on the same list meets the first halfway)")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (0: torch's default)")
    p.add_argument("--parts", nargs="+", default=["sweep", "tables", "gradients"],
                   choices=["sweep", "tables", "gradients"])
    p.add_argument("--tiny", action="store_true",
                   help="check the pipeline: 1 trial, test env 0, 3 steps, batch_size 2, UDA_MMD with "
                        "uniform and double-paired, gradients at steps 0/1/3 over 2 batches")
    args = p.parse_args()
    if args.samplers is None:
        args.samplers = available_samplers()
    if args.tiny:
        args.n_hparams, args.n_trials, args.steps, args.test_envs = 1, 1, 3, [0]
        args.hparams = json.dumps({"batch_size": 2})
        args.algorithms, args.samplers, args.baselines = ["UDA_MMD"], ["uniform", "double-paired"], ["ERM"]
        args.grad_batches = 2
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    os.makedirs(args.output_dir, exist_ok=True)
    print("psda tables: %s" % json.dumps(vars(args)), flush=True)
    if "sweep" in args.parts:
        run_sweep(args)
    if "tables" in args.parts:
        tables(args)
    if "gradients" in args.parts:
        gradient_errors(args)


if __name__ == "__main__":
    main()
