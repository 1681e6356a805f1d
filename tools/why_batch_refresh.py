"""Stale features within an epoch (issue 27, item 4(c)): what a refresh that takes effect at the
next batch (``update(..., effective="batch")``) changes, against one that waits for the next epoch.

Set-up: the trajectory of tools/why_psda.py (UDA_MMD or UDA_CORAL, DomainBed's MLP,
RotatedFashionMNISTFlat at the evidence protocol's sizes, uniform batches, k = 32, lr 1e-3,
trade-off 1; its functions, imported from it), with a refresh interval G shorter than an
epoch (--gap, default 60 steps; an epoch is n_s / k = 125 batches). At each step S of --at,
with the weights of step S:

- stale: double-paired built on the features of step S − G (the refresh before), epoch 0;
- epoch: the same sampler; a refresh at batch h = --frac of the epoch with the features of
  step S, ``effective="epoch"``: the rest of the epoch is still the stale one (what psda did
  before);
- batch: the same, ``effective="batch"``: batches h.. re-grouped on step S's features
  (exactly the rows the epoch mode serves there);
- fresh: double-paired built on step S's features (a refresh at the epoch's start).

For each it measures, with why_psda's ``measure`` and the full-data gradient g of step S,
the discrepancy gradient's error over the batches h.. of the epoch (where the modes differ;
B = batches), relative to ||g||²: total = mean ||g_b − g||², bias², variance, cos.
Bias here is large for every row: batches h.. of one epoch are a part of the data, not all
of it; epoch and batch serve the same rows, so their difference is the grouping's alone.

Writes --out/batch_refresh.jsonl and batch_refresh.md. Deterministic per --seed.

Command (DomainBed on PYTHONPATH, Fashion-MNIST from Debian's dataset-fashion-mnist)::

    export PYTHONPATH=$PWD/python:/work/shared/DomainBed
    nice -n 15 python tools/why_batch_refresh.py --out results/why   # the committed table
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from typing import List, Optional, Sequence

import numpy as np


def _why():
    spec = importlib.util.spec_from_file_location("why_psda", os.path.join(os.path.dirname(__file__), "why_psda.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(args) -> List[dict]:
    import torch

    import psda
    from psda.domainbed.algorithms import coral, rbf_mmd

    why = _why()
    torch.set_num_threads(args.threads)
    t0 = time.time()
    xs, ys, xt, _, _ = why.load_data(args.data_dir, args.env_size, args.test_env, args.trial)
    hparams = {"lr": args.lr, "weight_decay": 0.0, "mmd_gamma": args.tradeoff, "nonlinear_classifier": False,
               "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0}
    gammas = tuple(psda.DEFAULT_GAMMAS)
    disc = {"mmd": lambda a, b: rbf_mmd(a, b, gammas), "coral": coral}[args.discrepancy]
    steps = sorted({s for at in args.at for s in (at - args.gap, at)})
    alg = why.make_algorithm(hparams, args.seed, xs.shape[1], discrepancy=args.discrepancy)
    saved = why.train(alg, xs, ys, xt, args.k, max(args.at), steps, args.seed)
    print(f"why-batch: trained {max(args.at)} steps ({time.time() - t0:.0f} s)", flush=True)

    def features(step):
        alg.load_state_dict(saved[step])
        with torch.no_grad():
            return alg.featurizer(xs).numpy(), alg.featurizer(xt).numpy()

    opts = {"seed": args.seed, "num_replicas": 1, "rank": 0, "discrepancy": args.discrepancy}
    records = []
    for at in args.at:
        old, new = features(at - args.gap), features(at)  # leaves step `at`'s weights loaded
        f, c = alg.featurizer, alg.classifier
        g, t, _ = why.full_grads(f, c, xs, ys, xt, args.discrepancy, gammas)
        runs = {}
        for mode in ("stale", "epoch", "batch", "fresh"):
            sampler = psda.batch_sampler("double-paired", *(new if mode == "fresh" else old), args.k, **opts)
            h = int(len(sampler) * args.frac)
            it = iter(sampler)
            head = [next(it) for _ in range(h)]
            if mode in ("epoch", "batch"):
                sampler.update(*new, effective=mode)
            runs[mode] = (head, list(it))
        assert runs["epoch"] == runs["stale"]  # effective="epoch" leaves the running epoch alone
        for mode, (head, rest) in runs.items():
            served = sorted(i for b in head + rest for i in b[: args.k])
            split = why.measure(f, c, xs, ys, xt, rest, disc, g, t)
            d = split.disc()
            rec = {"discrepancy": args.discrepancy, "step": at, "features_from": at - args.gap if mode != "fresh"
                   else at, "mode": mode, "h": len(head), "batches": split.B, "disc": d,
                   "source_rows_once": served == list(range(len(xs)))}
            records.append(rec)
            print(f"why-batch: step {at} {mode}: total {d['total']:.4g} bias2 {d['bias2']:.4g} var "
                  f"{d['variance']:.4g} cos {d['cosine']:.4f} ({split.B} batches, {time.time() - t0:.0f} s)",
                  flush=True)
    meta = {"hparams": hparams, "k": args.k, "gap": args.gap, "at": args.at, "frac": args.frac, "seed": args.seed,
            "trial": args.trial, "test_env": args.test_env, "env_size": args.env_size, "n_source": len(xs),
            "n_target": len(xt), "wall_s": round(time.time() - t0, 1), "torch_threads": args.threads}
    os.makedirs(args.out, exist_ok=True)
    why.write_records(os.path.join(args.out, "batch_refresh.jsonl"), meta, records)
    with open(os.path.join(args.out, "batch_refresh.md"), "w") as fh:
        fh.write(table(records, meta))
    print(f"why-batch: wrote {args.out}/batch_refresh.jsonl, batch_refresh.md in {time.time() - t0:.0f} s", flush=True)
    return records


def table(records: List[dict], meta: dict) -> str:
    """The markdown table of batch_refresh.md."""
    out = ["# A refresh at the next batch against the next epoch (tools/why_batch_refresh.py)\n",
           f"UDA_{records[0]['discrepancy'].upper()} trajectory of tools/why_psda.py: RotatedFashionMNISTFlat, "
           f"{meta['env_size']}/env, n_s = {meta['n_source']}, n_t = {meta['n_target']}, k = {meta['k']}, seed "
           f"{meta['seed']}. Double-paired; a refresh every {meta['gap']} steps (an epoch is "
           f"{meta['n_source'] // meta['k']} batches): at step S, a sampler on the features of step S − "
           f"{meta['gap']}, refreshed with step S's at batch h ({meta['frac']} of the epoch). Over batches h.. "
           "of the epoch, at step S's weights, relative to ||g||²: total = mean ||g_b − g||², bias², var, "
           "cos(mean g_b, g). stale = no refresh; epoch = effective=\"epoch\" (the rest unchanged: the same "
           "batches as stale); batch = effective=\"batch\" (the same rows as epoch, re-grouped on step S's "
           "features); fresh = built on step S's features. 'once': every source row served exactly once in "
           f"the epoch. Wall time {meta['wall_s']} s.\n",
           "| step S | mode | features of step | h | B | total | bias² | var | cos | once |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in records:
        d = r["disc"]
        out.append(f"| {r['step']} | {r['mode']} | {r['features_from']} | {r['h']} | {r['batches']} | "
                   f"{d['total']:.4g} | {d['bias2']:.4g} | {d['variance']:.4g} | {d['cosine']:.4f} | "
                   f"{'yes' if r['source_rows_once'] else 'no'} |")
    return "\n".join(out) + "\n"


def parse(argv: Optional[Sequence[str]] = None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    _why().add_trajectory_args(p)
    p.add_argument("--at", type=int, nargs="+", default=[310, 560, 1000], help="the steps S measured")
    p.add_argument("--gap", type=int, default=60, help="the refresh interval G in steps")
    p.add_argument("--frac", type=float, default=0.5, help="where in the epoch the refresh comes (h / batches)")
    p.add_argument("--discrepancy", default="mmd", choices=["mmd", "coral"])
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    args = p.parse_args(argv)
    if any(a - args.gap < 0 for a in args.at):
        p.error(f"--at {args.at}: every step must be >= --gap {args.gap}")
    if not 0 < args.frac < 1:
        p.error(f"--frac {args.frac}: want 0 < frac < 1 (a refresh inside the epoch)")
    if args.k % 2:
        p.error(f"--k {args.k}: double-paired needs an even batch size")
    return args


if __name__ == "__main__":
    run(parse())
