"""Set-up time of every sampler in psda.SAMPLERS against n (benchmarks/samplers.py).

The set-up is what a sampler computes before its first batch and again at every
update(): strata (VaRDASS), strata and order (ORDERED), partition
(anticlustering), eigendecomposition (k-DPP), matching (PSDA). Data: 2-D
standard normal source and target, n_s = n_t = n (the paper's variance
experiment), linear MMD.

    PYTHONPATH=python python benchmarks/samplers.py --n 1000,2000,4000 --k 32
"""

from __future__ import annotations

import argparse
import importlib
import time

import numpy as np

import psda


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="1000,2000,4000", help="comma-separated n (per domain)")
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--methods", default=",".join(psda.SAMPLERS))
    ap.add_argument("--repeats", type=int, default=1)
    a = ap.parse_args()
    ns = [int(v) for v in a.n.split(",")]
    methods = a.methods.split(",")
    importlib.import_module("psda.samplers")  # torch's import is not set-up

    rows = []
    for m in methods:
        cells = []
        for n in ns:
            rng = np.random.default_rng(n)
            s, t = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
            opts = {"num_replicas": 1, "rank": 0, "seed": 0}
            if m in ("paired", "double-paired", "random-pairs"):
                opts["kernel"] = "linear"
            best = float("inf")
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                psda.batch_sampler(m, s, t, a.k, **opts)
                best = min(best, time.perf_counter() - t0)
            cells.append(best)
        rows.append((m, cells))
    w = max(len(r[0]) for r in rows) + 2
    print(f"set-up seconds, k = {a.k}, 2-D Gaussians, linear MMD (best of {a.repeats})")
    print("method".ljust(w) + "".join(f"n={n}".rjust(10) for n in ns))
    for name, cells in rows:
        print(name.ljust(w) + "".join(f"{c:10.2f}" for c in cells))


if __name__ == "__main__":
    main()
