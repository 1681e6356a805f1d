"""The paper's DomainBed tables in miniature, on RotatedDigits (offline, CPU).

Three parts, each skippable, all writing under --output_dir:

1. ``sweep``: ``python -m psda.domainbed.sweep launch`` for ERM and DANN (DomainBed's
   loaders) and for UDA_MMD and UDA_CORAL with every sampler this psda offers, domain
   adaptation, each test env held out in turn, UDA split 0.2.
2. ``tables``: the accuracy table (``python -m psda.domainbed.collect_results``; the
   paper's tables use training-domain validation, mean +/- standard error over
   trials) and the wall-clock table per sampler (training time of a job: the sum of
   its steps' times, sampler construction and refreshes included, evaluation
   excluded; mean +/- standard error over jobs of UDA_MMD and UDA_CORAL, as the
   paper's training-time table), both printed as Markdown and saved.
3. ``gradients``: per sampler, UDA_MMD trained on RotatedDigits (test env 0, default
   hparams) and, at a few checkpoints, the relative error of minibatch gradients
   against the full-data gradient, for the discrepancy term alone and for the whole
   objective (task loss + trade-off x discrepancy), averaged over ``--grad_batches``
   batches of that sampler: ``E ||g_batch - g_full||^2 / ||g_full||^2``. Written to
   gradient_errors.jsonl and printed.

The paper's protocol in miniature (about an hour on a free 8-core machine; far more
on a shared 2-core one)::

    PYTHONPATH=python:/path/to/DomainBed python tools/domainbed_tables.py \\
        --output_dir domainbed_tables --n_hparams 5 --n_trials 3 --steps 1000

A check that everything runs (minutes)::

    PYTHONPATH=python:/path/to/DomainBed python tools/domainbed_tables.py \\
        --output_dir /tmp/tables --tiny
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import subprocess
import sys
import time


def available_samplers():
    import psda

    from psda.domainbed.samplers import SAMPLERS

    if hasattr(psda, "batch_sampler"):
        return list(getattr(psda, "SAMPLERS", SAMPLERS))
    return ["uniform", "paired", "double-paired"]


def run_sweep(args):
    base = [sys.executable, "-m", "psda.domainbed.sweep", "launch", "--datasets", "RotatedDigits",
            "--task", "domain_adaptation", "--uda_holdout_fraction", "0.2", "--single_test_envs",
            "--n_hparams", str(args.n_hparams), "--n_trials", str(args.n_trials), "--steps", str(args.steps),
            "--output_dir", args.output_dir, "--command_launcher", "local", "--skip_confirmation"]
    if args.test_envs:
        base += ["--test_envs", *map(str, args.test_envs)]
    if args.hparams:
        base += ["--hparams", args.hparams]
    subprocess.run(base + ["--algorithms", *args.baselines], check=True)
    subprocess.run(base + ["--algorithms", *args.algorithms, "--samplers", *args.samplers], check=True)


def mean_se(values):
    n = len(values)
    m = sum(values) / n
    se = math.sqrt(sum((v - m) ** 2 for v in values) / n) / math.sqrt(n) if n > 1 else 0.0
    return m, se


def job_train_seconds(path):
    """Sum over checkpoint intervals of the mean step time x steps in the interval."""
    rows = [json.loads(line) for line in open(path)]
    total, prev = 0.0, -1
    for r in rows:
        total += r["step_time"] * (r["step"] - prev)
        prev = r["step"]
    return total, rows[-1]["args"]["algorithm"]


def tables(args):
    from psda.domainbed.samplers import DISPLAY, parse_algorithm

    out = subprocess.run([sys.executable, "-m", "psda.domainbed.collect_results", "--input_dir", args.output_dir],
                         check=True, capture_output=True, text=True).stdout
    sel = out.split("-------- Dataset: RotatedDigits, model selection method: training-domain validation set")
    accuracy = sel[1].split("--------")[0].strip() if len(sel) > 1 else "(no results)"
    times = collections.defaultdict(list)
    for d in sorted(os.listdir(args.output_dir)):
        p = os.path.join(args.output_dir, d, "results.jsonl")
        if os.path.exists(os.path.join(args.output_dir, d, "done")):
            secs, name = job_train_seconds(p)
            base, sampler = parse_algorithm(name)
            if base in ("UDA_MMD", "UDA_CORAL"):
                times[sampler].append(secs)
    lines = ["| Sampler | training time (s), mean +/- s.e. | jobs |", "|---|---|---|"]
    for sampler in DISPLAY:
        if times.get(sampler):
            m, se = mean_se(times[sampler])
            lines.append("| %s | %.1f +/- %.1f | %d |" % (DISPLAY[sampler], m, se, len(times[sampler])))
    wall = "\n".join(lines)
    text = ("## Accuracy (RotatedDigits, training-domain validation, %)\n\n```\n" + accuracy + "\n```\n\n"
            "## Wall-clock training time per sampler (UDA_MMD and UDA_CORAL jobs)\n\n" + wall + "\n")
    with open(os.path.join(args.output_dir, "tables.md"), "w") as f:
        f.write(text)
    print(text)


def gradient_errors(args):
    """Train UDA_MMD with each sampler and log minibatch gradient errors at checkpoints."""
    import numpy as np
    import torch

    from psda.domainbed import UDA_MMD, install
    from psda.domainbed.algorithms import rbf_mmd
    from psda.domainbed.loaders import DomainBedPSDA, activate

    install()
    from domainbed import hparams_registry
    from domainbed.lib import misc

    from psda.domainbed.datasets import RotatedDigits

    test_env, uda_fraction = 0, 0.2
    hp = hparams_registry.default_hparams("UDA_MMD", "RotatedDigits")
    hp.update(json.loads(args.hparams or "{}"))
    dataset = RotatedDigits()
    train, uda = [], []
    for i, env in enumerate(dataset):  # DomainBed's train.py splits, trial_seed 0
        out, in_ = misc.split_dataset(env, int(len(env) * 0.2), misc.seed_hash(0, i))
        if i == test_env:
            u, in_ = misc.split_dataset(in_, int(len(in_) * uda_fraction), misc.seed_hash(0, i))
            uda.append(u)
        else:
            train.append(in_)
    xs_all = torch.stack([d[j][0] for d in train for j in range(len(d))])
    ys_all = torch.tensor([int(d[j][1]) for d in train for j in range(len(d))])
    xt_all = torch.stack([d[j][0] for d in uda for j in range(len(d))])
    checkpoints = sorted({0, args.grad_steps // 2, args.grad_steps})
    log = open(os.path.join(args.output_dir, "gradient_errors.jsonl"), "a")

    def grads(alg, xs, ys, xt):
        params = [p for p in alg.network.parameters()]
        z = alg.featurizer(torch.cat([xs, xt]))
        zs, zt = z[: len(xs)], z[len(xs):]
        task = torch.nn.functional.cross_entropy(alg.classifier(zs), ys)
        disc = rbf_mmd(zs, zt, alg.gammas)
        g_disc = torch.autograd.grad(disc, params, retain_graph=True, allow_unused=True)  # not the classifier
        g_task = torch.autograd.grad(task, params)
        flat = lambda gs: torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1)  # noqa: E731
                                     for g, p in zip(gs, params)])
        gd, gt = flat(g_disc), flat(g_task)
        return gd, gt + hp["mmd_gamma"] * gd

    rows = []
    for sampler in args.samplers:
        torch.manual_seed(0)
        coord = DomainBedPSDA(len(train), sampler, seed=0, log=lambda m: None)
        activate(coord)
        alg = UDA_MMD(dataset.input_shape, dataset.num_classes, len(train), hp)
        activate(None)
        loaders = [coord.loader(d, None, hp["batch_size"], 0) for d in train + uda]
        its = [iter(x) for x in loaders]
        t0 = time.perf_counter()
        for step in range(args.grad_steps + 1):
            if step in checkpoints:
                alg.eval()  # MNIST_CNN has GroupNorm and no dropout: eval changes nothing but the flag
                full_d, full_w = grads(alg, xs_all, ys_all, xt_all)
                errs_d, errs_w = [], []
                for _ in range(args.grad_batches):
                    parts = [next(it) for it in its]
                    xs = torch.cat([x for x, _ in parts[: len(train)]])
                    ys = torch.cat([y for _, y in parts[: len(train)]])
                    xt = torch.cat([x for x, _ in parts[len(train):]])
                    bd, bw = grads(alg, xs, ys, xt)
                    errs_d.append(float((bd - full_d).pow(2).sum() / full_d.pow(2).sum()))
                    errs_w.append(float((bw - full_w).pow(2).sum() / full_w.pow(2).sum()))
                alg.train()
                row = {"sampler": sampler, "step": step, "k": coord.k,
                       "disc_grad_rel_err": float(np.mean(errs_d)), "whole_grad_rel_err": float(np.mean(errs_w)),
                       "seconds": time.perf_counter() - t0}
                rows.append(row)
                log.write(json.dumps(row) + "\n")
                log.flush()
            if step == args.grad_steps:
                break
            parts = [next(it) for it in its]
            alg.update(parts[: len(train)], [x for x, _ in parts[len(train):]])
    print("## Relative gradient error against the full-data gradient (UDA_MMD, RotatedDigits, test env 0)\n")
    print("| Sampler | step | k | discrepancy gradient | whole gradient |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %.4f | %.4f |" % (r["sampler"], r["step"], r["k"], r["disc_grad_rel_err"],
                                                 r["whole_grad_rel_err"]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output_dir", required=True)
    p.add_argument("--n_hparams", type=int, default=5)
    p.add_argument("--n_trials", type=int, default=3)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--test_envs", type=int, nargs="+", default=None, help="default: every env in turn")
    p.add_argument("--hparams", default=None, help="JSON hparams for every job")
    p.add_argument("--algorithms", nargs="+", default=["UDA_MMD", "UDA_CORAL"])
    p.add_argument("--baselines", nargs="+", default=["ERM", "DANN"])
    p.add_argument("--samplers", nargs="+", default=None, help="default: every sampler psda offers")
    p.add_argument("--grad_steps", type=int, default=300)
    p.add_argument("--grad_batches", type=int, default=20)
    p.add_argument("--parts", nargs="+", default=["sweep", "tables", "gradients"],
                   choices=["sweep", "tables", "gradients"])
    p.add_argument("--tiny", action="store_true",
                   help="check the pipeline: 1 hparam draw, 1 trial, test env 0, 3 steps, batch_size 2, "
                        "gradients at steps 0/1/2 over 3 batches")
    args = p.parse_args()
    if args.samplers is None:
        args.samplers = available_samplers()
    if args.tiny:
        args.n_hparams, args.n_trials, args.steps, args.test_envs = 1, 1, 3, [0]
        args.hparams = args.hparams or json.dumps({"batch_size": 2})
        args.grad_steps, args.grad_batches = 2, 3
    os.makedirs(args.output_dir, exist_ok=True)
    if "sweep" in args.parts:
        run_sweep(args)
    if "tables" in args.parts:
        tables(args)
    if "gradients" in args.parts:
        gradient_errors(args)


if __name__ == "__main__":
    main()
