"""psda.linear_sum_assignment against SciPy's solver (the oracle) and brute force."""

import itertools

import numpy as np
import pytest

import psda

scipy_opt = pytest.importorskip("scipy.optimize")


@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (4, 9), (9, 4), (60, 60), (40, 130), (130, 40)])
@pytest.mark.parametrize("kind", ["uniform", "ties", "wide-range"])
@pytest.mark.parametrize("maximize", [False, True])
def test_equals_scipy(shape, kind, maximize):
    rng = np.random.default_rng(hash((shape, kind, maximize)) % 2**32)
    c = {"uniform": lambda: rng.random(shape),
         "ties": lambda: rng.integers(0, 3, size=shape).astype(float),
         "wide-range": lambda: rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 4, size=shape)}[kind]()
    rows, cols = psda.linear_sum_assignment(c, maximize=maximize)
    want_r, want_c = scipy_opt.linear_sum_assignment(c, maximize=maximize)
    assert rows.dtype == np.int64 and len(rows) == min(shape)
    np.testing.assert_array_equal(rows, np.sort(rows))
    assert len(set(cols.tolist())) == len(cols)  # a matching
    got, want = c[rows, cols].sum(), c[want_r, want_c].sum()
    assert abs(got - want) <= 1e-9 * (1 + np.abs(c).sum())


def test_brute_force_small():
    rng = np.random.default_rng(1)
    for n in range(1, 7):
        c = rng.random((n, n))
        best = min(sum(c[i, p[i]] for i in range(n)) for p in itertools.permutations(range(n)))
        rows, cols = psda.linear_sum_assignment(c)
        assert abs(c[rows, cols].sum() - best) < 1e-12


def test_lists_and_ints():
    rows, cols = psda.linear_sum_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    assert rows.tolist() == [0, 1, 2] and cols.tolist() == [1, 0, 2]


@pytest.mark.parametrize("bad, err", [([[1.0, np.nan]], ValueError), ([1.0, 2.0], ValueError),
                                      ([["a", "b"]], TypeError), ([[1.0, np.inf]], ValueError)])
def test_bad_input(bad, err):
    with pytest.raises(err):
        psda.linear_sum_assignment(bad)
