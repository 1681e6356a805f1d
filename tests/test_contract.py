"""Issue 25: one sampler contract (psda.samplers.BatchSampler) and the silent failures it closes.

The regression tests here fail on the code before the base class (run once
against commit 07f199d): the batch count drift, the epoch wrap, states with
rows out of range or broken coverage, the bias of ORDERED and anticlustering
when k does not divide n or the domains differ, extreme feature scales,
features changed during psda.match, Ctrl-C in FeatureRefresher.wait(),
bool/complex in broadcast_features, and the CLI's and DomainBed's
tracebacks. The others test what was added with it: systematic sampling and
sit_out's law, and the random-pairs control.
"""

import copy
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import psda

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
PY = str(ROOT / "python")


def _data(ns, nt, d=2, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return scale * rng.normal(size=(ns, d)), scale * rng.normal(0.5, 1.0, size=(nt, d))


def _make(name, s, t, k, **kw):
    kw.setdefault("num_replicas", 1)
    kw.setdefault("rank", 0)
    return psda.batch_sampler(name, s, t, k, **kw)


# -- one rule for len and drop_last ---------------------------------------------


@pytest.mark.parametrize("drop_last, want", [(True, 8), (False, 9)])
def test_n70_k8_gives_one_count_for_every_sampler(drop_last, want):
    """n = 70, k = 8: paired served 9 batches with drop_last=False and the six others 8."""
    s, t = _data(70, 70)
    for name in psda.SAMPLERS:
        sm = _make(name, s, t, 8, drop_last=drop_last)
        batches = list(sm)
        assert len(sm) == len(batches) == want, name
        assert [len(b) // 2 for b in batches][-1] == (8 if drop_last else 70 % 8), name


@pytest.mark.parametrize("ns, nt, k, R", [(70, 70, 8, 1), (70, 55, 8, 3), (31, 40, 4, 2), (64, 64, 8, 3),
                                          (45, 38, 4, 4)])
@pytest.mark.parametrize("drop_last", [True, False])
def test_every_rank_gets_the_go_schedules_batch_lengths(ns, nt, k, R, drop_last):
    """The base's count and lengths per rank are those of PSDA's Go schedule (psda.BatchesPerRank)."""
    s, t = _data(ns, nt)
    for r in range(R):
        lens = {}
        for name in ("uniform", "anticlustering", "double-paired"):
            sm = _make(name, s, t, k, drop_last=drop_last, num_replicas=R, rank=r)
            lens[name] = [len(b) // 2 for b in sm]
            assert len(lens[name]) == len(sm)
        assert lens["uniform"] == lens["anticlustering"] == lens["double-paired"], (r, lens)


@pytest.mark.parametrize("name", psda.SAMPLERS)
@pytest.mark.parametrize("ns, nt, k, R, drop_last", [(70, 70, 8, 1, False), (70, 55, 8, 3, False),
                                                     (45, 38, 4, 2, True), (45, 38, 4, 4, False)])
def test_epoch_batches_are_what_the_ranks_serve(name, ns, nt, k, R, drop_last):
    """epoch_batches(e) is the epoch over all ranks for every sampler: global batch g is what rank g mod R
    serves as its (g // R)-th batch (paired, double-paired and random-pairs raised NotImplementedError)."""
    s, t = _data(ns, nt)
    ranks = [_make(name, s, t, k, drop_last=drop_last, num_replicas=R, rank=r, seed=3) for r in range(R)]
    src, tgt = ranks[0].epoch_batches(2)
    assert src.shape == tgt.shape == (ranks[0]._batches_per_rank()[0], k)
    for r, sm in enumerate(ranks):
        sm.set_epoch(2)
        for j, b in enumerate(sm):
            g = j * R + r
            if g >= len(src):
                continue  # drop_last=False: a rank short of a batch repeats one from the start
            n = len(b) // 2
            assert b[:n] == src[g, :n].tolist() and b[n:] == (tgt[g, :n] + ns).tolist(), (name, r, j)


@pytest.mark.parametrize("name", ["uniform", "anticlustering", "ordered"])
def test_drop_last_false_serves_the_larger_domain_exactly_once(name):
    s, t = _data(70, 53)
    sm = _make(name, s, t, 8, drop_last=False)
    for _ in range(3):
        src = [i for b in sm for i in b[: len(b) // 2]]
        assert sorted(src) == list(range(70)), name


# -- the epoch and its wrap ------------------------------------------------------------


@pytest.mark.parametrize("name", psda.SAMPLERS)
def test_epoch_wraps_at_2_64_and_the_state_still_loads(name):
    s, t = _data(40, 33)
    a = _make(name, s, t, 4)
    a.set_epoch(2**64 - 1)
    last = list(a)
    assert a.epoch == 0
    b = _make(name, s, t, 4)
    b.load_state_dict(a.state_dict())
    assert b.epoch == 0 and list(b) == list(a)
    b.set_epoch(2**64 - 1)
    assert list(b) == last


@pytest.mark.parametrize("name", psda.SAMPLERS)
def test_state_round_trips_at_every_position_and_through_pickle(name):
    s, t = _data(30, 26)
    a = _make(name, s, t, 4, drop_last=False)
    nb = len(a)
    a.set_epoch(5)
    full = list(a)
    after = list(a)  # epoch 6
    for stop in range(nb + 1):
        a.set_epoch(5)
        it = iter(a)
        head = [next(it) for _ in range(stop)]
        state = a.state_dict()
        b = _make(name, s, t, 4, drop_last=False, seed=99)  # another seed: the state's wins
        b.load_state_dict(state)
        c, d = copy.deepcopy(b), pickle.loads(pickle.dumps(b))
        rest = list(b)
        assert (head + rest == full) if stop < nb else (rest == after), (name, stop)
        assert list(c) == list(d) == rest, (name, stop)


# -- load_state_dict validates what it loads ---------------------------------------------


def _plan_rows(state):
    """(key path, array) of every integer array of a comparison sampler's encoded plan."""
    out = []

    def walk(d, path):
        for k, v in d.items():
            if "dict" in v:
                walk(v["dict"], path + [k, "dict"])
            elif "data" in v and np.dtype(v["dtype"]).kind in "iu" and v["data"]:
                out.append(path + [k])

    walk(state["plan"], [])
    return out


def _edit(state, path, fn):
    st = copy.deepcopy(state)
    d = st["plan"]
    for k in path[:-1]:
        d = d[k]
    v = d[path[-1]]
    a = np.frombuffer(v["data"], dtype=np.dtype(v["dtype"])).reshape(v["shape"]).copy()
    fn(a)
    v["data"] = a.tobytes()
    return st


@pytest.mark.parametrize("name", ["anticlustering", "vardass", "ordered"])
@pytest.mark.parametrize("bad", [-1, 10**6])
def test_load_state_dict_refuses_rows_out_of_range(name, bad):
    """One sampler served index -1 (the last *target* item) as a source row; others failed mid-epoch."""
    s, t = _data(30, 26)
    a = _make(name, s, t, 4)
    state = a.state_dict()
    paths = [p for p in _plan_rows(state) if not p[-1].endswith(("counts", "objective", "sizes"))]
    assert paths
    for path in paths:
        st = _edit(state, path, lambda x: x.reshape(-1).__setitem__(0, bad))
        b = _make(name, s, t, 4)
        with pytest.raises(ValueError, match="outside|serves row"):
            b.load_state_dict(st)


@pytest.mark.parametrize("name", ["anticlustering", "vardass", "ordered"])
def test_load_state_dict_refuses_a_plan_that_serves_a_row_twice(name):
    s, t = _data(30, 26)
    state = _make(name, s, t, 4).state_dict()
    key = "source"
    path = [key] if name != "vardass" else [key, "dict", "rows"]

    def dup(x):
        f = x.reshape(-1)
        f[1] = f[0]  # row f[0] twice, the old f[1] never

    with pytest.raises(ValueError, match="exactly once"):
        _make(name, s, t, 4).load_state_dict(_edit(state, path, dup))


def test_paired_load_state_dict_refuses_an_edited_matching():
    """A matching serving one source example twice and another never, with a valid fingerprint, was loaded."""
    s, t = _data(20, 14)
    a = psda.PairedBatchSampler(s, t, 4)
    m = a.matching
    pairs = m.pairs.copy()
    i = int(np.flatnonzero(pairs[:, 0] == 1)[0])
    pairs[i, 0] = 0  # source 0 twice, source 1 never
    edited = psda.Matching(pairs=pairs, quads=m.quads, singles=m.singles, stage1_cost=m.stage1_cost,
                           stage2_cost=m.stage2_cost, stage2_bound=m.stage2_bound, n_source=m.n_source,
                           n_target=m.n_target, batch_size=m.batch_size, stages=m.stages,
                           discrepancy=m.discrepancy, kernel=m.kernel, gammas=m.gammas)
    state = dict(a.state_dict(), plan=edited._to_state())
    b = psda.PairedBatchSampler(s, t, 4)
    before = b.matching
    with pytest.raises(ValueError, match="serves source example 0 2 time"):
        b.load_state_dict(state)
    assert b.matching is before


def test_paired_reads_the_state_format_before_the_common_one():
    """Checkpoints written by psda before the common format (psda.PairedBatchSampler/1) still resume."""
    s, t = _data(20, 14)
    a = psda.PairedBatchSampler(s, t, 4, stages=1)
    it = iter(a)
    next(it)
    st = a.state_dict()
    old = {k: v for k, v in st.items() if k not in ("sampler", "plan", "pending_plan", "options")}
    old.update(format="psda.PairedBatchSampler/1", matching=st["plan"], pending_matching=None, solver="auto")
    b = psda.PairedBatchSampler(s, t, 4, stages=1, seed=5)
    b.load_state_dict(old)
    assert list(b) == list(it)


def test_load_state_dict_refuses_non_finite_numbers():
    s, t = _data(30, 26)
    state = _make("kmeans++", s, t, 4).state_dict()
    st = copy.deepcopy(state)
    v = st["plan"]["xa_s"]
    a = np.frombuffer(v["data"], dtype=np.dtype(v["dtype"])).copy()
    a[0] = np.nan
    v["data"] = a.tobytes()
    with pytest.raises(ValueError, match="NaN or Inf"):
        _make("kmeans++", s, t, 4).load_state_dict(st)


# -- unbiased over epochs: every row served equally often ------------------------------------


@pytest.mark.parametrize("name", ["anticlustering", "ordered"])
@pytest.mark.parametrize("ns, nt", [(27, 19), (19, 27), (27, 27)])
def test_fixed_batch_samplers_serve_every_row_equally_often(name, ns, nt):
    """k does not divide n, n_s != n_t: the rows left over were never served (bias² 50-100% of the error).

    The exact expectation of a row's count per epoch is G k / n (G = max(n) // k
    batches); over E epochs the counts must all be near E G k / n: each row's
    count is a sum of E independent epochs' counts, each 0, 1 or 2, so 6
    standard deviations of a Bernoulli(p) sum (p = the epoch's inclusion
    probability, at most 1/4 variance) bound it.
    """
    k, E = 4, 600
    s, t = _data(ns, nt, seed=1)
    sm = _make(name, s, t, k, passes=5)
    G = max(ns, nt) // k
    counts = [np.zeros(ns), np.zeros(nt)]
    for e in range(E):
        src, tgt = sm.epoch_batches(e)
        np.add.at(counts[0], src.ravel(), 1)
        np.add.at(counts[1], tgt.ravel(), 1)
    for c, n in zip(counts, (ns, nt)):
        want = E * G * k / n
        tol = 6 * np.sqrt(E * 0.25) + 1
        assert np.all(np.abs(c - want) <= tol), (name, n, want, c.min(), c.max())


def test_sit_out_gives_every_row_the_same_probability():
    """psda.samplers.fixed.sit_out: every row sits out with probability r / (G k + r), whatever the chain
    order and the pairing by features (systematic sampling along the chain)."""
    from psda.samplers.fixed import sit_out

    batches, spare = np.arange(12).reshape(3, 4), np.array([12, 13])
    rng = np.random.default_rng(0)
    chain = rng.permutation(14)
    x = rng.normal(size=(14, 2))
    E = 20000
    out = np.zeros(14)
    for e in range(E):
        b, o = sit_out(batches, spare, rng, chain, x if e % 2 else None)
        assert sorted(np.concatenate([b.ravel(), o]).tolist()) == list(range(14))
        out[o] += 1
    p = 2 / 14
    assert np.all(np.abs(out / E - p) <= 5 * np.sqrt(p * (1 - p) / E)), out / E


def test_systematic_sampling_is_exact_and_spread():
    from psda.samplers.fixed import systematic

    chain = np.arange(10)
    rng = np.random.default_rng(1)
    E, m = 20000, 3
    counts = np.zeros(10)
    for _ in range(E):
        picks = systematic(chain, m, rng)
        assert len(set(picks.tolist())) == m and np.all(np.diff(picks) >= 3)  # one per stretch of 10/3
        counts[picks] += 1
    p = m / 10
    assert np.all(np.abs(counts / E - p) <= 5 * np.sqrt(p * (1 - p) / E)), counts / E


# -- extreme feature scales ------------------------------------------------------------------


@pytest.mark.parametrize("name", psda.SAMPLERS)
def test_extreme_scales_are_refused_naming_the_argument(name):
    """k-means++, VaRDASS and ORDERED gave other batches at 1e160 (only NumPy RuntimeWarnings)."""
    s, t = _data(30, 26, scale=1e160)
    from psda.samplers.registry import sampler_class

    if not sampler_class(name).uses_features:  # uniform, random-pairs: only the number of rows
        assert len(list(_make(name, s, t, 4))) == 7
        return
    with pytest.raises(ValueError, match="_features has entries up to .*rescale both"):
        _make(name, s, t, 4)


# -- the random-pairs control ----------------------------------------------------------------


def test_random_pairs_has_psdas_structure_without_the_optimisation():
    s, t = _data(30, 22)
    rp = _make("random-pairs", s, t, 4, seed=1)
    dp = _make("double-paired", s, t, 4, seed=1)
    m = rp.matching
    assert m.pairs.shape == dp.matching.pairs.shape and m.quads.shape == dp.matching.quads.shape
    assert sorted(m.pairs[:, 0].tolist()) == list(range(30))
    assert set(np.bincount(m.pairs[:, 1], minlength=22).tolist()) <= {1, 2}
    assert np.isnan(m.stage1_cost)
    again = _make("random-pairs", s, t, 4, seed=1)
    assert again.digest() == rp.digest() != _make("random-pairs", s, t, 4, seed=2).digest()
    # Batches hold whole quadruplets, as PSDA's do.
    quads = {frozenset(map(tuple, m.pairs[q].tolist())) for q in m.quads}
    for b in rp:
        pairs = list(zip(b[:4], [x - 30 for x in b[4:]]))
        assert frozenset(pairs[:2]) in quads and frozenset(pairs[2:]) in quads


# -- psda.match and features changed by another thread ------------------------------------


def test_match_refuses_features_changed_while_it_runs():
    """The input is read in place with the GIL released: a result of no consistent input was reported optimal."""
    s, t = _data(3000, 3000, d=4)
    s = np.ascontiguousarray(s)

    def progress(done, total, phase):  # runs while Go reads s: stands for another thread's write
        s[0, 0] += 1.0

    with pytest.raises(RuntimeError, match="source changed while psda.match read it"):
        psda.match(s, t, batch_size=8, progress=progress)


# -- Ctrl-C in FeatureRefresher.wait() ---------------------------------------------------------


def test_ctrl_c_in_refresher_wait_cancels_the_background_matching():
    """The refresher said nothing was pending while the Go work went on and landed seconds later."""
    import _thread

    from torch.utils.data import TensorDataset

    from psda.refresh import FeatureRefresher

    s, t = _data(3000, 3000, d=4)
    sampler = psda.PairedBatchSampler(s, t, 8)
    src, tgt = TensorDataset(torch.tensor(s, dtype=torch.float32)), TensorDataset(torch.tensor(t, dtype=torch.float32))
    ref = FeatureRefresher(sampler, lambda x: x * 2.0, src, tgt, manual=True, background=True, progress=False)
    ref.refresh()
    assert ref.pending()
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        ref.wait()
    assert time.perf_counter() - t0 < 1.0  # cancelled, not run to the end
    assert not ref.pending()
    time.sleep(1.5)  # longer than the whole matching takes
    assert sampler.pending_matching is None  # nothing landed afterwards


# -- distributed.broadcast_features refuses what psda.match refuses ----------------------------


@pytest.mark.parametrize("dtype, word", [(np.complex128, "real"), (np.bool_, "bool")])
def test_broadcast_features_refuses_complex_and_bool(dtype, word):
    from psda.distributed import broadcast_features

    good = np.zeros((4, 2))
    with pytest.raises(TypeError, match=f"target has dtype .*{word}|{word}"):
        broadcast_features(good, np.ones((4, 2), dtype=dtype))


# -- the command lines -------------------------------------------------------------------------


def _run(args, env=None, code=None):
    e = dict(os.environ, PYTHONPATH=PY, **(env or {}))
    e.pop("RANK", None)
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=e, cwd="/tmp")


def test_variance_with_batches_of_the_whole_data_set_has_no_traceback():
    """`psda variance --n-source 2 --n-target 2 --k 2` ended in ZeroDivisionError after the run."""
    r = _run(["psda", "variance", "--n-source", "2", "--n-target", "2", "--k", "2", "--epochs", "5",
              "--methods", "uniform,paired", "--no-progress"])
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "ratio to uniform" in r.stdout and "n/a" in r.stdout


def test_variance_with_an_impossible_dim_fails_cleanly():
    r = _run(["psda", "variance", "--dim", str(10**12), "--k", "2", "--methods", "uniform", "--no-progress"])
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "out of memory" in r.stderr and "--dim" in r.stderr


def test_variance_plot_without_matplotlib_fails_before_the_run():
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from psda.cli import main\n"
            "sys.exit(main(['variance', '--n-source', '20', '--n-target', '20', '--k', '2', '--epochs', '5',"
            " '--methods', 'uniform', '--no-progress', '--plot', '/tmp/psda-never.png']))\n")
    r = _run(None, code=code)
    assert r.returncode == 2 and "needs matplotlib" in r.stderr, r.stderr
    assert "ratio to uniform" not in r.stdout  # refused before the run, not after it


def test_domainbed_help_without_domainbed_has_no_traceback():
    r = _run(["psda.domainbed", "--help"])
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "--sampler" in r.stdout and "DomainBed checkout on PYTHONPATH" in r.stdout
