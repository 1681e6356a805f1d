"""Tests of psda.match and psda.Matching against independent references (see conftest.py)."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

import psda
from psda import _inputs, _matching, _native

from conftest import (
    COSTS,
    blossom_stage2,
    brute_stage1,
    brute_stage2,
    check_matching_structure,
    features,
    matching_costs,
    reference,
    rel_close,
    scipy_stage1,
)

# ---------------------------------------------------------------------------
# Optimality against exhaustive enumeration (tiny) and SciPy / networkx
# ---------------------------------------------------------------------------

TINY_SIZES = [(1, 1), (2, 2), (4, 4), (6, 6), (5, 3), (3, 5), (6, 4), (2, 6), (6, 1), (4, 6)]


@pytest.mark.parametrize("discrepancy,kernel", COSTS)
@pytest.mark.parametrize("ns,nt", TINY_SIZES)
def test_stage1_equals_exhaustive_enumeration(rng, ns, nt, discrepancy, kernel):
    k = 2 if discrepancy == "coral" else 1
    if discrepancy == "coral" and min(ns, nt) < 2:
        pytest.skip("CORAL needs two examples per domain for a covariance")
    s, t = features(rng, ns, nt)
    m = psda.match(s, t, batch_size=k, stages=1, discrepancy=discrepancy, kernel=kernel)
    check_matching_structure(m, ns, nt, 1)
    best = brute_stage1(reference(s, t, k, discrepancy, kernel).stage1())
    assert rel_close(m.stage1_cost, best), (m.stage1_cost, best)
    c1, _ = matching_costs(m, s, t)
    assert rel_close(c1, m.stage1_cost), (c1, m.stage1_cost)


@pytest.mark.parametrize("discrepancy,kernel", COSTS)
@pytest.mark.parametrize("ns,nt", [(2, 2), (4, 4), (6, 6), (5, 3), (3, 5), (6, 4), (2, 5), (6, 2)])
def test_stage2_equals_exhaustive_enumeration(rng, ns, nt, discrepancy, kernel):
    k = 2
    s, t = features(rng, ns, nt)
    m = psda.match(s, t, batch_size=k, stages=2, discrepancy=discrepancy, kernel=kernel)
    check_matching_structure(m, ns, nt, 2)
    ref = reference(s, t, k, discrepancy, kernel)
    C2, single = ref.stage2(m.pairs)
    best = brute_stage2(C2, single)
    assert rel_close(m.stage2_cost, best), (m.stage2_cost, best)
    c1, c2 = matching_costs(m, s, t)
    assert rel_close(c2, m.stage2_cost), (c2, m.stage2_cost)
    assert rel_close(c1, brute_stage1(ref.stage1()))
    assert m.stage2_bound <= m.stage2_cost + 1e-9 * abs(m.stage2_cost) + 1e-12


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("discrepancy,kernel", COSTS)
@pytest.mark.parametrize("ns,nt", [(40, 40), (57, 23), (23, 57), (31, 30)])
def test_stage1_equals_scipy(rng, ns, nt, discrepancy, kernel, dtype):
    k = 8
    s, t = features(rng, ns, nt, d=5, dtype=dtype)
    m = psda.match(s, t, batch_size=k, stages=1, discrepancy=discrepancy, kernel=kernel)
    check_matching_structure(m, ns, nt, 1)
    C = reference(s, t, k, discrepancy, kernel).stage1()
    assert rel_close(m.stage1_cost, scipy_stage1(C)), (m.stage1_cost, scipy_stage1(C))
    assert rel_close(float(C[m.pairs[:, 0], m.pairs[:, 1]].sum()), m.stage1_cost)


@pytest.mark.parametrize("discrepancy,kernel", COSTS)
@pytest.mark.parametrize("ns,nt", [(30, 30), (31, 17), (17, 31), (24, 20)])
def test_stage2_equals_blossom(rng, ns, nt, discrepancy, kernel):
    k = 4
    s, t = features(rng, ns, nt, d=4)
    m = psda.match(s, t, batch_size=k, stages=2, discrepancy=discrepancy, kernel=kernel)
    check_matching_structure(m, ns, nt, 2)
    C2, single = reference(s, t, k, discrepancy, kernel).stage2(m.pairs)
    _, c2 = matching_costs(m, s, t)
    assert rel_close(c2, m.stage2_cost), (c2, m.stage2_cost)
    # Stage 2 is exact (blossom algorithm) and its bound is the certified dual
    # objective: both equal networkx's optimum up to rounding.
    best = blossom_stage2(C2, single)
    assert rel_close(m.stage2_cost, best, 1e-7), (m.stage2_cost, best)
    assert rel_close(m.stage2_bound, best, 1e-7), (m.stage2_bound, best)
    assert m.stage2_bound <= m.stage2_cost
    assert 0 <= m.stage2_gap <= 1e-9


SOLVER_CASES = {
    # name: (ns, nt, d, discrepancy, kernel, stages, dtype)
    "150x120 rbf": (150, 120, 5, "mmd", "rbf", 2, np.float64),
    "150x120 linear": (150, 120, 5, "mmd", "linear", 2, np.float64),
    "90x200 rbf": (90, 200, 4, "mmd", "rbf", 2, np.float64),
    "90x200 linear": (90, 200, 4, "mmd", "linear", 2, np.float64),
    "121x121 rbf float32": (121, 121, 6, "mmd", "rbf", 2, np.float32),
    "133x47 coral stages 1": (133, 47, 3, "coral", "rbf", 1, np.float64),
    "140x90 coral": (140, 90, 6, "coral", "rbf", 2, np.float64),
    "101x101 coral float32": (101, 101, 5, "coral", "rbf", 2, np.float32),
    "20x150 rbf stages 1": (20, 150, 3, "mmd", "rbf", 1, np.float64),
}


@pytest.mark.parametrize("case", list(SOLVER_CASES), ids=list(SOLVER_CASES))
def test_sparse_solver_equals_dense_and_scipy(rng, case):
    """solver='sparse' is exact: the Stage 1 optimum of SciPy and of the dense path, and
    the Stage 2 optimum of networkx's blossom algorithm on its pairs."""
    ns, nt, d, discrepancy, kernel, stages, dtype = SOLVER_CASES[case]
    k = 8
    s, t = features(rng, ns, nt, d=d, dtype=dtype)
    kw = dict(batch_size=k, stages=stages, discrepancy=discrepancy, kernel=kernel)
    dense = psda.match(s, t, solver="dense", **kw)
    sparse = psda.match(s, t, solver="sparse", **kw)
    check_matching_structure(sparse, ns, nt, stages)
    ref = reference(s, t, k, discrepancy, kernel)
    C = ref.stage1()
    assert rel_close(sparse.stage1_cost, dense.stage1_cost), (sparse.stage1_cost, dense.stage1_cost)
    assert rel_close(sparse.stage1_cost, scipy_stage1(C), 1e-7), (sparse.stage1_cost, scipy_stage1(C))
    c1 = float(C[sparse.pairs[:, 0], sparse.pairs[:, 1]].sum())
    assert rel_close(c1, sparse.stage1_cost, 1e-7), (c1, sparse.stage1_cost)
    if stages == 1:
        return
    C2, single = ref.stage2(sparse.pairs)
    c2 = float(C2[sparse.quads[:, 0], sparse.quads[:, 1]].sum() + single[sparse.singles].sum())
    assert rel_close(c2, sparse.stage2_cost, 1e-7), (c2, sparse.stage2_cost)
    # Exact on its pairs (blossom algorithm priced against every dense edge),
    # with the certified dual objective as bound.
    best = blossom_stage2(C2, single)
    assert rel_close(sparse.stage2_cost, best, 1e-7), (sparse.stage2_cost, best)
    assert rel_close(sparse.stage2_bound, best, 1e-7), (sparse.stage2_bound, best)
    assert sparse.stage2_bound <= sparse.stage2_cost


def test_auto_solver_is_the_default(rng):
    """At these sizes 'auto' runs dense, so it returns the default's exact matching."""
    s, t = features(rng, 60, 44, d=4)
    a = psda.match(s, t, batch_size=4)
    for solver in ("auto", "AUTO", "dense"):
        assert psda.match(s, t, batch_size=4, solver=solver).fingerprint == a.fingerprint, solver


def test_matching_is_deterministic(rng):
    s, t = features(rng, 50, 35, d=6)
    a = psda.match(s, t, batch_size=8)
    b = psda.match(s.copy(), t.copy(), batch_size=8)
    assert a.fingerprint == b.fingerprint
    np.testing.assert_array_equal(a.pairs, b.pairs)
    np.testing.assert_array_equal(a.quads, b.quads)


# ---------------------------------------------------------------------------
# The Matching object
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("ns,nt", [(20, 20), (21, 8), (8, 21)])
def test_matching_fields(rng, ns, nt, stages):
    s, t = features(rng, ns, nt)
    m = psda.match(s, t, batch_size=4, stages=stages)
    check_matching_structure(m, ns, nt, stages)
    assert (m.n_source, m.n_target, m.batch_size, m.stages) == (ns, nt, 4, stages)
    assert (m.discrepancy, m.kernel, m.gammas) == ("mmd", "rbf", psda.DEFAULT_GAMMAS)
    for a in (m.pairs, m.quads, m.singles):
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[...] = 0
    with pytest.raises(AttributeError):
        m.pairs = None
    if stages == 1:
        assert m.stage2_cost == m.stage2_bound == m.stage2_gap == 0.0
    else:
        assert m.stage2_gap == pytest.approx((m.stage2_cost - m.stage2_bound) / m.stage2_bound) or m.stage2_gap == 0
    r = repr(m)
    for part in (f"n_source={ns}", f"n_target={nt}", f"pairs={max(ns, nt)}", "stage1_cost=", "stage2_gap="):
        assert part in r


def test_stage2_gap_edge_cases():
    def make(cost, bound):
        return _matching.Matching(np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0), 0.0, cost, bound, 0, 0, 2, 2, "mmd", "rbf")

    assert make(0.0, 0.0).stage2_gap == 0.0
    assert make(3.0, 2.0).stage2_gap == 0.5
    assert make(1.0, 0.0).stage2_gap == float("inf")


# ---------------------------------------------------------------------------
# Input conversion: dtypes, layouts, torch tensors
# ---------------------------------------------------------------------------


def _variants(s):
    """(name, array-like equivalent to s as float64) pairs."""
    out = [
        ("fortran", np.asfortranarray(s)),
        ("strided", np.repeat(s, 2, axis=0)[::2]),
        ("big-endian", s.astype(">f8")),
        ("list", s.tolist()),
        ("longdouble", s.astype(np.longdouble)),
    ]
    return out


def test_equivalent_inputs_give_the_same_matching(rng):
    s, t = features(rng, 30, 24, d=4)
    want = psda.match(s, t, batch_size=4)
    for name, v in _variants(s):
        got = psda.match(v, t, batch_size=4)
        assert got.fingerprint == want.fingerprint, name
        assert got.stage1_cost == pytest.approx(want.stage1_cost, rel=1e-12), name


def test_integer_and_float16_inputs(rng):
    s = rng.integers(-5, 5, size=(20, 3))
    t = rng.integers(-5, 5, size=(16, 3)).astype(np.int8)
    want = psda.match(s.astype(np.float64), t.astype(np.float64), batch_size=4)
    assert psda.match(s, t, batch_size=4).fingerprint == want.fingerprint
    h_s, h_t = s.astype(np.float16), t.astype(np.float16)
    want32 = psda.match(h_s.astype(np.float32), h_t.astype(np.float32), batch_size=4)
    assert psda.match(h_s, h_t, batch_size=4).fingerprint == want32.fingerprint
    # Mixed float32/float64 sides are both converted to float64.
    mixed = psda.match(s.astype(np.float32), t.astype(np.float64), batch_size=4)
    assert mixed.fingerprint == want.fingerprint


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_contiguous_float_input_is_not_copied(rng, dtype):
    s = rng.normal(size=(10, 3)).astype(dtype)
    assert _inputs._as_features(s, "source") is s
    f = _inputs._as_features(np.asfortranarray(s), "source")
    assert f.flags.c_contiguous and f.dtype == dtype
    np.testing.assert_array_equal(f, s)


def test_torch_tensors(rng):
    torch = pytest.importorskip("torch")
    s, t = features(rng, 26, 19, d=4, dtype=np.float32)
    want = psda.match(s, t, batch_size=4)
    ts, tt = torch.from_numpy(s), torch.from_numpy(t)
    assert psda.match(ts, tt, batch_size=4).fingerprint == want.fingerprint
    # Zero copy for a contiguous CPU float32 tensor.
    assert np.shares_memory(_inputs._as_features(ts, "source"), s)
    # requires_grad, non-contiguous, float64, bfloat16/float16.
    g = torch.from_numpy(s.copy()).requires_grad_(True)
    assert psda.match(g * 1, tt, batch_size=4).fingerprint == want.fingerprint
    nc = torch.from_numpy(np.ascontiguousarray(s.T)).T
    assert not nc.is_contiguous()
    assert psda.match(nc, tt, batch_size=4).fingerprint == want.fingerprint
    assert psda.match(ts.double(), tt.double(), batch_size=4).fingerprint == psda.match(
        s.astype(np.float64), t.astype(np.float64), batch_size=4).fingerprint
    for half in (torch.float16, torch.bfloat16):
        hs, ht = ts.to(half), tt.to(half)
        ref = psda.match(hs.float().numpy(), ht.float().numpy(), batch_size=4)
        assert psda.match(hs, ht, batch_size=4).fingerprint == ref.fingerprint


# ---------------------------------------------------------------------------
# Invalid input: clear errors before any work
# ---------------------------------------------------------------------------


def _good(rng=np.random.default_rng(0)):
    return features(rng, 12, 10)


def _with_nan(a, i, j, v=np.nan):
    a = a.copy()
    a[i, j] = v
    return a


S, T = _good()

BAD_MATCH = {
    # name: (source, target, kwargs, exception, substrings of the message)
    "nan source": (_with_nan(S, 7, 1), T, {}, ValueError, ["source[7, 1]", "nan", "row 7", "finite"]),
    "inf target": (S, _with_nan(T, 3, 2, np.inf), {}, ValueError, ["target[3, 2]", "inf", "row 3"]),
    "-inf float32": (S.astype(np.float32), _with_nan(T, 9, 0, -np.inf).astype(np.float32), {}, ValueError, ["target[9, 0]", "row 9"]),
    "1-D source": (S[:, 0], T, {}, ValueError, ["source", "(12,)", "2-D", "reshape(-1, 1)"]),
    "3-D target": (S, T[None], {}, ValueError, ["target", "(1, 10, 3)", "2-D"]),
    "empty source rows": (S[:0], T, {}, ValueError, ["source", "(0, 3)", "at least one"]),
    "empty feature columns": (S[:, :0], T[:, :0], {}, ValueError, ["source", "(12, 0)"]),
    "dimension mismatch": (S, T[:, :2], {}, ValueError, ["3 features", "target has 2", "same feature extractor"]),
    "object dtype": (S.astype(object), T, {}, TypeError, ["source", "object"]),
    "str dtype": (S.astype(str), T, {}, TypeError, ["source", "<U"]),
    "complex dtype": (S, T.astype(complex), {}, TypeError, ["target", "complex", "real"]),
    "bool dtype": (S > 0, T, {}, TypeError, ["source", "bool"]),
    "ragged list": ([[1.0, 2.0], [3.0]], T, {}, TypeError, ["source", "2-D"]),
    "batch_size 0": (S, T, {"batch_size": 0}, ValueError, ["batch_size = 0", ">= 1"]),
    "batch_size negative": (S, T, {"batch_size": -4}, ValueError, ["batch_size = -4"]),
    "batch_size float": (S, T, {"batch_size": 4.0}, TypeError, ["batch_size = 4.0", "int"]),
    "batch_size bool": (S, T, {"batch_size": True}, TypeError, ["batch_size = True"]),
    "batch_size str": (S, T, {"batch_size": "4"}, TypeError, ["batch_size = '4'"]),
    "odd batch_size stages 2": (S, T, {"batch_size": 5}, ValueError, ["batch_size = 5", "stages = 2", "even", "use 4 or 6"]),
    "batch_size too large": (S, T, {"batch_size": 14}, ValueError, ["batch_size = 14", "12 pairs", "batch_size <= 12"]),
    "stages 3": (S, T, {"stages": 3}, ValueError, ["stages = 3", "1 (Paired", "2 (Double-paired"]),
    "stages 0": (S, T, {"stages": 0}, ValueError, ["stages = 0"]),
    "unknown discrepancy": (S, T, {"discrepancy": "wasserstein"}, ValueError, ["discrepancy = 'wasserstein'", "'mmd' or 'coral'"]),
    "unknown kernel": (S, T, {"kernel": "poly"}, ValueError, ["kernel = 'poly'", "'rbf'", "'linear'"]),
    "coral batch_size 1": (S, T, {"discrepancy": "coral", "stages": 1, "batch_size": 1}, ValueError, ["batch_size = 1", "coral", ">= 2"]),
    "empty gammas": (S, T, {"gammas": ()}, ValueError, ["gammas", "at least one"]),
    "negative gamma": (S, T, {"gammas": (0.1, -1.0)}, ValueError, ["gammas contains -1.0", "> 0"]),
    "nan gamma": (S, T, {"gammas": (float("nan"),)}, ValueError, ["gammas contains nan"]),
    "scalar gammas": (S, T, {"gammas": 0.5}, TypeError, ["gammas = 0.5", "sequence"]),
    "unknown solver": (S, T, {"solver": "simplex"}, ValueError, ["solver = 'simplex'", "'auto'", "'dense'", "'sparse'"]),
    "solver None": (S, T, {"solver": None}, ValueError, ["solver = None", "'auto'"]),
    "solver checked before the data": (_with_nan(S, 1, 1), T, {"solver": "lu"}, ValueError, ["solver = 'lu'"]),
}


@pytest.mark.parametrize("case", list(BAD_MATCH), ids=list(BAD_MATCH))
def test_bad_input(case):
    s, t, kw, exc, parts = BAD_MATCH[case]
    kwargs = {"batch_size": 4, **kw}
    with pytest.raises(exc) as info:
        psda.match(s, t, **kwargs)
    msg = str(info.value)
    for part in parts:
        assert part in msg, (part, msg)


def test_bad_input_reports_how_many_rows(rng):
    s, t = features(rng, 5000, 10)
    s[[10, 20, 4990], 0] = np.nan
    with pytest.raises(ValueError, match=r"source\[10, 0\] = nan.*3 row\(s\).*first is row 10"):
        psda.match(s, t, batch_size=4)


def test_accepted_spellings(rng):
    s, t = features(rng, 12, 10)
    a = psda.match(s, t, batch_size=np.int64(4), discrepancy="MMD", kernel="Linear", gammas=np.array([1.0]))
    assert (a.batch_size, a.discrepancy, a.kernel) == (4, "mmd", "linear")
    assert type(a.batch_size) is int
    # gammas only matter for the RBF mixture.
    psda.match(s, t, batch_size=4, kernel="linear", gammas=())
    psda.match(s, t, batch_size=4, discrepancy="coral", gammas=())


def test_default_gammas_are_the_cores():
    """psda.DEFAULT_GAMMAS is the Python copy of the core's DefaultGammas."""
    assert psda.DEFAULT_GAMMAS == _native.default_gammas()


def test_go_core_validates_too(rng):
    """The native layer rejects invalid input on its own, with the Go core's message."""
    s, t = features(rng, 12, 10)
    kw = dict(stages=2, discrepancy="mmd", kernel="rbf", gammas=psda.DEFAULT_GAMMAS)
    with pytest.raises(ValueError, match="batch_size"):
        _native.match(s, t, batch_size=3, **kw)
    with pytest.raises(ValueError, match="finite"):
        _native.match(_with_nan(s, 2, 2), t, batch_size=4, **kw)
    with pytest.raises(ValueError, match="kernel"):
        _native.match(s, t, batch_size=4, **{**kw, "kernel": "poly"})
    with pytest.raises(ValueError, match="solver"):
        _native.match(s, t, batch_size=4, **kw, solver="simplex")


# ---------------------------------------------------------------------------
# Concurrency and logging
# ---------------------------------------------------------------------------


def test_match_releases_the_gil(rng):
    """A Python thread keeps running while match works on a moderately large input."""
    s, t = features(rng, 800, 800, d=64, dtype=np.float32)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    worker = threading.Thread(target=count)
    worker.start()
    try:
        time.sleep(0.05)
        t0 = time.perf_counter()
        psda.match(s, t, batch_size=32, stages=2)
        t1 = time.perf_counter()
    finally:
        stop.set()
        worker.join()
    # Ticks strictly inside the call, away from its edges: with the GIL held
    # by the call, the counting thread could not have run there at all.
    lo, hi = t0 + 0.1 * (t1 - t0), t1 - 0.1 * (t1 - t0)
    inside = sum(lo < x < hi for x in ticks)
    assert t1 - t0 > 0.05, "input too small to observe the GIL"
    assert inside > 1000, (inside, t1 - t0)


def test_logging(rng, caplog):
    logger = logging.getLogger("psda")
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)
    assert logger.level == logging.NOTSET
    s, t = features(rng, 12, 10)
    with caplog.at_level(logging.DEBUG, logger="psda"):
        psda.match(s.astype(np.float32), t, batch_size=4)
    text = caplog.text
    assert "matched 12 source and 10 target examples" in text
    assert "converting both to float64" in text
    assert all(r.name == "psda" for r in caplog.records)


def test_versions():
    assert isinstance(psda.core_version(), str) and psda.core_version()
    assert isinstance(psda.__version__, str)


def test_docstring_examples_run():
    """Every Example: in the public modules is a doctest that passes."""
    import doctest

    import importlib

    import psda.loader

    samplers = [importlib.import_module(f"psda.samplers.{m}")
                for m in ("base", "paired", "simple", "stratified", "dpp", "exchange", "kmeans", "imbalance",
                          "regroup")]
    for mod in (psda, _matching, psda.loader, psda.samplers, *samplers):
        failed, attempted = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert failed == 0, mod.__name__
        assert attempted > 0 or mod is psda, mod.__name__


def test_gammas_none_means_the_papers_mixture():
    """gammas=None is the paper's mixture in match and in the sampler, as in
    the core (psda.DefaultGammas), not an error."""
    rng = np.random.default_rng(5)
    src, tgt = rng.normal(size=(40, 3)), rng.normal(size=(36, 3)) + 0.3
    a = psda.match(src, tgt, batch_size=4, gammas=None, progress=False)
    b = psda.match(src, tgt, batch_size=4, gammas=psda.DEFAULT_GAMMAS, progress=False)
    assert a.gammas == psda.DEFAULT_GAMMAS
    assert np.array_equal(a.pairs, b.pairs) and a.stage2_cost == b.stage2_cost
    s = psda.PairedBatchSampler(src, tgt, batch_size=4, gammas=None)
    assert s.gammas == psda.DEFAULT_GAMMAS


@pytest.mark.parametrize("solver", ["dense", "sparse"])
@pytest.mark.parametrize("discrepancy,kernel,power", [("mmd", "linear", 2), ("coral", "rbf", 4)])
def test_tiny_features_match_as_at_unit_scale(rng, discrepancy, kernel, power, solver):
    # The linear MMD's and CORAL's costs are squares and fourth powers of the
    # features: at 2^-536 (2^-268 for CORAL) they fall to float64's subnormal
    # range, where rounding is absolute. The matching then came out arbitrary,
    # and the certificate of Stage 2 could fail on a rounding of 5e-324.
    # Scaling by a power of two is exact and the optimum does not change; the
    # costs scale by 2^(power*e), rounded once into the subnormal range.
    s, t = features(rng, 12, 12, d=3)
    e = -1072 // power
    tiny = psda.match(np.ldexp(s, e), np.ldexp(t, e), batch_size=2, discrepancy=discrepancy, kernel=kernel,
                      solver=solver)
    unit = psda.match(s, t, batch_size=2, discrepancy=discrepancy, kernel=kernel, solver=solver)
    assert tiny.fingerprint == unit.fingerprint
    for name in ("stage1_cost", "stage2_cost", "stage2_bound"):
        want = np.ldexp(getattr(unit, name), power * e)
        assert abs(getattr(tiny, name) - want) <= 5e-324, name
