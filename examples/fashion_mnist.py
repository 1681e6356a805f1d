"""A fair comparison on real images: UDA MMD on rotated Fashion-MNIST, uniform batches vs PSDA.

Data (``psda.domainbed.fashion``; Debian's ``dataset-fashion-mnist`` or ``--data_dir``):
Fashion-MNIST dealt into six environments rotated 0..75° (DomainBed's RotatedMNIST recipe),
``--env-size`` images each. Source: the environments rotated 15..75° (labelled). Target: the
0° environment, split in half, once per seed: one half unlabelled for adaptation, the other
half to measure target accuracy (never trained on).

Model: an MLP featurizer (784-256-256-128, ReLU) and a linear head, Adam, trained for
``--steps`` steps on cross-entropy (source) + ``--tradeoff`` × MMD² (RBF mixture, psda's
``rbf_mmd``) between a batch of k source and k target features. The samplers:

- ``uniform``: k source and k target items drawn uniformly (``psda.batch_sampler("uniform")``);
- ``paired`` / ``double-paired``: PSDA (``psda.batch_sampler``), its matching refreshed from
  the current features every epoch (``psda.refresh.FeatureRefresher``).

Fairness: for each seed every sampler starts from the same weights, the same split and the
same hparams (not tuned for either); only the batches differ. It reports the target accuracy
at the last step, mean ± SE over seeds, and the paired difference per seed; ``--plot`` draws
one point per (sampler, seed) and the mean curves. The protocol with a hyperparameter search,
validation and many test environments is docs/evidence.md; this example is its miniature, and
its numbers say nothing beyond its seeds.

    python examples/fashion_mnist.py                               # 5 seeds, a few minutes on CPU
    python examples/fashion_mnist.py --seeds 10 --plot fashion.png --json runs.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Dict, List, Optional

import numpy as np
import torch
from torch.utils.data import TensorDataset

import psda
from psda.domainbed.algorithms import rbf_mmd
from psda.domainbed.fashion import rotated_fashion_tensors
from psda.refresh import FeatureRefresher, extract_features


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                            torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU())
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.features(x))


def domains(args, seed: int):
    """(source, target unlabelled, target test) TensorDatasets for one seed."""
    envs = rotated_fashion_tensors(args.data_dir, env_size=args.env_size)
    flat = [(x.reshape(len(x), -1), y) for x, y in envs]
    src = TensorDataset(torch.cat([x for x, _ in flat[1:]]), torch.cat([y for _, y in flat[1:]]))
    xt, yt = flat[0]
    order = torch.randperm(len(xt), generator=torch.Generator().manual_seed(seed))
    half = len(xt) // 2
    return src, TensorDataset(xt[order[:half]], yt[order[:half]]), TensorDataset(xt[order[half:]], yt[order[half:]])


def accuracy(net: Net, ds: TensorDataset) -> float:
    net.eval()
    with torch.no_grad():
        x, y = ds.tensors
        acc = float((net(x).argmax(1) == y).float().mean())
    net.train()
    return acc


def batches(sampler, n_s: int, refresher: Optional[FeatureRefresher]):
    """Endless (source indices, target indices) from a psda batch sampler (k source
    indices, then k target indices offset by n_s), one epoch after another."""
    epoch = 0
    while True:
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        for b in sampler:
            s, t = psda.split_batch(b)
            yield list(s), [i - n_s for i in t]
        if refresher is not None:
            refresher.epoch_end()
        epoch += 1


def run(sampler_name: str, seed: int, args) -> Dict:
    src, tgt, test = domains(args, seed)
    torch.manual_seed(seed)  # the same initial weights for every sampler of this seed
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    t0 = time.perf_counter()
    zs = extract_features(net.features, src, progress=False)
    zt = extract_features(net.features, tgt, progress=False)
    sampler = psda.batch_sampler(sampler_name, zs, zt, args.k, seed=seed, discrepancy="mmd")
    refresher = None
    if sampler_name != "uniform":
        refresher = FeatureRefresher(sampler, net.features, src, tgt, every_epochs=1, progress=False)
    xs_all, ys_all = src.tensors
    xt_all = tgt.tensors[0]
    curve = []
    it = batches(sampler, len(src), refresher)
    for step in range(args.steps + 1):
        if step % args.eval_every == 0 or step == args.steps:
            curve.append((step, accuracy(net, test)))
        if step == args.steps:
            break
        s, t = next(it)
        z = net.features(torch.cat([xs_all[s], xt_all[t]]))
        zs_b, zt_b = z[: len(s)], z[len(s):]
        loss = torch.nn.functional.cross_entropy(net.head(zs_b), ys_all[s]) + args.tradeoff * rbf_mmd(zs_b, zt_b)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"sampler": sampler_name, "seed": seed, "target_acc": curve[-1][1], "curve": curve,
            "seconds": time.perf_counter() - t0}


def mean_se(v):
    v = np.asarray(v, dtype=float)
    return float(v.mean()), (float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan"))


def summarize(rows: List[Dict], samplers: List[str]) -> str:
    acc = {(r["sampler"], r["seed"]): 100 * r["target_acc"] for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    lines = ["target accuracy (%%) at the last step, mean ± SE over %d seeds" % len(seeds)]
    for s in samplers:
        m, se = mean_se([acc[(s, i)] for i in seeds])
        lines.append("  %-14s %5.1f ± %.1f   per seed: %s" % (s, m, se, " ".join("%.1f" % acc[(s, i)] for i in seeds)))
    for s in samplers:
        if s != "uniform" and "uniform" in samplers:
            d = [acc[(s, i)] - acc[("uniform", i)] for i in seeds]
            m, se = mean_se(d)
            lines.append("  %s − uniform: %+.1f ± %.1f points (wins %d / losses %d)"
                         % (s, m, se, sum(x > 0 for x in d), sum(x < 0 for x in d)))
    return "\n".join(lines)


def plot(rows: List[Dict], samplers: List[str], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, s in enumerate(samplers):
        rs = [r for r in rows if r["sampler"] == s]
        accs = [100 * r["target_acc"] for r in rs]
        a.scatter(accs, [i] * len(accs), alpha=0.7)
        m, se = mean_se(accs)
        a.errorbar([m], [i - 0.25], xerr=[se], fmt="k|", capsize=3)
        steps = [st for st, _ in rs[0]["curve"]]
        b.plot(steps, 100 * np.mean([[acc for _, acc in r["curve"]] for r in rs], axis=0), label=s)
    a.set_yticks(range(len(samplers)))
    a.set_yticklabels(samplers)
    a.set_xlabel("target accuracy at the last step (%; dots: seeds, bar: mean ± SE)")
    b.set_xlabel("step")
    b.set_ylabel("target accuracy (%, mean over seeds)")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def main(argv: Optional[List[str]] = None) -> List[Dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samplers", default="uniform,double-paired", help="comma-separated psda.SAMPLERS names")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--k", type=int, default=32, help="items per domain in a batch")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--tradeoff", type=float, default=1.0)
    p.add_argument("--env-size", type=int, default=1000, help="images per environment (0: all)")
    p.add_argument("--data_dir", default=None, help="a directory holding Fashion-MNIST's IDX files")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--plot", default=None, help="write a figure here (needs matplotlib)")
    p.add_argument("--json", default=None, help="append one JSON line per run here")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    rows = []
    for seed in range(args.seeds):
        for s in samplers:
            r = run(s, seed, args)
            rows.append(r)
            print("seed %d %-14s target acc %.3f (%.1f s)" % (seed, s, r["target_acc"], r["seconds"]), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
    print(summarize(rows, samplers))
    if args.plot:
        plot(rows, samplers, args.plot)
    return rows


if __name__ == "__main__":
    main()
