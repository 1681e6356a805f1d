"""Shared fixtures and independent references for the psda tests.

The references evaluate the paper's cost definitions (section "Cost
computation") directly, without the algebra the Go core uses to make them
cheap:

* MMD: every element of the RKHS that appears is a combination of the
  feature maps of the n_s + n_t data points, so it is represented by its
  coefficient vector c and its squared norm is cᵀKc, K the Gram matrix of all
  points. C^st_ij = ‖φ(s_i) − φ(t_j) − δ‖²/k² and
  C^MM_rq = ‖w_r + w_q‖²/k² are evaluated literally that way.
* CORAL: the conditional covariance matrices of the paper are built as
  explicit d×d matrices and the Frobenius norm taken.

Optima come from SciPy's linear_sum_assignment (Stage 1, the imbalanced case as
an exact square problem with dummy rows), networkx's blossom matching (Stage
2) and exhaustive enumeration for tiny problems.
"""

from __future__ import annotations

import itertools
from typing import List, Sequence, Tuple

import numpy as np
import pytest

GAMMAS = (0.001, 0.01, 0.1, 1.0, 10.0)

#: Configurations as (discrepancy, kernel) covering every cost.
COSTS = [("mmd", "linear"), ("mmd", "rbf"), ("coral", "rbf")]


# ---------------------------------------------------------------------------
# Costs from the definitions
# ---------------------------------------------------------------------------


def gram(x: np.ndarray, y: np.ndarray, kernel: str, gammas: Sequence[float] = GAMMAS) -> np.ndarray:
    """κ(x_i, y_j) for the linear kernel or the RBF mixture Σ_γ exp(−γ‖x−y‖²)."""
    if kernel == "linear":
        return x @ y.T
    d2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return sum(np.exp(-g * d2) for g in gammas)


class MMDRef:
    """The MMD costs in coefficient space (see module docstring)."""

    def __init__(self, s, t, k, kernel, gammas=GAMMAS):
        s, t = np.asarray(s, np.float64), np.asarray(t, np.float64)
        self.ns, self.nt, self.k = len(s), len(t), k
        z = np.concatenate([s, t])
        self.K = gram(z, z, kernel, gammas)
        n = self.ns + self.nt
        self.delta = np.concatenate([np.full(self.ns, 1 / self.ns), np.full(self.nt, -1 / self.nt)])
        self.es = np.eye(n)[: self.ns]  # φ(s_i)
        self.et = np.eye(n)[self.ns :]  # φ(t_j)

    def norm2(self, c: np.ndarray) -> np.ndarray:
        """‖Σ_a c_a φ(z_a)‖² for every row c."""
        return np.einsum("...a,ab,...b->...", c, self.K, c)

    def stage1(self) -> np.ndarray:
        c = self.es[:, None, :] - self.et[None, :, :] - self.delta
        return self.norm2(c) / self.k**2

    def w(self, pairs: np.ndarray) -> np.ndarray:
        return self.es[pairs[:, 0]] - self.et[pairs[:, 1]] - self.delta

    def stage2(self, pairs: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(C^MM over pairs, cost of each pair left single: w_∅ = 0)."""
        w = self.w(pairs)
        return self.norm2(w[:, None, :] + w[None, :, :]) / self.k**2, self.norm2(w) / self.k**2


class CoralRef:
    """The CORAL costs with explicit d×d conditional covariances (the paper's formulas)."""

    def __init__(self, s, t, k):
        s, t = np.asarray(s, np.float64), np.asarray(t, np.float64)
        self.ns, self.nt, self.k = len(s), len(t), k
        self.a, self.b = s - self._mean(s), t - self._mean(t)
        self.Ss, self.St = self._cov(s), self._cov(t)
        self.D = self.Ss - self.St

    @staticmethod
    def _mean(x):
        """The column means, correctly rounded (exact sums of Fractions), so
        that identical rows centre to exactly 0."""
        from fractions import Fraction

        return np.array([float(sum(map(Fraction, col.tolist()), Fraction(0)) / len(x)) for col in x.T])

    @staticmethod
    def _cov(x):
        """The sample covariance; 0 for one example (the paper leaves it undefined)."""
        d = x.shape[1]
        return np.cov(x, rowvar=False, ddof=1).reshape(d, d) if len(x) > 1 else np.zeros((d, d))

    def _cond1(self, S, n, z):
        k = self.k
        return ((n - 1) / n * (k - 1) * S + (k - 1) / k * np.einsum("...i,...j->...ij", z, z)) / (k - 1)

    def _cond2(self, S, n, zr, zq):
        k = self.k
        outer = lambda u: np.einsum("...i,...j->...ij", u, u)  # noqa: E731
        return ((n - 1) / n * (k - 2) * S + outer(zr) + outer(zq) - outer(zr + zq) / k) / (k - 1)

    def stage1(self) -> np.ndarray:
        cs = self._cond1(self.Ss, self.ns, self.a)[:, None]
        ct = self._cond1(self.St, self.nt, self.b)[None, :]
        return ((cs - ct - self.D) ** 2).sum((-1, -2))

    def stage2(self, pairs: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        ar, br = self.a[pairs[:, 0]], self.b[pairs[:, 1]]
        cs = self._cond2(self.Ss, self.ns, ar[:, None], ar[None, :])
        ct = self._cond2(self.St, self.nt, br[:, None], br[None, :])
        full = ((cs - ct - self.D) ** 2).sum((-1, -2))
        z = np.zeros_like(ar)  # the dummy pair sits at the means
        single = ((self._cond2(self.Ss, self.ns, ar, z) - self._cond2(self.St, self.nt, br, z) - self.D) ** 2).sum((-1, -2))
        return full, single


def reference(s, t, k, discrepancy, kernel, gammas=GAMMAS):
    """The reference cost object for a configuration."""
    if discrepancy == "coral":
        return CoralRef(s, t, k)
    return MMDRef(s, t, k, kernel, gammas)


# ---------------------------------------------------------------------------
# Optima
# ---------------------------------------------------------------------------


def smaller_side_bounds(ns: int, nt: int) -> Tuple[int, int]:
    """(min, max) uses of an example of the smaller side (paper eqs. 4–5)."""
    big, small = max(ns, nt), min(ns, nt)
    return max(big // small, 1), -(-big // small)


def scipy_stage1(C: np.ndarray) -> float:
    """Optimal Stage 1 objective by SciPy, imbalanced case as an exact square problem.

    Rows are the larger side. With n_big = q·n_small + r every small-side
    column gets q required copies and one optional copy; n_small − r dummy
    rows cost 0 on the optional copies and are forbidden (inf) on the required
    ones, so exactly r small-side examples take a (q+1)-th use.
    """
    from scipy.optimize import linear_sum_assignment

    if C.shape[0] < C.shape[1]:
        C = C.T
    nb, ns = C.shape
    q, r = divmod(nb, ns)
    if r == 0:
        big = np.tile(C, (1, q))
    else:
        big = np.tile(C, (1, q + 1))
        dummy = np.full((ns - r, ns * (q + 1)), np.inf)
        dummy[:, ns * q :] = 0.0
        big = np.vstack([big, dummy])
    rows, cols = linear_sum_assignment(big)
    return float(big[rows, cols].sum())


def brute_stage1(C: np.ndarray) -> float:
    """Optimal Stage 1 objective by enumerating every feasible assignment (tiny n)."""
    transposed = C.shape[0] < C.shape[1]
    if transposed:
        C = C.T
    nb, ns = C.shape
    lo, hi = smaller_side_bounds(nb, ns)
    best = np.inf
    for f in itertools.product(range(ns), repeat=nb):
        counts = np.bincount(f, minlength=ns)
        if counts.min() >= lo and counts.max() <= hi:
            best = min(best, float(C[np.arange(nb), f].sum()))
    return best


def perfect_matchings(items: List[int]):
    """Every perfect matching of an even-length list, as lists of 2-tuples."""
    if not items:
        yield []
        return
    a, rest = items[0], items[1:]
    for i, b in enumerate(rest):
        for m in perfect_matchings(rest[:i] + rest[i + 1 :]):
            yield [(a, b)] + m


def brute_stage2(C2: np.ndarray, single: np.ndarray) -> float:
    """Optimal Stage 2 objective by enumeration: quadruplets plus at most one single pair."""
    p = len(C2)
    options = [None] if p % 2 == 0 else list(range(p))
    best = np.inf
    for s in options:
        items = [r for r in range(p) if r != s]
        base = 0.0 if s is None else float(single[s])
        for m in perfect_matchings(items):
            best = min(best, base + sum(float(C2[a, b]) for a, b in m))
    return best


def blossom_stage2(C2: np.ndarray, single: np.ndarray) -> float:
    """Optimal Stage 2 objective by networkx's exact blossom algorithm (dummy node for odd P)."""
    nx = pytest.importorskip("networkx")
    p = len(C2)
    g = nx.Graph()
    for r in range(p):
        for q in range(r + 1, p):
            g.add_edge(r, q, weight=float(C2[r, q]))
        if p % 2:
            g.add_edge(r, p, weight=float(single[r]))
    m = nx.min_weight_matching(g)
    assert 2 * len(m) == p + p % 2
    return float(sum(g[a][b]["weight"] for a, b in m))


def relaxation_stage2(C2: np.ndarray, single: np.ndarray) -> float:
    """Half the optimum of the symmetric assignment relaxation (diagonal forbidden)."""
    from scipy.optimize import linear_sum_assignment

    p = len(C2)
    m = p + p % 2
    full = np.zeros((m, m))
    full[:p, :p] = C2
    if p % 2:
        full[:p, p] = full[p, :p] = single
    np.fill_diagonal(full, np.inf)
    rows, cols = linear_sum_assignment(full)
    return float(full[rows, cols].sum()) / 2


def matching_costs(m, s, t) -> Tuple[float, float]:
    """(Stage 1, Stage 2) objectives of a psda.Matching recomputed from the definitions."""
    ref = reference(s, t, m.batch_size, m.discrepancy, m.kernel, m.gammas)
    c1 = float(ref.stage1()[m.pairs[:, 0], m.pairs[:, 1]].sum())
    if m.stages == 1:
        return c1, 0.0
    C2, single = ref.stage2(m.pairs)
    c2 = float(C2[m.quads[:, 0], m.quads[:, 1]].sum() + single[m.singles].sum())
    return c1, c2


def rel_close(a: float, b: float, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    """|a − b| within rtol relative, or atol absolute (costs here are O(1); exact zeros round)."""
    return abs(a - b) <= max(rtol * max(abs(a), abs(b)), atol)


# ---------------------------------------------------------------------------
# Structure checks and data
# ---------------------------------------------------------------------------


def check_matching_structure(m, ns: int, nt: int, stages: int) -> None:
    """Asserts the invariants of a psda.Matching (shapes, coverage, multiplicities, units)."""
    p = max(ns, nt)
    assert m.pairs.dtype == np.int64 and m.pairs.shape == (p, 2)
    assert m.quads.dtype == np.int64 and m.quads.ndim == 2 and m.quads.shape[1] == 2
    assert m.singles.dtype == np.int64 and m.singles.ndim == 1
    cs = np.bincount(m.pairs[:, 0], minlength=ns)
    ct = np.bincount(m.pairs[:, 1], minlength=nt)
    assert len(cs) == ns and len(ct) == nt
    lo, hi = smaller_side_bounds(ns, nt)
    big, small = (cs, ct) if ns >= nt else (ct, cs)
    assert (big == 1).all()
    assert small.min() >= lo and small.max() <= hi
    units = np.concatenate([m.quads.ravel(), m.singles])
    assert sorted(units.tolist()) == list(range(p))
    if stages == 1:
        assert len(m.quads) == 0 and len(m.singles) == p
    else:
        assert len(m.singles) == p % 2


def features(rng: np.random.Generator, ns: int, nt: int, d: int = 3, shift: float = 0.5, dtype=np.float64):
    """Two Gaussian domains with a mean shift."""
    s = rng.normal(size=(ns, d)).astype(dtype)
    t = (rng.normal(size=(nt, d)) + shift).astype(dtype)
    return s, t


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


# ---------------------------------------------------------------------------
# torch helpers (imported lazily: the match tests do not need torch)
# ---------------------------------------------------------------------------


def index_datasets(ns: int, nt: int):
    """ConcatDataset of a source and a target dataset whose items are (domain, own index)."""
    import torch
    from torch.utils.data import ConcatDataset, Dataset

    class Indexed(Dataset):
        def __init__(self, domain: int, n: int):
            self.domain, self.n = domain, n

        def __len__(self) -> int:
            return self.n

        def __getitem__(self, i: int):
            if not 0 <= i < self.n:
                raise IndexError(i)
            return torch.tensor([self.domain, i])

    return ConcatDataset([Indexed(0, ns), Indexed(1, nt)]), Indexed(0, ns), Indexed(1, nt)


def split_loader_batch(batch, ns: int) -> Tuple[List[int], List[int]]:
    """(source indices, target indices) of a collated (2k, 2) batch; checks the domains."""
    arr = batch.numpy()
    k = len(arr) // 2
    assert (arr[:k, 0] == 0).all() and (arr[k:, 0] == 1).all()
    return arr[:k, 1].tolist(), arr[k:, 1].tolist()
