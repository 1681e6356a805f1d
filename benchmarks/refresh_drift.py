"""How much of a matching survives a refresh in real training, and where a refresh's time goes.

A warm start of a refresh from the previous matching (its pairs, quadruplets and duals) can only
save what survives from one refresh to the next. This trains examples/fashion_mnist.py's MLP
(rotated Fashion-MNIST: source 15-75 degrees, target 0 degrees) with Double-paired MMD batches,
takes the features every ``--every`` steps, and for each pair of consecutive feature sets
prints the relative change of the source features, the share of Stage 1 pairs and of Stage 2
quadruplets that the new matching keeps, and the new matching's phase times (MMD and CORAL)
from psda.match's progress callback, with the assignment phases' share of the whole.

    python benchmarks/refresh_drift.py --every 156 --refreshes 5    # once per epoch
    python benchmarks/refresh_drift.py --every 20 --refreshes 5
    python benchmarks/refresh_drift.py --every 20 --refreshes 5 --dump /tmp/snaps

``--dump DIR`` also writes each snapshot's features, zs<step>.bin (source) and zt<step>.bin
(target), raw little-endian float64, row-major, the feature dimension (128) per row: the input of
psda/assign's BenchmarkRefreshWarm (PSDA_REFRESH_DIR=DIR), which measures what a refresh
warm-started from the previous one's duals gains.

Needs Fashion-MNIST (Debian's dataset-fashion-mnist, or --data_dir) and torch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

import psda
from psda.domainbed.algorithms import rbf_mmd
from psda.refresh import extract_features

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import fashion_mnist as example  # noqa: E402  (the example's model and data split)


def timed_match(s: np.ndarray, t: np.ndarray, k: int, discrepancy: str):
    """(matching, whole seconds, {phase: seconds}) of one Double-paired matching."""
    seen = {}

    def progress(done: float, total: float, phase: str) -> None:
        seen.setdefault(phase, time.perf_counter())

    t0 = time.perf_counter()
    m = psda.match(s, t, batch_size=k, stages=2, discrepancy=discrepancy, progress=progress)
    end = time.perf_counter()
    marks = sorted(seen.items(), key=lambda kv: kv[1])
    phases = {p: (marks[i + 1][1] if i + 1 < len(marks) else end) - at for i, (p, at) in enumerate(marks)}
    return m, end - t0, phases


def units(m) -> tuple:
    """(set of Stage 1 pairs, set of quadruplets as sets of two pairs)."""
    pairs = [tuple(p) for p in m.pairs.tolist()]
    return set(pairs), {frozenset((pairs[a], pairs[b])) for a, b in m.quads.tolist()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--every", type=int, default=156, help="steps between feature snapshots (156: one epoch)")
    p.add_argument("--refreshes", type=int, default=5)
    p.add_argument("--env_size", type=int, default=1000)
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--data_dir", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dump", default=None, metavar="DIR",
                   help="write each snapshot's features to DIR as zs<step>.bin and zt<step>.bin "
                        "(raw little-endian float64, row-major)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    args = argparse.Namespace(data_dir=a.data_dir, env_size=a.env_size)
    src, tgt, _ = example.domains(args, a.seed)
    torch.manual_seed(a.seed)
    net = example.Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    xs, ys = src.tensors
    xt = tgt.tensors[0]

    def snapshot():
        return (extract_features(net.features, src, progress=False).astype(np.float64),
                extract_features(net.features, tgt, progress=False).astype(np.float64))

    def dump(step: int, zs: np.ndarray, zt: np.ndarray) -> None:
        if a.dump is not None:
            os.makedirs(a.dump, exist_ok=True)
            for name, z in (("zs", zs), ("zt", zt)):
                np.ascontiguousarray(z, dtype="<f8").tofile(os.path.join(a.dump, f"{name}{step}.bin"))

    feats = [snapshot()]
    dump(0, *feats[0])
    sampler = psda.batch_sampler("double-paired", *feats[0], a.k, seed=a.seed)
    batches = iter(())
    for _ in range(a.refreshes):
        for _ in range(a.every):
            b = next(batches, None)
            if b is None:
                batches = iter(sampler)
                b = next(batches)
            s, t = psda.split_batch(b)
            t = [i - len(src) for i in t]
            z = net.features(torch.cat([xs[s], xt[t]]))
            loss = torch.nn.functional.cross_entropy(net.head(z[: len(s)]), ys[s]) + rbf_mmd(z[: len(s)], z[len(s):])
            opt.zero_grad()
            loss.backward()
            opt.step()
        feats.append(snapshot())
        dump((len(feats) - 1) * a.every, *feats[-1])
        sampler.update(*feats[-1])
    print(f"n_source {len(src)}, n_target {len(tgt)}, k {a.k}, a snapshot every {a.every} steps "
          f"({len(sampler)} steps per epoch)")
    print("| loss | refresh | feature change | pairs kept | quads kept | whole s | stage 1 assign s | "
          "stage 2 match s | assignment share |")
    print("|---|---|---|---|---|---|---|---|---|")
    for disc in ("mmd", "coral"):
        prev = None
        for r, (zs, zt) in enumerate(feats):
            m, whole, ph = timed_match(zs, zt, a.k, disc)
            kept = units(m)
            if prev is not None:
                change = np.linalg.norm(zs - prev[0]) / np.linalg.norm(prev[0])
                a1, a2 = ph.get("stage 1 assignment", 0.0), ph.get("stage 2 matching", 0.0)
                print(f"| {disc} | {r} | {change:.3f} | {len(kept[0] & prev[1][0]) / len(kept[0]):.3f} | "
                      f"{len(kept[1] & prev[1][1]) / max(1, len(kept[1])):.3f} | {whole:.2f} | {a1:.2f} | {a2:.2f} | "
                      f"{(a1 + a2) / whole:.0%} |", flush=True)
            prev = (zs, kept)


if __name__ == "__main__":
    main()
