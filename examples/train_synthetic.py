"""Train a small UDA model on synthetic two-domain data, uniform sampling vs PSDA.

Source: three Gaussian classes in the plane. Target: the same classes rotated, stretched
and translated (a real covariate shift: a source-only classifier loses accuracy there).
A small MLP featurizer + linear head is trained with cross-entropy on the source plus
``--tradeoff`` × the discrepancy (RBF-mixture MMD² or CORAL, V-statistics on the batch)
between source and target features, with

- uniform: independent random source and target batches (two RandomSamplers), and
- psda: one ``psda.PairedBatchSampler`` whose matching is refreshed from the current
  features every epoch by ``psda.refresh.FeatureRefresher``.

Every ``--measure-every`` epochs it logs, for the current weights, the error of the
minibatch discrepancy gradient w.r.t. the featurizer, E‖ĝ − ∇L_disc‖² over the batches
of one epoch under the method's own sampling (∇L_disc: the full-data gradient; the
quantity PSDA minimises, paper "Preliminaries"), and the target accuracy.

    python examples/train_synthetic.py                         # both losses, both samplers
    python examples/train_synthetic.py --discrepancy coral --epochs 30 --json out.jsonl
    python examples/train_synthetic.py --plot curves.png       # needs matplotlib
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Dict, List, Optional

import numpy as np
import torch
from torch.utils.data import BatchSampler, ConcatDataset, DataLoader, RandomSampler, TensorDataset

import psda
from psda.domainbed.algorithms import coral, rbf_mmd
from psda.refresh import FeatureRefresher, extract_features


def make_domains(n: int, seed: int):
    """Three Gaussian classes; the target is rotated by 40°, stretched and shifted."""
    rng = np.random.default_rng(seed)
    centers = 3.0 * np.array([[math.cos(a), math.sin(a)] for a in (0.0, 2.1, 4.2)])

    def sample(m):
        y = rng.integers(0, 3, size=m)
        return centers[y] + rng.normal(size=(m, 2)), y

    xs, ys = sample(n)
    xt, yt = sample(n)
    a = math.radians(40.0)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    xt = (xt @ rot.T) * np.array([1.4, 0.8]) + np.array([1.5, -1.0])
    as_ds = lambda x, y: TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y))  # noqa: E731
    return as_ds(xs, ys), as_ds(xt, yt)


class Net(torch.nn.Module):
    def __init__(self, width: int = 64, d: int = 16):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Linear(2, width), torch.nn.ReLU(),
                                            torch.nn.Linear(width, d), torch.nn.Tanh())
        self.head = torch.nn.Linear(d, 3)

    def forward(self, x):
        return self.head(self.features(x))


def disc_fn(name: str):
    return (lambda a, b: rbf_mmd(a, b)) if name == "mmd" else coral


def disc_grad(net: Net, disc, xs: torch.Tensor, xt: torch.Tensor) -> torch.Tensor:
    """Gradient of disc(f(xs), f(xt)) w.r.t. the featurizer's parameters, flattened."""
    params = list(net.features.parameters())
    g = torch.autograd.grad(disc(net.features(xs), net.features(xt)), params)
    return torch.cat([t.reshape(-1) for t in g])


def accuracy(net: Net, ds: TensorDataset) -> float:
    with torch.no_grad():
        x, y = ds.tensors
        return float((net(x).argmax(1) == y).float().mean())


class Uniform:
    """Independent uniform source and target batches: the usual two-loader UDA setup."""

    def __init__(self, src, tgt, k: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.s = BatchSampler(RandomSampler(src, generator=g), k, drop_last=True)
        self.t = BatchSampler(RandomSampler(tgt, replacement=True, num_samples=len(src), generator=g), k,
                              drop_last=True)

    def epoch(self):
        return zip(iter(self.s), iter(self.t))


class Paired:
    """PSDA batches from one PairedBatchSampler, refreshed every epoch."""

    def __init__(self, src, tgt, k: int, seed: int, net: Net, discrepancy: str, background: bool):
        zs = extract_features(net.features, src, progress=False)
        zt = extract_features(net.features, tgt, progress=False)
        self.n_s = len(src)
        self.sampler = psda.PairedBatchSampler(zs, zt, k, discrepancy=discrepancy, seed=seed)
        self.refresher = FeatureRefresher(self.sampler, net.features, src, tgt, every_epochs=1,
                                          background=background, progress=False)
        self.k = k

    def epoch(self):
        for b in self.sampler:
            # split_batch halves each batch, so it is right for a short last batch too.
            s_idx, t_idx = psda.split_batch(b)
            yield s_idx, [t - self.n_s for t in t_idx]


def run(method: str, discrepancy: str, args, log=print) -> List[Dict]:
    torch.manual_seed(args.seed)
    src, tgt = make_domains(args.n, args.seed)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    disc = disc_fn(discrepancy)
    if method == "psda":
        sampling = Paired(src, tgt, args.batch_size, args.seed, net, discrepancy, args.background)
    else:
        sampling = Uniform(src, tgt, args.batch_size, args.seed)
    xs_all, ys_all = src.tensors
    xt_all = tgt.tensors[0]
    rows = []
    t0 = time.perf_counter()
    for epoch in range(args.epochs + 1):
        if epoch % args.measure_every == 0 or epoch == args.epochs:
            # the gradient error of one epoch of this method's batches at the current weights
            full = disc_grad(net, disc, xs_all, xt_all)
            errs = [float((disc_grad(net, disc, xs_all[s], xt_all[t]) - full).pow(2).sum())
                    for s, t in sampling.epoch()]
            if method == "psda":
                sampling.sampler.set_epoch(epoch)  # measuring walked an epoch; train on the same one
            row = {"method": method, "discrepancy": discrepancy, "epoch": epoch,
                   "grad_mse": float(np.mean(errs)), "grad_norm2": float(full.pow(2).sum()),
                   "target_acc": accuracy(net, tgt), "source_acc": accuracy(net, src),
                   "seconds": time.perf_counter() - t0}
            rows.append(row)
            log("%-5s %-5s epoch %3d  grad MSE %.3e  (|grad|² %.3e)  target acc %.3f  source acc %.3f"
                % (method, discrepancy, epoch, row["grad_mse"], row["grad_norm2"], row["target_acc"],
                   row["source_acc"]))
        if epoch == args.epochs:
            break
        for s, t in sampling.epoch():
            z = net.features(torch.cat([xs_all[s], xt_all[t]]))
            zs, zt = z[: len(s)], z[len(s):]
            loss = torch.nn.functional.cross_entropy(net.head(zs), ys_all[s]) + args.tradeoff * disc(zs, zt)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if method == "psda":
            sampling.refresher.epoch_end()
    return rows


def summarize(rows: List[Dict]) -> str:
    lines = ["%-6s %-7s %14s %12s" % ("loss", "sampler", "mean grad MSE", "target acc")]
    for disc in sorted({r["discrepancy"] for r in rows}):
        for method in ("uniform", "psda"):
            rs = [r for r in rows if r["discrepancy"] == disc and r["method"] == method]
            if rs:
                lines.append("%-6s %-7s %14.3e %12.3f" % (disc, method, np.mean([r["grad_mse"] for r in rs]),
                                                          rs[-1]["target_acc"]))
    return "\n".join(lines)


def plot(rows: List[Dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    discs = sorted({r["discrepancy"] for r in rows})
    fig, axes = plt.subplots(2, len(discs), figsize=(5 * len(discs), 7), squeeze=False)
    for j, disc in enumerate(discs):
        for method in ("uniform", "psda"):
            rs = [r for r in rows if r["discrepancy"] == disc and r["method"] == method]
            ep = [r["epoch"] for r in rs]
            axes[0][j].semilogy(ep, [r["grad_mse"] for r in rs], marker="o", label=method)
            axes[1][j].plot(ep, [r["target_acc"] for r in rs], marker="o", label=method)
        axes[0][j].set_title("%s: discrepancy gradient error E|g - grad|^2" % disc.upper())
        axes[1][j].set_title("%s: target accuracy" % disc.upper())
        axes[1][j].set_xlabel("epoch")
        axes[0][j].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: Optional[List[str]] = None) -> List[Dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--discrepancy", choices=["mmd", "coral", "both"], default="both")
    p.add_argument("--methods", default="uniform,psda", help="comma-separated: uniform, psda")
    p.add_argument("--n", type=int, default=600, help="examples per domain")
    p.add_argument("--batch-size", type=int, default=32, help="examples per domain per batch (even)")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--tradeoff", type=float, default=1.0)
    p.add_argument("--measure-every", type=int, default=5)
    p.add_argument("--background", action="store_true", help="refresh matchings in a background thread")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write one JSON object per measurement to this file")
    p.add_argument("--plot", help="save a figure (needs matplotlib)")
    args = p.parse_args(argv)
    discs = ["mmd", "coral"] if args.discrepancy == "both" else [args.discrepancy]
    rows: List[Dict] = []
    for disc in discs:
        for method in args.methods.split(","):
            rows += run(method.strip(), disc, args)
    print(summarize(rows))
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    if args.plot:
        plot(rows, args.plot)
    return rows


if __name__ == "__main__":
    main()
    sys.exit(0)
