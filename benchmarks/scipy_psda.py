"""An independent NumPy + SciPy implementation of PSDA, for tests and benchmarks.

This is what a user would assemble without psda: the paper's full cost
matrices built with NumPy GEMMs, Stage 1 with
``scipy.optimize.linear_sum_assignment`` and Stage 2 with a symmetric
``linear_sum_assignment`` whose cycles are turned into quadruplets. It shares
no code with the psda package; the paper (section "Method") is the
specification, ``docs/method.md`` the derivations.

Costs follow the paper exactly, with full values (no dropped constants):

* MMD, Stage 1:  ``C_ij = ||phi(s_i) - phi(t_j) - delta||^2 / k^2``
* MMD, Stage 2:  ``C_rq = ||w_r + w_q||^2 / k^2``, ``w_r = phi(s_{i_r}) - phi(t_{j_r}) - delta``
* CORAL, Stage 1: ``||Sigma_s^(i) - Sigma_t^(j) - (Sigma_s - Sigma_t)||_F^2`` with the paper's
  conditional covariances (its eq. for Sigma_s^(i)); Stage 2 likewise with Sigma_s^(i_r, i_q).
* With an odd number of pairs P, the pair left alone costs ``C(r, 0)``: the
  Stage 2 cost against a virtual pair sitting at the domain means (MMD: w = 0;
  CORAL: centred vectors 0).

Stage 1 (paper eqs. 3-5). Balanced: a plain square assignment. Imbalanced, with
the larger side as rows, n_r = q n_c + rem: every column (the smaller side) gets
q + 1 copies with identical costs and n_c - rem dummy rows are added, which cost
0 on each column's last (optional) copy and are forbidden (infinite cost) on the
q required copies. The square problem's optimum is exactly the paper's
constrained optimum: every column receives q or q + 1 rows.

Stage 2: ``linear_sum_assignment`` on C^MM with the diagonal forbidden (plus one
dummy node when P is odd, whose edges cost C(r, 0)). Half its optimum is a lower
bound on the optimal matching (a perfect matching read as a permutation costs
twice as much). The permutation's cycles are turned into quadruplets:

* 2-cycles are quadruplets as they are;
* an even cycle is split into its cheaper alternating half;
* an odd cycle of length L keeps the cheapest of its L paths of L - 1 vertices
  (one vertex left out), and all left-out vertices are then paired greedily,
  cheapest edge first. This is a heuristic: the result is not certified optimal
  when odd cycles occur (compare ``stage2_cost`` with ``stage2_bound``).

Run ``python benchmarks/scipy_psda.py`` for a quick timing on the paper's
variance setup.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence, Tuple

import numpy as np
from scipy.optimize import linear_sum_assignment

DEFAULT_GAMMAS: Tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0)

__all__ = [
    "DEFAULT_GAMMAS",
    "RefMatching",
    "kernel_matrix",
    "stage1_costs",
    "stage2_costs",
    "solve_stage1",
    "solve_stage2",
    "match",
    "batch_sampler",
]


# ----------------------------------------------------------------------------
# Kernels


def kernel_matrix(x: np.ndarray, y: np.ndarray, kernel: str = "rbf",
                  gammas: Sequence[float] = DEFAULT_GAMMAS) -> np.ndarray:
    """kernel_matrix returns K[i, j] = kappa(x_i, y_j) (one GEMM plus elementwise work).

    ``linear``: x_i . y_j; ``rbf``: sum over gammas of exp(-gamma ||x_i - y_j||^2).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    g = x @ y.T
    if kernel == "linear":
        return g
    if kernel != "rbf":
        raise ValueError(f"kernel = {kernel!r}: want 'linear' or 'rbf'")
    d2 = _sqdist(x, y, g)
    out = np.zeros_like(d2)
    tmp = np.empty_like(d2)
    for gamma in gammas:
        np.multiply(d2, -float(gamma), out=tmp)
        np.exp(tmp, out=tmp)
        out += tmp
    return out


@dataclass
class _MMDData:
    """Full-data kernel terms shared by the Stage 1 and Stage 2 MMD costs."""

    kernel: str
    # Linear kernel: explicit feature map phi(x) = x.
    s: np.ndarray
    t: np.ndarray
    delta_vec: Optional[np.ndarray] = None
    # RBF: kernel matrices and g(z) = <phi(z), delta>.
    kss: Optional[np.ndarray] = None
    ktt: Optional[np.ndarray] = None
    kst: Optional[np.ndarray] = None
    gs: Optional[np.ndarray] = None
    gt: Optional[np.ndarray] = None
    delta2: float = 0.0
    self_k: float = 0.0  # kappa(z, z) for the RBF mixture: len(gammas)


def _mmd_data(s, t, kernel, gammas) -> _MMDData:
    if kernel == "linear":
        delta = s.mean(0) - t.mean(0)
        return _MMDData(kernel, s, t, delta_vec=delta, delta2=float(delta @ delta))
    kss = kernel_matrix(s, s, kernel, gammas)
    ktt = kernel_matrix(t, t, kernel, gammas)
    kst = kernel_matrix(s, t, kernel, gammas)
    gs = kss.mean(1) - kst.mean(1)
    gt = kst.mean(0) - ktt.mean(1)
    delta2 = float(kss.mean() + ktt.mean() - 2.0 * kst.mean())
    return _MMDData(kernel, s, t, kss=kss, ktt=ktt, kst=kst, gs=gs, gt=gt,
                    delta2=delta2, self_k=float(len(gammas)))


def _sqdist(x, y, g=None):
    """Squared distances ||x_i - y_j||^2 by the expansion (g: x @ y.T, if known)."""
    norms = np.einsum("ij,ij->i", x, x)[:, None] + np.einsum("ij,ij->i", y, y)[None, :]
    d2 = norms - 2.0 * (x @ y.T if g is None else g)
    # The expansion cancels to rounding noise where a distance is small
    # against the norms (far from the origin, 1e30 say, identical points come
    # out at ±1e44); those entries are recomputed from the differences.
    i, j = np.nonzero(d2 <= 1e-6 * norms)
    if len(i):
        diff = x[i] - y[j]
        d2[i, j] = np.einsum("ij,ij->i", diff, diff)
    np.maximum(d2, 0.0, out=d2)
    return d2


# ----------------------------------------------------------------------------
# CORAL helpers


@dataclass
class _CoralData:
    a: np.ndarray       # centred source features
    b: np.ndarray       # centred target features
    sig_s: np.ndarray   # unbiased covariances
    sig_t: np.ndarray
    pop_s: np.ndarray   # (n-1)/n * Sigma
    pop_t: np.ndarray


def _coral_data(s, t) -> _CoralData:
    a = s - s.mean(0)
    b = t - t.mean(0)
    ns, nt = len(s), len(t)
    sig_s = a.T @ a / (ns - 1) if ns > 1 else np.zeros((s.shape[1],) * 2)
    sig_t = b.T @ b / (nt - 1) if nt > 1 else np.zeros((t.shape[1],) * 2)
    return _CoralData(a, b, sig_s, sig_t, (ns - 1) / ns * sig_s, (nt - 1) / nt * sig_t)


# ----------------------------------------------------------------------------
# Cost matrices


def _check(source, target, k, discrepancy, kernel):
    s = np.ascontiguousarray(source, dtype=np.float64)
    t = np.ascontiguousarray(target, dtype=np.float64)
    if s.ndim != 2 or t.ndim != 2 or s.shape[1] != t.shape[1]:
        raise ValueError(f"source {s.shape} and target {t.shape} must be 2-D with equal columns")
    if discrepancy not in ("mmd", "coral"):
        raise ValueError(f"discrepancy = {discrepancy!r}: want 'mmd' or 'coral'")
    if discrepancy == "mmd" and kernel not in ("linear", "rbf"):
        raise ValueError(f"kernel = {kernel!r}: want 'linear' or 'rbf'")
    if k < 1 or (discrepancy == "coral" and k < 2):
        raise ValueError(f"batch_size = {k}: need >= 1 (>= 2 for CORAL)")
    return s, t


def stage1_costs(source, target, batch_size: int, discrepancy: str = "mmd",
                 kernel: str = "rbf", gammas: Sequence[float] = DEFAULT_GAMMAS,
                 _data=None) -> np.ndarray:
    """stage1_costs returns the paper's C^st, an n_s x n_t float64 matrix (full values).

    MMD: ||phi(s_i) - phi(t_j) - delta||^2 / k^2. CORAL: the squared Frobenius
    norm of Sigma_s^(i) - Sigma_t^(j) - (Sigma_s - Sigma_t) with the paper's
    conditional covariances. Time O(n_s n_t d) (GEMM), memory O(n_s n_t + n^2) for RBF.
    """
    s, t = _check(source, target, batch_size, discrepancy, kernel)
    k = float(batch_size)
    if discrepancy == "mmd":
        md = _data if _data is not None else _mmd_data(s, t, kernel, gammas)
        if kernel == "linear":
            return _sqdist(s - md.delta_vec, t) / k**2
        row = md.self_k - 2.0 * md.gs
        col = md.self_k + 2.0 * md.gt
        return (row[:, None] + col[None, :] - 2.0 * md.kst + md.delta2) / k**2
    cd = _data if _data is not None else _coral_data(s, t)
    n_s, n_t = len(s), len(t)
    e = cd.sig_t / n_t - cd.sig_s / n_s
    aea = np.einsum("ij,jk,ik->i", cd.a, e, cd.a)
    beb = np.einsum("ij,jk,ik->i", cd.b, e, cd.b)
    na2 = np.einsum("ij,ij->i", cd.a, cd.a)
    nb2 = np.einsum("ij,ij->i", cd.b, cd.b)
    ab = cd.a @ cd.b.T
    c = -2.0 * ab * ab
    c += (na2 * na2)[:, None] + (nb2 * nb2)[None, :]
    c /= k * k
    c += (2.0 / k) * (aea[:, None] - beb[None, :])
    c += float(np.sum(e * e))
    return c


def _pair_arrays(pairs):
    pairs = np.asarray(pairs, dtype=np.int64)
    return pairs[:, 0], pairs[:, 1]


def stage2_costs(source, target, pairs, batch_size: int, discrepancy: str = "mmd",
                 kernel: str = "rbf", gammas: Sequence[float] = DEFAULT_GAMMAS,
                 _data=None) -> Tuple[np.ndarray, np.ndarray]:
    """stage2_costs returns (C^MM, single) for the Stage 1 ``pairs`` (P x 2: source, target).

    C^MM is the paper's P x P Stage 2 cost with full values (its diagonal is
    the formula at r = q, not forbidden here); single[r] = C(r, 0) is the cost
    of pair r grouped with the virtual pair at the domain means. Time
    O(P^2 d), memory a few P x P matrices.
    """
    s, t = _check(source, target, batch_size, discrepancy, kernel)
    ir, jr = _pair_arrays(pairs)
    k = float(batch_size)
    if discrepancy == "mmd":
        md = _data if _data is not None else _mmd_data(s, t, kernel, gammas)
        if kernel == "linear":
            w = s[ir] - t[jr] - md.delta_vec
            gram = w @ w.T
        else:
            kst_rq = md.kst[np.ix_(ir, jr)]
            gram = md.kss[np.ix_(ir, ir)] + md.ktt[np.ix_(jr, jr)]
            gram -= kst_rq
            gram -= kst_rq.T
            gw = md.gs[ir] - md.gt[jr]
            gram -= gw[:, None]
            gram -= gw[None, :]
            gram += md.delta2
        norms = np.diag(gram).copy()
        c = 2.0 * gram
        c += norms[:, None]
        c += norms[None, :]
        c /= k**2
        return c, norms / k**2
    cd = _data if _data is not None else _coral_data(s, t)
    return _coral_stage2(cd, ir, jr, int(batch_size), len(s), len(t))


def _coral_stage2(cd: _CoralData, ir, jr, k: int, n_s: int, n_t: int, block: int = 256):
    """CORAL C^MM via ||c0 + V M V^T||_F^2 with V = [a_r, a_q, b_r, b_q].

    The paper's Stage 2 conditional covariance gives
    Sigma_s^(r,q) - Sigma_t^(r,q) - (Sigma_s - Sigma_t) = c0 + V M V^T with the
    constant c0 = (k-2)/(k-1) (P_s - P_t) - (Sigma_s - Sigma_t) and the 4 x 4
    coefficient matrix M below, so the squared norm is
    ||c0||^2 + 2 sum M_mn v_m^T c0 v_n + tr(M G M G), G = V^T V: only inner
    products between the four vectors are needed (P x P GEMMs).
    """
    c0 = (k - 2) / (k - 1) * (cd.pop_s - cd.pop_t) - (cd.sig_s - cd.sig_t)
    al, be = (1.0 - 1.0 / k) / (k - 1), (-1.0 / k) / (k - 1)
    m = np.array([[al, be, 0, 0], [be, al, 0, 0], [0, 0, -al, -be], [0, 0, -be, -al]])
    A, B = cd.a[ir], cd.b[jr]
    Ac, Bc = A @ c0, B @ c0
    # Plain and c0-weighted inner products: per-pair (diagonal) terms and P x P cross terms.
    full = {"aa": A @ A.T, "bb": B @ B.T, "ab": A @ B.T,
            "aca": Ac @ A.T, "bcb": Bc @ B.T, "acb": Ac @ B.T}
    diag = {key: np.einsum("ij,ij->i", *pair) for key, pair in
            {"aa": (A, A), "bb": (B, B), "ab": (A, B),
             "aca": (Ac, A), "bcb": (Bc, B), "acb": (Ac, B)}.items()}
    P = len(ir)
    c = np.empty((P, P))
    c0n = float(np.sum(c0 * c0))

    def entries(kind, lo, hi):
        # g[m][n] = v_m . v_n (kind "") or v_m^T c0 v_n (kind "c") for rows lo:hi.
        aa, bb, ab = ("aa", "bb", "ab") if kind == "" else ("aca", "bcb", "acb")
        d = {key: diag[key] for key in (aa, bb, ab)}
        rr = {key: d[key][lo:hi, None] for key in d}
        qq = {key: d[key][None, :] for key in d}
        x_aa, x_bb = full[aa][lo:hi], full[bb][lo:hi]
        x_ab = full[ab][lo:hi]          # a_r . b_q
        x_ba = full[ab][:, lo:hi].T     # a_q . b_r
        g = [[rr[aa], x_aa, rr[ab], x_ab],
             [x_aa, qq[aa], x_ba, qq[ab]],
             [rr[ab], x_ba, rr[bb], x_bb],
             [x_ab, qq[ab], x_bb, qq[bb]]]
        return g

    nz = [(i, j, m[i, j]) for i in range(4) for j in range(4) if m[i, j] != 0]
    for lo in range(0, P, block):
        hi = min(lo + block, P)
        g = entries("", lo, hi)
        h = entries("c", lo, hi)
        acc = np.full((hi - lo, P), c0n)
        for i, j, mij in nz:
            acc += (2.0 * mij) * h[i][j]
        # tr(M G M G) = sum_{i,l} Y_il Y_li with Y = M G.
        y = [[sum(mij * g[j][l] for (i2, j, mij) in nz if i2 == i) for l in range(4)]
             for i in range(4)]
        for i in range(4):
            for l in range(4):
                acc += y[i][l] * y[l][i]
        c[lo:hi] = acc
    # The virtual pair at the domain means: a_q = b_q = 0.
    single = (c0n + 2.0 * al * (diag["aca"] - diag["bcb"])
              + al * al * (diag["aa"] ** 2 + diag["bb"] ** 2 - 2.0 * diag["ab"] ** 2))
    return c, single


# ----------------------------------------------------------------------------
# Solvers


def solve_stage1(c: np.ndarray) -> Tuple[np.ndarray, float]:
    """solve_stage1 solves the paper's eqs. 3-5 on the n_s x n_t cost matrix c.

    It returns (pairs, cost): pairs is a (max(n_s, n_t), 2) int64 array of
    (source, target) ordered by the index on the larger side (by source when
    n_s >= n_t) and cost the sum of c over the pairs. Imbalanced problems are
    expanded to a square one with column copies and dummy rows (see module doc).
    """
    c = np.asarray(c, dtype=np.float64)
    n_s, n_t = c.shape
    transposed = n_t > n_s
    cr = c.T if transposed else c
    nr, nc = cr.shape
    if nr == nc:
        rows, cols = linear_sum_assignment(cr)
    else:
        q, rem = divmod(nr, nc)
        big = np.empty((nr + nc - rem, (q + 1) * nc))
        big[:nr] = np.repeat(cr, q + 1, axis=1)   # column c*(q+1)+m is copy m of column c
        big[nr:] = np.inf
        big[nr:, q::q + 1] = 0.0                  # dummies may only take the optional copy
        rows, cols = linear_sum_assignment(big)
        keep = rows < nr
        rows, cols = rows[keep], cols[keep] // (q + 1)
    order = np.argsort(rows)
    rows, cols = rows[order], cols[order]
    pairs = np.stack([cols, rows], 1) if transposed else np.stack([rows, cols], 1)
    pairs = pairs.astype(np.int64)
    return pairs, float(c[pairs[:, 0], pairs[:, 1]].sum())


def _path_pairs(path):
    return [(path[m], path[m + 1]) for m in range(0, len(path) - 1, 2)]


def solve_stage2(cmm: np.ndarray, single: Optional[np.ndarray] = None):
    """solve_stage2 groups P pairs into quadruplets from the P x P cost cmm.

    It returns (quads, singles, cost, bound): quads (Q, 2) int64 indices into the
    pairs (r < q), singles the index of the pair left alone (odd P; its cost is
    single[r]), cost the sum of the chosen costs and bound half the optimum of
    the symmetric assignment (a lower bound on the optimal cost). Time: one
    (P+1)^2 linear_sum_assignment plus O(P) for the cycles.
    """
    cmm = np.asarray(cmm, dtype=np.float64)
    P = len(cmm)
    n = P + (P % 2)
    c = np.empty((n, n))
    c[:P, :P] = cmm
    if n > P:
        if single is None:
            raise ValueError("odd number of pairs: single costs are required")
        c[:P, P] = single
        c[P, :P] = single
    np.fill_diagonal(c, np.inf)
    _, perm = linear_sum_assignment(c)
    bound = float(c[np.arange(n), perm].sum()) / 2.0

    seen = np.zeros(n, bool)
    matched = []
    pool = []
    for start in range(n):
        if seen[start]:
            continue
        cyc = [start]
        seen[start] = True
        v = perm[start]
        while v != start:
            cyc.append(int(v))
            seen[v] = True
            v = perm[v]
        L = len(cyc)
        if L == 2:
            matched.append((cyc[0], cyc[1]))
        elif L % 2 == 0:
            h1 = _path_pairs(cyc)
            h2 = _path_pairs(cyc[1:] + cyc[:1])
            cost1 = sum(c[a, b] for a, b in h1)
            cost2 = sum(c[a, b] for a, b in h2)
            matched.extend(h1 if cost1 <= cost2 else h2)
        else:
            best, best_cost = None, np.inf
            for m in range(L):
                path = cyc[m + 1:] + cyc[:m]
                pp = _path_pairs(path)
                pc = sum(c[a, b] for a, b in pp)
                if pc < best_cost:
                    best, best_cost, left = pp, pc, cyc[m]
            matched.extend(best)
            pool.append(left)
    if pool:
        # Greedy: cheapest edge first among the vertices the odd cycles left out.
        pool = np.array(pool)
        sub = c[np.ix_(pool, pool)]
        iu = np.triu_indices(len(pool), 1)
        order = np.argsort(sub[iu], kind="stable")
        free = np.ones(len(pool), bool)
        for e in order:
            a, b = iu[0][e], iu[1][e]
            if free[a] and free[b]:
                free[a] = free[b] = False
                matched.append((int(pool[a]), int(pool[b])))
    quads, singles, cost = [], [], 0.0
    for a, b in matched:
        a, b = min(a, b), max(a, b)
        cost += c[a, b]
        if b >= P:
            singles.append(a)
        else:
            quads.append((a, b))
    quads = np.array(sorted(quads), dtype=np.int64).reshape(-1, 2)
    return quads, np.array(singles, dtype=np.int64), float(cost), bound


# ----------------------------------------------------------------------------
# Whole matching


@dataclass
class RefMatching:
    """RefMatching mirrors psda.Matching, plus the cost matrices and timings."""

    pairs: np.ndarray
    quads: np.ndarray
    singles: np.ndarray
    stage1_cost: float
    stage2_cost: float
    stage2_bound: float
    c_st: Optional[np.ndarray] = None
    c_mm: Optional[np.ndarray] = None
    c_single: Optional[np.ndarray] = None
    times: Dict[str, float] = field(default_factory=dict)


def match(source, target, *, batch_size: int, stages: int = 2, discrepancy: str = "mmd",
          kernel: str = "rbf", gammas: Sequence[float] = DEFAULT_GAMMAS,
          keep_costs: bool = False) -> RefMatching:
    """match is the NumPy + SciPy PSDA: same arguments and fields as psda.match.

    ``times`` records seconds for "costs1" (full-data kernel terms and C^st),
    "stage1", "costs2" and "stage2". With keep_costs the cost matrices are kept.
    """
    if stages not in (1, 2):
        raise ValueError(f"stages = {stages}: want 1 or 2")
    s, t = _check(source, target, batch_size, discrepancy, kernel)
    times = {}
    t0 = time.perf_counter()
    data = _mmd_data(s, t, kernel, gammas) if discrepancy == "mmd" else _coral_data(s, t)
    cst = stage1_costs(s, t, batch_size, discrepancy, kernel, gammas, _data=data)
    times["costs1"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    pairs, cost1 = solve_stage1(cst)
    times["stage1"] = time.perf_counter() - t0
    P = len(pairs)
    out = RefMatching(pairs, np.zeros((0, 2), np.int64), np.arange(P, dtype=np.int64),
                      cost1, 0.0, 0.0, times=times)
    if keep_costs:
        out.c_st = cst
    if stages == 2:
        t0 = time.perf_counter()
        cmm, single = stage2_costs(s, t, pairs, batch_size, discrepancy, kernel, gammas,
                                   _data=data)
        times["costs2"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        out.quads, out.singles, out.stage2_cost, out.stage2_bound = solve_stage2(cmm, single)
        times["stage2"] = time.perf_counter() - t0
        if keep_costs:
            out.c_mm, out.c_single = cmm, single
    return out


def batch_sampler(ref: RefMatching, n_source: int, n_target: int, batch_size: int, *, stages: int = 2,
                  seed: int = 0, discrepancy: str = "mmd", kernel: str = "rbf",
                  gammas: Sequence[float] = DEFAULT_GAMMAS):
    """batch_sampler serves a reference matching as psda serves its own: a
    psda.PairedBatchSampler subclass whose plan is ``ref`` (checked by the
    same coverage rule), cut into epochs by the same Go schedule, so that
    ``psda variance`` compares matchings and nothing else.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> s, t = rng.normal(size=(8, 2)), rng.normal(size=(8, 2))
        >>> len(batch_sampler(match(s, t, batch_size=2), 8, 8, 2))
        4
    """
    import psda
    from psda.samplers.paired import PairedBatchSampler

    class _RefSampler(PairedBatchSampler):
        def _build(self, s_, t_):
            quads = ref.quads if stages == 2 else np.zeros((0, 2), np.int64)
            singles = ref.singles if stages == 2 else np.arange(len(ref.pairs))
            return psda.Matching(pairs=ref.pairs, quads=np.asarray(quads).reshape(-1, 2), singles=singles,
                                 stage1_cost=float(ref.stage1_cost), stage2_cost=float(ref.stage2_cost),
                                 stage2_bound=float(ref.stage2_bound), n_source=n_source, n_target=n_target,
                                 batch_size=batch_size, stages=stages, discrepancy=self.discrepancy,
                                 kernel=self.kernel, gammas=self.gammas)

    kw = {"kernel": kernel} if discrepancy == "mmd" else {}
    return _RefSampler(np.zeros((n_source, 1)), np.zeros((n_target, 1)), batch_size, stages=stages, seed=seed,
                       discrepancy=discrepancy, gammas=gammas, num_replicas=1, rank=0, **kw)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    src, tgt = rng.standard_normal((4000, 2)), rng.standard_normal((4000, 2))
    r = match(src, tgt, batch_size=2, kernel="linear")
    print({k: round(v, 3) for k, v in r.times.items()},
          "gap", (r.stage2_cost - r.stage2_bound) / r.stage2_bound)
