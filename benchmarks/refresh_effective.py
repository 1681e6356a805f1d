"""What does a refresh that takes effect at the next batch cost, against one at the next epoch?

``sampler.update(s, t, effective="batch")`` builds the new plan, as ``effective="epoch"`` does,
and then a second set-up of the same kind on the rest of the running epoch (M rows per domain,
balanced). For each case it builds a fresh sampler, hands out half an epoch, times one update
in each mode (alternating, 3 times each) and prints the medians and their ratio, in one
process, so the ratio holds on a shared machine even where the seconds do not.

    nice -n 15 python benchmarks/refresh_effective.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import psda

CASES = (("double-paired", 4000, 160, 256, 32), ("double-paired", 4000, 4000, 64, 32))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cases", nargs="+", default=None, metavar="NAME:NSxNT:D:K",
                   help="e.g. ordered:16000x1000:4:16 (default: %s)"
                   % " ".join(f"{c[0]}:{c[1]}x{c[2]}:{c[3]}:{c[4]}" for c in CASES))
    args = p.parse_args(argv)
    cases = CASES
    if args.cases:
        try:
            cases = tuple((c.split(":")[0], *map(int, c.split(":")[1].split("x")), int(c.split(":")[2]),
                           int(c.split(":")[3])) for c in args.cases)
        except (IndexError, ValueError):
            p.error(f"--cases {args.cases}: want NAME:NSxNT:D:K, e.g. ordered:16000x1000:4:16")
    rng = np.random.default_rng(0)
    for name, ns, nt, d, k in cases:
        s, t = rng.normal(size=(ns, d)), rng.normal(size=(nt, d))
        s2, t2 = s + 0.1 * rng.normal(size=s.shape), t + 0.1 * rng.normal(size=t.shape)
        times = {"epoch": [], "batch": []}
        for mode in ("epoch", "batch") * args.repeats:
            sampler = psda.batch_sampler(name, s, t, k, num_replicas=1, rank=0)
            it = iter(sampler)
            h = len(sampler) // 2
            for _ in range(h):
                next(it)
            t0 = time.perf_counter()
            sampler.update(s2, t2, effective=mode)
            times[mode].append(time.perf_counter() - t0)
        e, b = np.median(times["epoch"]), np.median(times["batch"])
        print(f"{name} n_s={ns} n_t={nt} d={d} k={k}, update at batch {h} of {len(sampler)}: "
              f"effective='epoch' {e:.2f} s, 'batch' {b:.2f} s (medians of {args.repeats}), ratio {b / e:.2f}")


if __name__ == "__main__":
    main()
