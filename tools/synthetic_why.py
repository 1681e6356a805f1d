"""Why PSDA's lower MMD gradient error did not raise examples/train_synthetic.py's accuracy.

Trains the example's model (its data, network, samplers, lr, trade-off, k = 32, 20 epochs)
with no discrepancy (source-only), uniform batches, PSDA batches, and the exact full-data
discrepancy gradient at every step (full), without the example's measurement passes, and
prints one JSON line per (seed, method): target/source accuracy and the final full-data MMD²
and objective. See docs/domainbed.md.

    PYTHONPATH=python python tools/synthetic_why.py 0 1 2 3 4 5
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import train_synthetic as ts  # noqa: E402

from psda.domainbed.algorithms import rbf_mmd  # noqa: E402

def run(method, seed, epochs=20, k=32, lr=3e-3, tradeoff=1.0, n=600):
    """Train one model; return its final accuracies, full-data MMD² and objective."""
    torch.manual_seed(seed)
    src, tgt = ts.make_domains(n, seed)
    net = ts.Net()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    xs, ys = src.tensors
    xt = tgt.tensors[0]
    if method == "psda":
        samp = ts.Paired(src, tgt, k, seed, net, "mmd", False)
    else:
        samp = ts.Uniform(src, tgt, k, seed)
    for ep in range(epochs):
        for s, t in samp.epoch():
            z = net.features(torch.cat([xs[s], xt[t]]))
            zs, zt = z[:len(s)], z[len(s):]
            loss = torch.nn.functional.cross_entropy(net.head(zs), ys[s])
            if method in ("uniform", "psda"):
                loss = loss + tradeoff * rbf_mmd(zs, zt)
            elif method == "full":
                loss = loss + tradeoff * rbf_mmd(net.features(xs), net.features(xt))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if method == "psda":
            samp.refresher.epoch_end()
    with torch.no_grad():
        full_mmd = float(rbf_mmd(net.features(xs), net.features(xt)))
        ce = float(torch.nn.functional.cross_entropy(net(xs), ys))
    return {"method": method, "seed": seed, "target_acc": ts.accuracy(net, tgt), "source_acc": ts.accuracy(net, src),
            "full_mmd": full_mmd, "source_ce": ce, "objective": ce + tradeoff * full_mmd}

if __name__ == "__main__":
    for seed in map(int, sys.argv[1:] or ["0"]):
        for m in ("source-only", "uniform", "psda", "full"):
            print(json.dumps(run(m, seed)), flush=True)
