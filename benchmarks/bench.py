"""psda bench: psda against what a user would assemble from NumPy and SciPy.

Two comparisons, in one process on the same data:

* whole: psda.match(..., stages=2) (costs + Stage 1 + Stage 2 in the Go core)
  versus the NumPy + SciPy reference (benchmarks/scipy_psda.py): GEMM-built
  cost matrices, scipy.optimize.linear_sum_assignment for Stage 1 (column
  copies for imbalanced data) and a symmetric linear_sum_assignment for Stage 2.
  Both objective values are reported; Stage 1 is an exact problem, so the two
  Stage 1 objectives must agree (to rounding in the cost evaluation).
* assign: the assignment solvers alone on identical cost matrices (the
  reference's C^st, and C^MM with a forbidden diagonal): psda's dense solver
  versus SciPy and, when installed, lap.lapjv. Objectives must agree to 1e-9
  relative.

Usage (from a checkout):
    python benchmarks/bench.py                     # full grid (several minutes)
    python benchmarks/bench.py --n 1000 --d 2      # a subset
    psda bench --cases mmd-rbf --n 4000 --d 512    # the same via the psda command

Data: "relu" (default) is ReLU-like features, max(0, g) with g ~ N(0, 1) in the
source and N(0.3, 1) in the target; "gaussian" is N(0, I) in both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
try:
    import psda
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import psda

import scipy_psda as ref  # noqa: E402
from scipy.optimize import linear_sum_assignment as scipy_lsa  # noqa: E402

CASES = {
    "mmd-rbf": ("mmd", "rbf"),
    "mmd-linear": ("mmd", "linear"),
    "coral": ("coral", "rbf"),  # CORAL takes no kernel: psda.match refuses an explicit "linear"
}
RTOL = 1e-9


def make_data(kind: str, n_s: int, n_t: int, d: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        return rng.standard_normal((n_s, d)), rng.standard_normal((n_t, d))
    s = np.maximum(rng.standard_normal((n_s, d)), 0.0)
    t = np.maximum(rng.standard_normal((n_t, d)) + 0.3, 0.0)
    return s, t


def timed(fn: Callable, repeat: int):
    """Best wall time of ``repeat`` calls and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


# -- the assignment solvers on a given matrix ---------------------------------

def lap_lsa(c: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    import lap
    _, x, _ = lap.lapjv(c, extend_cost=c.shape[0] != c.shape[1])
    rows = np.flatnonzero(x >= 0)
    return rows, x[rows]


ENABLED = ("scipy", "psda", "lap")


def solvers() -> Dict[str, Callable]:
    """The assignment solvers available here, restricted to ENABLED (scipy always runs)."""
    out = {"scipy": scipy_lsa}
    try:
        import psda
        out["psda"] = psda.linear_sum_assignment
    except Exception:  # not built
        pass
    try:
        import lap  # noqa: F401
        out["lap"] = lap_lsa
    except ImportError:
        pass
    return {k: v for k, v in out.items() if k == "scipy" or k in ENABLED}


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


# -- the two comparisons ---------------------------------------------------

def bench_whole(s, t, k, discrepancy, kernel, repeat) -> Tuple[Dict, object]:
    t_ps, m_ps = timed(lambda: psda.match(s, t, batch_size=k, stages=2,
                                          discrepancy=discrepancy, kernel=kernel), repeat)
    t_ref, m_ref = timed(lambda: ref.match(s, t, batch_size=k, stages=2, discrepancy=discrepancy,
                                           kernel=kernel, keep_costs=True), repeat)
    row = dict(psda=t_ps, ref=t_ref, speedup=t_ref / t_ps,
               s1_psda=m_ps.stage1_cost, s1_ref=m_ref.stage1_cost,
               s1_rel=rel(m_ps.stage1_cost, m_ref.stage1_cost),
               s2_psda=m_ps.stage2_cost, s2_ref=m_ref.stage2_cost,
               b2_psda=m_ps.stage2_bound, b2_ref=m_ref.stage2_bound,
               ref_times=m_ref.times)
    return row, m_ref


def bench_assign(matrices: Dict[str, np.ndarray], repeat: int) -> List[Dict]:
    rows = []
    for name, c in matrices.items():
        res = {}
        for sname, fn in solvers().items():
            try:
                secs, (r, cidx) = timed(lambda: fn(c), repeat)
            except Exception as exc:  # report and go on
                res[sname] = (np.nan, np.nan, f"{type(exc).__name__}: {exc}")
                continue
            res[sname] = (secs, float(c[r, cidx].sum()), "")
        rows.append(dict(matrix=name, shape=c.shape, res=res))
    return rows


def forbid_diagonal(c: np.ndarray) -> np.ndarray:
    """C^MM with a forbidden diagonal as a large finite cost (psda rejects inf).

    For costs in [0, m], M = (n + 1) m is provably large enough: a permutation
    using M costs more than n m, the most any derangement can cost. A much
    larger M only adds floating-point range (with M = 1e6 max, psda's solver
    returned a 4e-9-suboptimal assignment on the d = 2 linear case).
    """
    out = c.copy()
    np.fill_diagonal(out, 0.0)
    m = float(np.abs(out).max())
    np.fill_diagonal(out, (len(out) + 1) * max(m, np.finfo(float).tiny))
    return out


# -- driver ----------------------------------------------------------------

def parse(argv):
    p = argparse.ArgumentParser(prog="psda bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", default="1000,4000", help="sizes n = n_s (comma separated)")
    p.add_argument("--d", default="2,512", help="feature dimensions (comma separated)")
    p.add_argument("--cases", default="mmd-rbf,mmd-linear,coral",
                   help="from: " + ", ".join(CASES))
    p.add_argument("--imbalanced", choices=("on", "off"), default="on",
                   help="add one imbalanced case: MMD-RBF, n_t = 3n/4, largest n and d")
    p.add_argument("--parts", default="whole,assign", help="whole and/or assign")
    p.add_argument("--k", type=int, default=32, help="batch size k (enters CORAL's costs)")
    p.add_argument("--data", choices=("relu", "gaussian"), default="relu")
    p.add_argument("--solvers", default="scipy,psda,lap",
                   help="assignment solvers for the 'assign' part (scipy always runs; lap is "
                        "slow on low-dimensional costs)")
    p.add_argument("--repeat", type=int, default=1, help="best of this many runs")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    a.n = [int(v) for v in a.n.split(",") if v]
    a.d = [int(v) for v in a.d.split(",") if v]
    a.cases = [c for c in a.cases.split(",") if c]
    a.parts = [c for c in a.parts.split(",") if c]
    bad = [c for c in a.cases if c not in CASES] + [x for x in a.parts if x not in ("whole", "assign")]
    if bad:
        p.error(f"unknown case/part {bad}")
    return a


def main(argv: Optional[List[str]] = None) -> int:
    global ENABLED
    a = parse(sys.argv[1:] if argv is None else argv)
    ENABLED = tuple(x for x in a.solvers.split(",") if x)
    plan = [(n, n, d, c) for n in a.n for d in a.d for c in a.cases]
    if a.imbalanced == "on":
        n = max(a.n)
        plan.append((n, 3 * n // 4, max(a.d), "mmd-rbf"))
    print(f"psda bench: data={a.data}, k={a.k}, repeat={a.repeat}, solvers: "
          f"{', '.join(solvers())}; psda core {safe_core_version()}")
    failures = 0
    for n_s, n_t, d, case in plan:
        disc, kern = CASES[case]
        s, t = make_data(a.data, n_s, n_t, d, a.seed)
        print(f"\n== {case}  n_s={n_s} n_t={n_t} d={d}")
        m_ref = None
        if "whole" in a.parts:
            try:
                row, m_ref = bench_whole(s, t, a.k, disc, kern, a.repeat)
            except Exception as exc:
                print(f"  whole matching: psda failed: {type(exc).__name__}: {exc}")
            else:
                rt = row["ref_times"]
                print(f"  whole Double-paired matching: psda {row['psda']:.3f} s   "
                      f"numpy+scipy {row['ref']:.3f} s "
                      f"(costs {rt['costs1'] + rt['costs2']:.2f}, stage1 {rt['stage1']:.2f}, "
                      f"stage2 {rt['stage2']:.2f})   speedup {row['speedup']:.1f}x")
                ok = row["s1_rel"] <= RTOL
                failures += not ok
                print(f"    stage1 objective: psda {row['s1_psda']:.12g}  scipy {row['s1_ref']:.12g}"
                      f"  rel.diff {row['s1_rel']:.1e} {'OK' if ok else 'MISMATCH'}")
                print(f"    stage2 objective: psda {row['s2_psda']:.12g} (bound {row['b2_psda']:.12g})"
                      f"  scipy {row['s2_ref']:.12g} (bound {row['b2_ref']:.12g})")
        if "assign" in a.parts:
            if m_ref is None:
                m_ref = ref.match(s, t, batch_size=a.k, stages=2, discrepancy=disc, kernel=kern,
                                  keep_costs=True)
            mats = {"C^st (stage 1" + (")" if n_s == n_t else ", rectangular LSAP)"): m_ref.c_st,
                    "C^MM (symmetric stage 2)": forbid_diagonal(m_ref.c_mm)}
            for row in bench_assign(mats, a.repeat):
                base = row["res"]["scipy"]
                print(f"  assignment alone on {row['matrix']} {row['shape'][0]}x{row['shape'][1]}:")
                for sname, (secs, obj, err) in row["res"].items():
                    if err:
                        print(f"    {sname:<6} failed: {err}")
                        continue
                    r = rel(obj, base[1])
                    ok = r <= RTOL
                    failures += not ok
                    print(f"    {sname:<6} {secs:8.3f} s  x{base[0] / secs:5.1f} vs scipy  "
                          f"objective {obj:.12g}  rel.diff {r:.1e} {'OK' if ok else 'MISMATCH'}")
                if "psda" not in row["res"]:
                    print("    psda   n/a: the psda package is not built here")
    print(f"\n{'all objectives agree' if not failures else f'{failures} objective mismatch(es)'}")
    return 1 if failures else 0


def safe_core_version() -> str:
    try:
        return psda.core_version()
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"


if __name__ == "__main__":
    sys.exit(main())
