"""Tests of the NumPy + SciPy reference PSDA (benchmarks/scipy_psda.py).

The reference's vectorised costs are checked against the paper's formulas
evaluated literally on tiny inputs (weighted sums of kernel values in
naive loops for the RKHS norms; explicit d x d covariance matrices for
CORAL), and its solvers against exhaustive enumeration.
"""

import itertools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import scipy_psda as ref  # noqa: E402

GAMMAS = (0.1, 1.0, 3.0)


def kappa(x, y, kernel, gammas=GAMMAS):
    if kernel == "linear":
        return float(np.dot(x, y))
    return float(sum(np.exp(-g * np.sum((x - y) ** 2)) for g in gammas))


def rkhs_norm2(terms, kernel):
    """||sum_m c_m phi(z_m)||^2 for a list of (c_m, z_m), by a double loop."""
    return sum(c1 * c2 * kappa(z1, z2, kernel) for c1, z1 in terms for c2, z2 in terms)


def delta_terms(s, t, coef=1.0):
    """coef * (mu_s - mu_t) as weighted points."""
    return ([(coef / len(s), z) for z in s] + [(-coef / len(t), z) for z in t])


def data(n_s, n_t, d, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n_s, d)), rng.standard_normal((n_t, d)) + 0.3


SHAPES = {"balanced": (5, 5, 3), "more source": (6, 4, 2), "more target": (3, 5, 4)}


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("shape", SHAPES.keys())
def test_mmd_stage1_costs_match_paper(shape, kernel):
    n_s, n_t, d = SHAPES[shape]
    s, t = data(n_s, n_t, d, 1)
    k = 4
    got = ref.stage1_costs(s, t, k, "mmd", kernel, GAMMAS)
    want = np.empty((n_s, n_t))
    for i in range(n_s):
        for j in range(n_t):
            terms = [(1.0, s[i]), (-1.0, t[j])] + delta_terms(s, t, -1.0)
            want[i, j] = rkhs_norm2(terms, kernel) / k**2
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_mmd_stage2_costs_match_paper(kernel):
    s, t = data(5, 4, 3, 2)
    k = 6
    pairs = np.array([[0, 1], [1, 0], [2, 3], [3, 2], [4, 1]])
    got, single = ref.stage2_costs(s, t, pairs, k, "mmd", kernel, GAMMAS)
    for r, (ir, jr) in enumerate(pairs):
        w_r = [(1.0, s[ir]), (-1.0, t[jr])] + delta_terms(s, t, -1.0)
        assert single[r] == pytest.approx(rkhs_norm2(w_r, kernel) / k**2, rel=1e-10, abs=1e-12)
        for q, (iq, jq) in enumerate(pairs):
            terms = ([(1.0, s[ir]), (1.0, s[iq]), (-1.0, t[jr]), (-1.0, t[jq])]
                     + delta_terms(s, t, -2.0))
            assert got[r, q] == pytest.approx(rkhs_norm2(terms, kernel) / k**2,
                                              rel=1e-10, abs=1e-12)


def cov_unbiased(x):
    m = x.mean(0)
    return sum(np.outer(z - m, z - m) for z in x) / (len(x) - 1)


def cond_cov1(x, i, k):
    """Paper: E[Sigma_hat | i in B], literally."""
    n = len(x)
    z = x[i] - x.mean(0)
    return ((n - 1) / n * (k - 1) * cov_unbiased(x) + (k - 1) / k * np.outer(z, z)) / (k - 1)


def cond_cov2(x, i, j, k, virtual_j=False):
    """Paper: E[Sigma_hat | i, j in B], literally (virtual_j: z_j is the mean, centred 0)."""
    n = len(x)
    zi = x[i] - x.mean(0)
    zj = np.zeros_like(zi) if virtual_j else x[j] - x.mean(0)
    return ((n - 1) / n * (k - 2) * cov_unbiased(x) + np.outer(zi, zi) + np.outer(zj, zj)
            - np.outer(zi + zj, zi + zj) / k) / (k - 1)


@pytest.mark.parametrize("shape", SHAPES.keys())
@pytest.mark.parametrize("k", [2, 5])
def test_coral_stage1_costs_match_paper(shape, k):
    n_s, n_t, d = SHAPES[shape]
    s, t = data(n_s, n_t, d, 3)
    got = ref.stage1_costs(s, t, k, "coral")
    D = cov_unbiased(s) - cov_unbiased(t)
    for i in range(n_s):
        for j in range(n_t):
            x = cond_cov1(s, i, k) - cond_cov1(t, j, k) - D
            assert got[i, j] == pytest.approx(np.sum(x * x), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("k", [2, 4, 7])
def test_coral_stage2_costs_match_paper(k):
    s, t = data(5, 4, 3, 4)
    pairs = np.array([[0, 1], [1, 0], [2, 3], [3, 2], [4, 1]])
    got, single = ref.stage2_costs(s, t, pairs, k, "coral")
    D = cov_unbiased(s) - cov_unbiased(t)
    for r, (ir, jr) in enumerate(pairs):
        x = cond_cov2(s, ir, 0, k, True) - cond_cov2(t, jr, 0, k, True) - D
        assert single[r] == pytest.approx(np.sum(x * x), rel=1e-10, abs=1e-12)
        for q, (iq, jq) in enumerate(pairs):
            x = cond_cov2(s, ir, iq, k) - cond_cov2(t, jr, jq, k) - D
            assert got[r, q] == pytest.approx(np.sum(x * x), rel=1e-10, abs=1e-12)


def brute_stage1(c):
    """Minimum over every assignment satisfying the paper's eqs. 4-5, by enumeration."""
    n_s, n_t = c.shape
    big, small = max(n_s, n_t), min(n_s, n_t)
    cc = c if n_s >= n_t else c.T
    lo, hi = max(big // small, 1), -(-big // small)
    best = np.inf
    for f in itertools.product(range(small), repeat=big):       # larger side -> smaller side
        counts = np.bincount(f, minlength=small)
        if counts.min() < lo or counts.max() > hi:
            continue
        best = min(best, cc[np.arange(big), f].sum())
    return best


@pytest.mark.parametrize("n_s,n_t", [(4, 4), (6, 6), (5, 3), (6, 4), (2, 5), (3, 6), (6, 2)])
@pytest.mark.parametrize("seed", [0, 1])
def test_stage1_matches_enumeration(n_s, n_t, seed):
    rng = np.random.default_rng(seed)
    c = rng.random((n_s, n_t))
    pairs, cost = ref.solve_stage1(c)
    assert cost == pytest.approx(brute_stage1(c), rel=1e-12)
    assert cost == pytest.approx(c[pairs[:, 0], pairs[:, 1]].sum(), rel=1e-12)
    assert len(pairs) == max(n_s, n_t)
    # Every row and column used; the smaller side evenly.
    assert set(pairs[:, 0]) == set(range(n_s)) and set(pairs[:, 1]) == set(range(n_t))
    small_col = 1 if n_s >= n_t else 0
    counts = np.bincount(pairs[:, small_col])
    assert counts.max() - counts.min() <= 1
    big_col = 1 - small_col
    np.testing.assert_array_equal(pairs[:, big_col], np.arange(max(n_s, n_t)))


def brute_matching(c, single):
    """Minimum-weight perfect matching of P nodes (+ a dummy when P is odd), by recursion."""
    P = len(c)
    nodes = list(range(P)) + ([P] if P % 2 else [])

    def w(a, b):
        return single[a] if b == P else (single[b] if a == P else c[a, b])

    def rec(rest):
        if not rest:
            return 0.0
        a = rest[0]
        return min(w(a, b) + rec([x for x in rest[1:] if x != b]) for b in rest[1:])

    return rec(nodes)


@pytest.mark.parametrize("P", [2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("seed", range(4))
def test_stage2_bounds_and_partition(P, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((P, P))
    c = x + x.T
    single = rng.random(P)
    quads, singles, cost, bound = ref.solve_stage2(c, single)
    opt = brute_matching(c, single)
    assert bound <= opt + 1e-12
    assert cost >= opt - 1e-12
    used = sorted(quads.ravel().tolist() + singles.tolist())
    assert used == list(range(P))
    assert len(singles) == P % 2
    want = sum(c[a, b] for a, b in quads) + sum(single[r] for r in singles)
    assert cost == pytest.approx(want)
    if cost == pytest.approx(bound):
        assert cost == pytest.approx(opt)


def test_match_fields():
    s, t = data(30, 22, 3, 5)
    m = ref.match(s, t, batch_size=4, stages=2, discrepancy="mmd", kernel="rbf", keep_costs=True)
    assert m.pairs.shape == (30, 2) and m.pairs.dtype == np.int64
    assert m.stage1_cost == pytest.approx(m.c_st[m.pairs[:, 0], m.pairs[:, 1]].sum())
    assert m.stage1_cost == pytest.approx(ref.solve_stage1(m.c_st)[1])
    assert m.stage2_bound <= m.stage2_cost + 1e-12
    assert len(m.quads) == 15 and len(m.singles) == 0


def test_sqdist_far_from_the_origin():
    """Identical points at 1e30 are at distance 0: the expansion alone cancels
    to rounding noise there (test_fuzz found the reference's RBF costs wrong)."""
    x = np.full((2, 3), 1e30)
    assert np.all(ref._sqdist(x, x) == 0.0)
    assert np.allclose(ref.kernel_matrix(x, x, "rbf", (0.5, 2.0)), 2.0)
    far = np.vstack([x[0], x[0] + 1e15])
    assert ref._sqdist(far, far)[0, 1] == np.sum((far[1] - far[0]) ** 2) > 0
