"""How long does a refresh stall training, with and without background matching?

A small MLP is trained on random data with a PairedBatchSampler whose matching is
refreshed every epoch by psda.refresh.FeatureRefresher. For each mode it prints the
seconds the training thread spent inside the refresher per refresh (extraction, plus
the matching in foreground mode, plus any wait at the next epoch_end in background
mode) and the wall time of the whole run.

    python benchmarks/refresh_stall.py --n 4000 --d 64 --epochs 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.utils.data import ConcatDataset, DataLoader, TensorDataset

import psda
from psda.refresh import FeatureRefresher, extract_features


def run(background: bool, args) -> dict:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    src = TensorDataset(torch.randn(args.n, 32, generator=g))
    tgt = TensorDataset(torch.randn(args.n, 32, generator=g) + 0.5)
    feat = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, args.d))
    head = torch.nn.Linear(args.d, 1)
    opt = torch.optim.SGD(list(feat.parameters()) + list(head.parameters()), lr=1e-3)
    zs = extract_features(feat, src, progress=False)
    zt = extract_features(feat, tgt, progress=False)
    sampler = psda.PairedBatchSampler(zs, zt, args.batch_size)
    loader = DataLoader(ConcatDataset([src, tgt]), batch_sampler=sampler)
    refresher = FeatureRefresher(sampler, feat, src, tgt, every_epochs=1, background=background,
                                 batch_size=1024, progress=False)
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        for (x,) in loader:
            for _ in range(args.work):  # stands in for a heavier model's step
                z = feat(x)
                loss = head(z).pow(2).mean() + (z[: args.batch_size].mean(0) - z[args.batch_size:].mean(0)).pow(2).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
        if epoch < args.epochs - 1:  # no refresh after the last epoch
            refresher.epoch_end()
    wall, stalls = time.perf_counter() - t0, list(refresher.stalls)
    refresher.wait()  # the last background matching would only serve a later epoch: not a stall
    return {"background": background, "stalls": stalls, "wall": wall,
            "batches_per_epoch": len(sampler)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=4000, help="examples per domain")
    p.add_argument("--d", type=int, default=64, help="feature dimension")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--work", type=int, default=4, help="optimiser steps per batch (simulated model cost)")
    args = p.parse_args()
    t = time.perf_counter()
    z = np.random.default_rng(0).normal(size=(2, args.n, args.d)).astype(np.float32)
    psda.match(z[0], z[1], batch_size=args.batch_size)
    print("one matching alone: %.2fs (n=%d, d=%d, torch threads=%d)" % (time.perf_counter() - t, args.n, args.d,
                                                                       torch.get_num_threads()))
    for bg in (False, True):
        r = run(bg, args)
        print("%-10s stall per refresh: %s s  (mean %.2f s); wall %.1f s for %d epochs of %d batches"
              % ("background" if bg else "foreground", " ".join("%.2f" % s for s in r["stalls"]),
                 float(np.mean(r["stalls"])), r["wall"], args.epochs, r["batches_per_epoch"]))


if __name__ == "__main__":
    main()
