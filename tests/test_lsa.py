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


@pytest.mark.parametrize("bad, err, match", [
    ([[1.0, np.nan]], ValueError, "invalid numeric entries"),
    ([[1.0, -np.inf]], ValueError, "invalid numeric entries"),
    ([1.0, 2.0], ValueError, "expected a matrix"),
    ([[[1.0]]], ValueError, "expected a matrix"),
    ([["a", "b"]], TypeError, "Cannot cast array data"),
    ([[1 + 2j]], TypeError, "Cannot cast array data"),
    ([[np.inf, np.inf], [1.0, 2.0]], ValueError, "cost matrix is infeasible"),
])
def test_bad_input(bad, err, match):
    with pytest.raises(err, match=match):
        psda.linear_sum_assignment(bad)


def test_maximize_forbids_minus_inf():
    """With maximize, -inf forbids a pair and +inf is invalid, as in SciPy."""
    c = np.array([[-np.inf, 1.0, 2.0], [5.0, -np.inf, 1.0], [4.0, 3.0, -np.inf]])
    rows, cols = psda.linear_sum_assignment(c, maximize=True)
    want = scipy_opt.linear_sum_assignment(c, maximize=True)
    assert c[rows, cols].sum() == c[want].sum() == 10
    with pytest.raises(ValueError, match="invalid numeric entries"):
        psda.linear_sum_assignment(np.array([[np.inf, 1.0]]), maximize=True)


@pytest.mark.parametrize("dtype", [bool, np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float16, np.float32])
def test_dtypes(dtype):
    rng = np.random.default_rng(7)
    c = (rng.integers(0, 2, (6, 9)) if dtype is bool else rng.integers(0, 100, (6, 9))).astype(dtype)
    rows, cols = psda.linear_sum_assignment(c)
    want_r, want_c = scipy_opt.linear_sum_assignment(c)
    assert c.astype(float)[rows, cols].sum() == c.astype(float)[want_r, want_c].sum()
    rows, cols = psda.linear_sum_assignment(c.T)  # tall
    want_r, want_c = scipy_opt.linear_sum_assignment(c.T)
    assert c.T.astype(float)[rows, cols].sum() == c.T.astype(float)[want_r, want_c].sum()


def test_does_not_modify_input():
    c = np.array([[3.0, np.inf, 1.0], [2.0, 2.0, np.inf]])
    before = c.copy()
    psda.linear_sum_assignment(c, maximize=False)
    psda.linear_sum_assignment(-c, maximize=True)
    np.testing.assert_array_equal(c, before)


def test_huge_entry_issue_example():
    """One huge finite entry used to inflate the warm start's prices until the
    exact phase could no longer tell 1 from 5 (issue 16)."""
    c = np.array([[1e20, 0, 0], [0, 5, 1], [0, 1, 5]])
    rows, cols = psda.linear_sum_assignment(c)
    assert c[rows, cols].sum() == 1


@pytest.mark.parametrize("n", [4, 8, 13, 40, 300])
@pytest.mark.parametrize("where", ["one", "diagonal", "column", "minus", "cyclic"])
def test_huge_entries_against_scipy(n, where):
    """50 seeds (10 at n = 300, where the sparse warm start runs) of Gaussian
    costs with 1e20 entries: SciPy's optimum, whether or not it uses them."""
    for seed in range(10 if n >= 300 else 50):
        rng = np.random.default_rng([seed, n])
        c = rng.standard_normal((n, n))
        if where == "one":
            c[rng.integers(n), rng.integers(n)] = 1e20
        elif where == "minus":
            c[rng.integers(n), rng.integers(n)] = -1e20
        elif where == "diagonal":
            np.fill_diagonal(c, 1e20)
        elif where == "cyclic":  # entries the sparse warm start (n >= 256) always holds
            c[np.arange(n), (np.arange(n) + 1) % n] = 1e20
        else:
            c[:, rng.integers(n)] = 1e20 * (1 + rng.random(n))
        rows, cols = psda.linear_sum_assignment(c)
        want = c[scipy_opt.linear_sum_assignment(c)].sum()
        got = c[rows, cols].sum()
        assert abs(got - want) <= 1e-12 * np.abs(c[rows, cols]).max() * n, (seed, got, want)


@pytest.mark.parametrize("shape", [(30, 30), (30, 45), (45, 30), (300, 300)])
@pytest.mark.parametrize("allowed", [0.05, 0.2, 0.8])
def test_forbidden_against_scipy(shape, allowed):
    """+inf entries: the same optimum as SciPy, or the same infeasibility."""
    for seed in range(8):
        rng = np.random.default_rng([seed, *shape, int(allowed * 100)])
        c = np.where(rng.random(shape) < allowed, rng.integers(1, 50, shape), np.inf)
        try:
            want = c[scipy_opt.linear_sum_assignment(c)].sum()
        except ValueError as e:
            assert "infeasible" in str(e)
            with pytest.raises(ValueError, match="cost matrix is infeasible"):
                psda.linear_sum_assignment(c)
            continue
        rows, cols = psda.linear_sum_assignment(c)
        assert c[rows, cols].sum() == want


_INTERRUPT = """
import os, sys, time
import numpy as np
import psda
n = {n}
c = np.outer(np.arange(n), np.arange(n)).astype(float)  # long paths for every row
print("ready", flush=True)
t0 = time.monotonic()
try:
    psda.linear_sum_assignment(c)
    print("finished %.2f" % (time.monotonic() - t0), flush=True)
except KeyboardInterrupt:
    print("interrupted %.2f" % (time.monotonic() - t0), flush=True)
    rows, cols = psda.linear_sum_assignment([[4, 1], [2, 0]])  # the library still works
    print("after", cols.tolist(), flush=True)
"""


def test_ctrl_c_interrupts():
    """SIGINT during a long solve raises KeyboardInterrupt promptly, as in match."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, "-c", _INTERRUPT.format(n=2000)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(1.0)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - sent
    finally:
        proc.kill()
    lines = out.split()
    if lines and lines[0] == "finished":
        pytest.skip(f"the solve finished in {lines[1]} s, before the signal")
    assert lines[:1] == ["interrupted"], out + err
    assert waited < 5, f"the process took {waited:.1f} s to stop after SIGINT"
    assert "after [1, 0]" in out, out + err
