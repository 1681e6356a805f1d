"""The cost of a matching against its GEMM floor (issue 26), in one process.

For each data kind and size it prints:

* the floor: the three float32 Gram products a Double-paired MMD matching
  needs (S·Tᵀ, S·Sᵀ, T·Tᵀ; the symmetric two as upper triangles), timed with
  NumPy (its BLAS, OpenBLAS in the test venv), and NumPy's Gram throughput in
  GFLOP/s (2·d flops for every entry of the full products: an effective rate);
* psda's cost phases (Stage 1 and Stage 2 costs, as psda.match's progress
  callback reports them: the Gram products plus their epilogues, the RBF
  mixture's exponentials) as a throughput on the same flop count, and the
  whole Double-paired matching (costs + Stage 1 + Stage 2);
* the ratios whole / floor and costs / floor, the ratio of the CPU seconds
  (all threads) of the whole matching and of the floor (which stays
  meaningful when other jobs share the cores, wall times do not), and with
  ``--scipy`` the NumPy + SciPy reference (benchmarks/scipy_psda.py) and its
  ratio to psda.

Every ratio comes from timings taken in this process: the floor and psda's
matching alternately, then (with ``--scipy``) the reference, ``--repeat``
times each (3 by default), and each side's best run is kept, as timeit keeps
its best: other jobs on the machine only ever add time, so the best run is
the least noisy estimate of each side's own cost, and taking it on every
side treats them alike (before, the floor was the best of three and psda and
the reference one run each). Under load a short run still finds a quiet
window more easily than a long one, so the ratios lean a little against the
slower side. The phases are those of psda's best run (read from a callback
polled every 0.05 s).

Data (float32, scaled by 1/sqrt(d) so that squared distances are O(1)):
"gaussian" N(0, I) and N(0.2, I); "relu" max(0, g), g ~ N(0, I) and
N(0.3, I); "clustered" 65 class centres (as Office-Home's classes) with
within-class noise 0.5 and a domain shift.

Usage (from a checkout; a default run takes about a minute on 2 cores):
    python benchmarks/floor.py                       # the three kinds, 4000 x 4000, d = 512
    python benchmarks/floor.py --imbalanced          # + 12000x480 and 20000x1000, d = 256
    python benchmarks/floor.py --large               # + 40000x2000, d = 512 (minutes)
    python benchmarks/floor.py --cases 2000x2000:64 --kinds relu --scipy --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Dict, List, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import psda
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import psda

KINDS = ("gaussian", "relu", "clustered")
DEFAULT_CASES = ["4000x4000:512"]
IMBALANCED_CASES = ["12000x480:256", "20000x1000:256"]
LARGE_CASES = ["40000x2000:512"]


def make_data(kind: str, ns: int, nt: int, d: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Source and target features of one data kind (see the module doc)."""
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        s, t = rng.standard_normal((ns, d)), rng.standard_normal((nt, d)) + 0.2
    elif kind == "relu":
        s, t = np.maximum(rng.standard_normal((ns, d)), 0), np.maximum(rng.standard_normal((nt, d)) + 0.3, 0)
    elif kind == "clustered":
        centres = rng.standard_normal((65, d))
        shift = 0.3 * rng.standard_normal(d)
        s = centres[rng.integers(65, size=ns)] + 0.5 * rng.standard_normal((ns, d))
        t = centres[rng.integers(65, size=nt)] + shift + 0.5 * rng.standard_normal((nt, d))
    else:
        raise ValueError(f"kind = {kind!r}: want one of {KINDS}")
    scale = np.float32(1 / np.sqrt(d))
    return (s.astype(np.float32) * scale), (t.astype(np.float32) * scale)


def self_gram(x: np.ndarray, block: int = 4096) -> None:
    """x·xᵀ's upper triangle by blocks of rows, as NumPy's x @ x.T (BLAS
    syrk) does the half, without its crash: with 40,000 rows of 512 the
    OpenBLAS of NumPy 2.4.6 dies with a segmentation fault in x @ x.T."""
    for i in range(0, len(x), block):
        x[i : i + block] @ x[i:].T


def floor_seconds(s: np.ndarray, t: np.ndarray) -> Tuple[float, float]:
    """Wall time of the three float32 Gram products S·Tᵀ, S·Sᵀ, T·Tᵀ (the
    symmetric two by upper-triangle blocks, self_gram), and their CPU time
    (all threads)."""
    t0, c0 = time.perf_counter(), time.process_time()
    s @ t.T
    self_gram(s)
    self_gram(t)
    return time.perf_counter() - t0, time.process_time() - c0


def psda_seconds(s: np.ndarray, t: np.ndarray, k: int) -> Tuple[float, float, Dict[str, float]]:
    """Wall and CPU time (all threads) of psda.match (two stages, MMD-RBF)
    and its phases' wall times."""
    seen: Dict[str, float] = {}

    def progress(done: float, total: float, phase: str) -> None:
        seen.setdefault(phase, time.perf_counter())

    t0, c0 = time.perf_counter(), time.process_time()
    psda.match(s, t, batch_size=k, stages=2, progress=progress)
    end, cpu = time.perf_counter(), time.process_time() - c0
    order = ["stage 1 costs", "stage 1 assignment", "stage 2 costs", "stage 2 matching"]
    marks = [(p, seen[p]) for p in order if p in seen]
    phases = {}
    for i, (p, at) in enumerate(marks):
        start = t0 if i == 0 else at
        phases[p] = (marks[i + 1][1] if i + 1 < len(marks) else end) - start
    return end - t0, cpu, phases


def main(argv: List[str] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--cases", nargs="+", default=None, help="NSxNT:D sizes (default 4000x4000:512)")
    p.add_argument("--imbalanced", action="store_true", help="add " + " ".join(IMBALANCED_CASES))
    p.add_argument("--large", action="store_true", help="add " + " ".join(LARGE_CASES))
    p.add_argument("--scipy", action="store_true",
                   help="also time the NumPy + SciPy reference (slow: --repeat runs of it too)")
    p.add_argument("--k", type=int, default=32, help="batch size k")
    p.add_argument("--threads", type=int, default=None, help="psda.set_num_threads (default: all cores)")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs of the floor and of psda, alternately (each side's best is kept)")
    a = p.parse_args(argv)
    if a.repeat < 1:
        p.error(f"--repeat {a.repeat}: want at least 1 run of each side")
    cases = (a.cases or DEFAULT_CASES) + (IMBALANCED_CASES if a.imbalanced else []) + (LARGE_CASES if a.large else [])
    if a.threads is not None:
        psda.set_num_threads(a.threads)
    try:
        blas = str(np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"])
    except Exception:  # older NumPy: no dict mode
        blas = "?"
    print(f"psda {psda.core_version()}, {psda.get_num_threads()} threads; NumPy {np.__version__} ({blas}); "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    ref = None
    if a.scipy:
        sys.path.insert(0, HERE)
        import scipy_psda as ref  # noqa: E402
    head = ("kind", "ns x nt", "d", "floor s", "numpy GF/s", "costs s", "psda GF/s", "whole s", "whole/floor",
            "costs/floor", "cpu whole/floor", "ref s", "ref/psda")
    print(" | ".join(head))
    for case in cases:
        size, _, d = case.partition(":")
        ns, nt = (int(x) for x in size.split("x"))
        d = int(d or 512)
        for kind in a.kinds:
            s, t = make_data(kind, ns, nt, d, seed=26)
            flops = 2.0 * d * (ns * nt + ns * ns + nt * nt)
            (fl, fl_cpu), (whole, whole_cpu, phases) = (np.inf, 0.0), (np.inf, 0.0, {})
            for _ in range(a.repeat):
                fl, fl_cpu = min((fl, fl_cpu), floor_seconds(s, t))
                run = psda_seconds(s, t, a.k)
                if run[0] < whole:
                    whole, whole_cpu, phases = run
            costs = phases.get("stage 1 costs", 0) + phases.get("stage 2 costs", 0)
            row = [kind, f"{ns}x{nt}", str(d), f"{fl:.3f}", f"{flops / fl / 1e9:.0f}", f"{costs:.2f}",
                   f"{flops / costs / 1e9:.0f}" if costs > 0 else "-", f"{whole:.2f}", f"{whole / fl:.1f}",
                   f"{costs / fl:.1f}", f"{whole_cpu / fl_cpu:.1f}"]
            if ref is not None:
                r = np.inf
                for _ in range(a.repeat):
                    t0 = time.perf_counter()
                    ref.match(s.astype(np.float64), t.astype(np.float64), batch_size=a.k, stages=2)
                    r = min(r, time.perf_counter() - t0)
                row += [f"{r:.1f}", f"{r / whole:.1f}"]
            else:
                row += ["-", "-"]
            print(" | ".join(row), flush=True)
            print("    phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
