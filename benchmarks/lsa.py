"""psda.linear_sum_assignment against scipy.optimize.linear_sum_assignment.

Both solvers run in this one process on the same matrices, and each time is
the smallest of --repeats runs, as wall clock and as CPU time of the process
(all its threads: psda's warm start uses several cores, so the CPU ratio is
the conservative one, and the steadier one on a shared machine). Every psda
optimum is checked against SciPy's. The ratios are psda / SciPy: below 1
psda is faster.

    python benchmarks/lsa.py                 # the default grid
    python benchmarks/lsa.py --sizes 2000 --kinds int10 --repeats 5

Kinds: normal (standard normal), uniform ([0, 1)), int10 / int100 (uniform
integers 0-9 / 0-99, tie-heavy), sqdist2d (squared distances between two
clouds of 2-D Gaussian points, psda's Stage 1 costs for the linear kernel),
huge (normal with one 1e20 entry).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

import psda

KINDS = {
    "normal": lambda rng, n: rng.standard_normal((n, n)),
    "uniform": lambda rng, n: rng.random((n, n)),
    "int10": lambda rng, n: rng.integers(0, 10, (n, n)).astype(float),
    "int100": lambda rng, n: rng.integers(0, 100, (n, n)).astype(float),
    "sqdist2d": lambda rng, n: ((rng.standard_normal((n, 1, 2)) - rng.standard_normal((1, n, 2))) ** 2).sum(-1),
    "huge": lambda rng, n: _huge(rng, n),
}


def _huge(rng: np.random.Generator, n: int) -> np.ndarray:
    c = rng.standard_normal((n, n))
    c[rng.integers(n), rng.integers(n)] = 1e20
    return c


def best_of(fn, c: np.ndarray, repeats: int):
    """Return (smallest wall time, smallest CPU time, last result) of repeats calls fn(c)."""
    wall, cpu, out = float("inf"), float("inf"), None
    for _ in range(repeats):
        t, p = time.perf_counter(), time.process_time()
        out = fn(c)
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - p)
    return wall, cpu, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"psda {psda.__version__} ({psda.__file__}), best of {args.repeats}, seconds")
    print(f"{'kind':>9} {'n':>5} {'psda wall':>9} {'scipy wall':>10} {'ratio':>6} {'psda cpu':>9} {'scipy cpu':>9} {'ratio':>6}")
    for kind in args.kinds:
        for n in args.sizes:
            c = KINDS[kind](np.random.default_rng([args.seed, n]), n)
            tp, cpu_p, (rp, cp) = best_of(psda.linear_sum_assignment, c, args.repeats)
            ts, cpu_s, (rs, cs) = best_of(scipy_lsa, c, args.repeats)
            got, want = c[rp, cp].sum(), c[rs, cs].sum()
            if abs(got - want) > 1e-9 * (1 + abs(want)):
                raise SystemExit(f"{kind} n={n}: psda's optimum {got!r} differs from SciPy's {want!r}")
            print(f"{kind:>9} {n:>5} {tp:9.4f} {ts:10.4f} {tp / ts:6.2f} {cpu_p:9.4f} {cpu_s:9.4f} {cpu_p / cpu_s:6.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
