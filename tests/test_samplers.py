"""The comparison samplers: the shared contract, and each one's defining property.

Every sampler of psda.SAMPLERS is checked against PairedBatchSampler's contract
with a real DataLoader (workers, mid-epoch resume, sharding, update). Each
set-up search is checked against an independent reference on tiny inputs:
explicit evaluation of its objective, enumeration (k-DPP inclusion
probabilities, k-means++ seeding probabilities) or random partitions. One
file of about 550 lines: the contract is shared, and each sampler's
references are a few dozen lines.
"""

import copy
import io
import itertools
import math
import pickle

import numpy as np
import pytest

import psda
from psda.samplers import exchange as ex
from psda.samplers.dpp import rbf_gram
from psda.samplers.kmeans import weighted_kmeans
from psda.samplers.stratified import anticlusters, vardass_strata

import oracles  # the NumPy references of the Go searches (tests/oracles.py)
from psda.variance import DiscrepancyError

torch = pytest.importorskip("torch")
from torch.utils.data import ConcatDataset, DataLoader, TensorDataset  # noqa: E402

NS, NT, K = 45, 38, 4
# The samplers that draw their batches in Python (the others are served by PSDA's Go schedule).
OURS = [n for n in psda.SAMPLERS if n not in ("paired", "double-paired", "random-pairs")]


def _data(ns=NS, nt=NT, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(ns, d)), rng.normal(0.5, 1.0, size=(nt, d))


def _make(name, s, t, k=K, **kw):
    kw.setdefault("num_replicas", 1)
    kw.setdefault("rank", 0)
    kw.setdefault("seed", 3)
    return psda.batch_sampler(name, s, t, k, **kw)


def _index_dataset():
    """ConcatDataset([source, target]) whose items are their own ConcatDataset indices."""
    return ConcatDataset([TensorDataset(torch.arange(NS)), TensorDataset(torch.arange(NT) + NS)])


@pytest.fixture(scope="module")
def built():
    s, t = _data()
    return s, t, {name: _make(name, s, t) for name in psda.SAMPLERS}


def test_names_and_factory_errors():
    assert psda.SAMPLERS == ("uniform", "kmeans++", "dpp", "anticlustering", "vardass", "ordered", "random-pairs",
                             "paired", "double-paired")
    s, t = _data()
    with pytest.raises(ValueError, match="want one of uniform, kmeans"):
        psda.batch_sampler("vardas", s, t, 4)
    with pytest.raises(ValueError, match="sets it"):
        psda.batch_sampler("paired", s, t, 4, stages=2)
    with pytest.raises(ValueError, match="batch_size <= 38"):
        psda.batch_sampler("vardass", s, t, 39, num_replicas=1, rank=0)
    # An option the name does not take is a ValueError, as batch_sampler's docstring says, naming
    # the option and the name's options (it was a TypeError about BatchSampler.__init__).
    with pytest.raises(ValueError, match=r"passes: not an option of 'kmeans\+\+' \(it takes chunk, .*seed\)"):
        psda.batch_sampler("kmeans++", s, t, 4, passes=3)
    with pytest.raises(ValueError, match=r"strat: not an option of 'ordered' .*strata"):
        psda.batch_sampler("ordered", s, t, 4, strat=3)
    with pytest.raises(ValueError, match=r"it takes .*solver, stages\)"):
        psda.batch_sampler("random-pairs", s, t, 4, passes=3)
    with pytest.raises(ValueError, match=r"it takes .*seed, solver\)"):  # stages: the name sets it
        psda.batch_sampler("paired", s, t, 4, passes=3)


@pytest.mark.parametrize("name", psda.SAMPLERS)
def test_layout_len_and_epochs(built, name):
    s, t, samplers = built
    sm = copy.deepcopy(samplers[name])
    k = K
    batches = list(sm)
    assert len(batches) == len(sm) == max(NS, NT) // k
    for b in batches:
        assert len(b) == 2 * k and all(isinstance(i, int) for i in b)
        assert all(0 <= i < NS for i in b[:k]) and all(NS <= i < NS + NT for i in b[k:])
        if name in OURS and name != "uniform":  # PSDA repeats rows of the smaller domain
            assert len(set(b[:k])) == k and len(set(b[k:])) == k  # distinct rows within a batch
    assert sm.epoch == 1  # advanced by the complete pass
    again = list(sm)
    sm.set_epoch(0)
    assert list(sm) == batches  # (seed, epoch) fixes the batches
    if name != "ordered" or len(sm) > 1:
        assert again != batches


@pytest.mark.parametrize("name", psda.SAMPLERS)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_serves_the_batches_and_resumes(built, name, num_workers):
    s, t, samplers = built
    sm = copy.deepcopy(samplers[name])
    ds = ConcatDataset([TensorDataset(torch.arange(NS)), TensorDataset(torch.arange(NT) + 1000)])
    want = list(copy.deepcopy(sm))
    loader = DataLoader(ds, batch_sampler=sm, num_workers=num_workers)
    got = [x.tolist() for (x,) in loader]
    assert got == [b[:K] + [i - NS + 1000 for i in b[K:]] for b in want]
    # Resume after 3 batches in a fresh sampler built from *other* features.
    sm.set_epoch(4)
    it = iter(sm)
    head = [next(it) for _ in range(3)]
    state = sm.state_dict()
    # Plain types and bytes only: torch.load(weights_only=True) takes it.
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    state = torch.load(buf, weights_only=True)
    rest = list(it)
    s2, t2 = _data(seed=9)
    fresh = _make(name, s2, t2, seed=11)
    fresh.load_state_dict(state)
    # The resumed sampler serves the rest of the epoch through the DataLoader.
    got = [x.tolist() for (x,) in DataLoader(_index_dataset(), batch_sampler=fresh, num_workers=num_workers)]
    assert got == rest and len(head) + len(rest) == len(sm)
    assert fresh.epoch == 5


@pytest.mark.parametrize("name", psda.SAMPLERS)  # every sampler offers views(): the base's
@pytest.mark.parametrize("num_workers", [0, 2])
def test_views_with_two_dataloaders(built, name, num_workers):
    s, t, samplers = built
    sm = copy.deepcopy(samplers[name])
    sm.set_epoch(1)
    want = list(sm)
    sm.set_epoch(1)
    sb, tb = sm.views()
    src = DataLoader(TensorDataset(torch.arange(NS)), batch_sampler=sb, num_workers=num_workers)
    tgt = DataLoader(TensorDataset(torch.arange(NT)), batch_sampler=tb, num_workers=num_workers)
    got = [xs.tolist() + (xt + NS).tolist() for (xs,), (xt,) in zip(src, tgt)]
    assert got == want and len(sb) == len(tb) == len(sm)
    assert sm.epoch == 2


@pytest.mark.parametrize("name", psda.SAMPLERS)
@pytest.mark.parametrize("drop_last", [True, False])
def test_sharding(built, name, drop_last):
    s, t, _ = built
    R = 3
    one = _make(name, s, t, drop_last=drop_last)
    one.set_epoch(2)
    full = list(one)  # the epoch's batches on a single rank
    total = len(full)
    if name in OURS:
        src, tgt = one.epoch_batches(2)
        # With drop_last=False the last batch serves the first N mod k columns.
        assert full == [a[: len(f) // 2].tolist() + (b[: len(f) // 2] + NS).tolist() for a, b, f in zip(src, tgt, full)]
    ranks = [_make(name, s, t, num_replicas=R, rank=r, drop_last=drop_last) for r in range(R)]
    per = total // R if drop_last else -(-total // R)
    seen = []
    for r, sm in enumerate(ranks):
        sm.set_epoch(2)
        got = [x.tolist() for (x,) in DataLoader(_index_dataset(), batch_sampler=sm)]
        assert len(got) == len(sm) == per
        for b, batch in enumerate(got):
            assert batch == full[(b * R + r) % total]  # rank r takes batches r, r + R, ... (psda/schedule.go)
        seen += got
    if drop_last:  # the ranks split the epoch: no batch twice
        assert len({tuple(b) for b in seen}) == per * R


@pytest.mark.parametrize("name", psda.SAMPLERS)
def test_update_pickle_and_refresh(built, name):
    s, t, samplers = built
    sm = copy.deepcopy(samplers[name])
    first = list(sm)
    s2, t2 = _data(seed=5)
    with pytest.raises(ValueError, match="same datasets"):
        sm.update(s2[:-1], t2)
    it = iter(sm)
    next(it)
    # FeatureRefresher's path: extract features with a model, then sampler.update.
    from psda.refresh import refresh

    refresh(sm, lambda x: x, TensorDataset(torch.tensor(s2)), TensorDataset(torch.tensor(t2)), progress=False)
    rest = list(it)  # the running epoch keeps its plan
    assert len(rest) == len(sm) - 1
    ref = _make(name, s2, t2)
    ref.set_epoch(sm.epoch)
    clone = pickle.loads(pickle.dumps(sm))
    want = list(ref)
    assert list(sm) == want  # the update is in force from the next epoch
    assert list(clone) == want  # and survives pickling
    assert first != want


def test_global_rng_untouched(built):
    s, t, samplers = built
    np.random.seed(1)
    torch.manual_seed(1)
    a, b = np.random.random(), torch.rand(1)
    np.random.seed(1)
    torch.manual_seed(1)
    for name in psda.SAMPLERS:
        list(copy.deepcopy(samplers[name]))
        _make(name, s, t, seed=8).update(s + 1, t)
    assert np.random.random() == a and torch.rand(1) == b


# -- defining properties --------------------------------------------------------


def _sse(phi, strata):
    return sum(float(((phi[h] - phi[h].mean(0)) ** 2).sum()) for h in strata)


def test_vardass_objective_decreases_and_matches_explicit():
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(60, 3))
    strata, hist = vardass_strata(phi, 5, passes=30, rng=np.random.default_rng(2))
    assert sorted(len(h) for h in strata) == [12] * 5
    assert sorted(np.concatenate(strata).tolist()) == list(range(60))
    assert all(b <= a + 1e-9 for a, b in zip(hist, hist[1:])), hist
    assert hist[-1] < hist[0]
    assert hist[-1] == pytest.approx(_sse(phi, strata), rel=1e-12)
    # Local optimality: no swap between two strata lowers the SSE.
    best = _sse(phi, strata)
    for a, b in itertools.combinations(range(5), 2):
        for i in strata[a][:4]:
            for j in strata[b][:4]:
                trial = [h.copy() for h in strata]
                trial[a][trial[a] == i], trial[b][trial[b] == j] = j, i
                assert _sse(phi, trial) >= best - 1e-9


def test_vardass_sampler_strata_are_the_plan_and_batches_take_one_each():
    s, t = _data(60, 48)
    sm = _make("vardass", s, t, k=4)
    strata = sm.strata("source")
    assert _sse(s, strata) == pytest.approx(sm.plan["source_objective"][-1], rel=1e-9)
    where = np.empty(60, int)
    for h, st in enumerate(strata):
        where[st] = h
    for b in sm:
        assert sorted(where[b[:4]]) == [0, 1, 2, 3]


def _wsse(X, w, g, k):
    """(3) of psda.samplers.kmeans by explicit loops."""
    f = 0.0
    for h in range(k):
        m = g == h
        c = (w[m, None] * X[m]).sum(0) / w[m].sum()
        f += float((w[m] * ((X[m] - c) ** 2).sum(1)).sum())
    return f


@pytest.mark.parametrize("engine", ["numpy", "go"])
def test_weighted_kmeans_with_min_size_descends_to_a_local_optimum(engine):
    rng = np.random.default_rng(5)
    X, w = rng.normal(size=(16, 2)), rng.uniform(0.2, 2.0, 16)
    g0 = np.arange(16) % 3
    kmeans = weighted_kmeans if engine == "go" else oracles.weighted_kmeans
    g, hist = kmeans(X, w, g0, 3, 4, passes=50, rng=np.random.default_rng(1))
    assert hist[0] == pytest.approx(_wsse(X, w, g0, 3), rel=1e-12)
    assert hist[-1] == pytest.approx(_wsse(X, w, g, 3), rel=1e-12) and hist[-1] < hist[0]
    assert all(b <= a + 1e-12 for a, b in zip(hist, hist[1:])), hist
    counts = np.bincount(g, minlength=3)
    assert counts.min() >= 4
    # No single move allowed by the minimum size lowers (3): enumeration.
    for i in range(16):
        if counts[g[i]] <= 4:
            continue
        for h in range(3):
            trial = g.copy()
            trial[i] = h
            assert _wsse(X, w, trial, 3) >= hist[-1] - 1e-9
    with pytest.raises(ValueError, match="min_size = 6"):
        kmeans(X, w, g0, 3, 6, rng=np.random.default_rng(1))


def test_allocation_is_proportional():
    """c >= 1, sum k, closest to N_h k / n in squares: against enumeration of all such c."""
    from psda.samplers.stratified import allocation

    rng = np.random.default_rng(0)
    for _ in range(150):
        H = int(rng.integers(1, 6))
        k = int(rng.integers(H, 11))
        sizes = rng.integers(5, 60, size=H)
        c = allocation(sizes, k)
        q = sizes * k / sizes.sum()
        best = min(sum((np.array(v) - q) ** 2) for v in itertools.product(range(1, k + 1), repeat=H) if sum(v) == k)
        assert c.sum() == k and c.min() >= 1
        assert sum((c - q) ** 2) == pytest.approx(best, abs=1e-12), (sizes, k, c)


def test_ordered_strata_allocation_and_order():
    s, t = _data(60, 52)
    sm = _make("ordered", s, t, k=4, discrepancy="mmd", kernel="linear")
    G = 15
    src, tgt = sm.batches()
    # Source (60 = G k rows): weighted k-means strata of at least min_cluster_size = G // 2
    # rows, rounded so that every batch takes counts[h] rows of stratum h.
    strata, counts = sm.strata("source"), sm.plan["source_counts"]
    assert sorted(np.concatenate(strata).tolist()) == list(range(60))
    assert counts.sum() == 4 and all(len(h) >= c * G >= G // 2 for h, c in zip(strata, counts))
    where = np.empty(60, int)
    for h, st in enumerate(strata):
        where[st] = h
    for b in src:
        assert np.array_equal(np.bincount(where[b], minlength=len(strata)), counts)
    assert sorted(np.concatenate(src).tolist()) == list(range(60))  # every row once per epoch
    # Target (52 rows < G k): rows repeated, never twice in one batch.
    assert all(len(set(b)) == 4 for b in tgt.tolist())
    hs = sm.plan["source_strata_objective"]
    assert all(b <= a + 1e-12 for a, b in zip(hs, hs[1:]))
    # The order: lower error than its random start, and the explicit error of the batches.
    hist = sm.plan["order_objective"]
    assert hist[-1] < hist[0] / 5 and all(b <= a + 1e-12 for a, b in zip(hist, hist[1:]))
    ev = DiscrepancyError(s, t, kernel="linear")
    explicit = ev.batch_errors([a.tolist() + (b + 60).tolist() for a, b in zip(src, tgt)]).sum()
    assert hist[-1] == pytest.approx(explicit, rel=1e-9)
    with pytest.raises(ValueError, match="strata = 5"):
        _make("ordered", s, t, k=4, strata=5)
    with pytest.raises(ValueError, match="min_cluster_size = 20"):
        _make("ordered", s, t, k=4, min_cluster_size=20)


def test_progress_reports_every_search(capsys):
    s, t = _data(60, 60)
    for name in ("vardass", "anticlustering", "ordered", "dpp"):
        sm = _make(name, s, t, k=4, progress=True)
    list(sm)  # the k-DPP draws happen per epoch
    err = capsys.readouterr().err
    for want in ("psda vardass: source pass 1/20", "psda anticlustering: target pass 1/20",
                 "psda ordered: source strata pass 1/20", "psda ordered: order pass 1/20",
                 "psda dpp: target k-DPP draws 15/15"):
        assert want in err, err
    last = {}
    for line in err.splitlines():  # every pass of each search, in order
        what, p = line.rsplit(" pass ", 1) if " pass " in line else (line, "0/0")
        p = int(p.split("/")[0])
        assert p == last.get(what, 0) + 1 or "dpp" in what
        last[what] = p


def test_ctrl_c_cancels_the_worker():
    """A KeyboardInterrupt in the main thread sets the cancel flag the Go loop polls, and waits for it."""
    import ctypes

    from psda import _native

    seen = []

    def call(cancel, done):  # stands for a Go search: reports a pass, then runs until cancelled
        ctypes.c_int64.from_address(done).value = 1
        while not ctypes.c_int32.from_address(cancel).value:
            pass
        seen.append("stopped")
        return _native._ERR_CANCELLED

    def on_count(p):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _native._run_counted(call, on_count, each=True)
    assert seen == ["stopped"]  # the worker saw the flag and ended before _run returned


def test_anticlustering_beats_random_partitions_and_matches_explicit():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 2))
    groups, hist = anticlusters(x, 4, passes=30, rng=np.random.default_rng(0))
    assert len(groups[-1]) == 0  # the spare group: 40 rows fill 10 groups of 4
    groups = groups[:-1]
    F = lambda gs: sum(float(((x[g].mean(0) - x.mean(0)) ** 2).sum()) for g in gs)  # noqa: E731
    assert hist[-1] == pytest.approx(F(groups), rel=1e-9)
    assert sorted(len(g) for g in groups) == [4] * 10
    rand = [F(np.split(rng.permutation(40), 10)) for _ in range(300)]
    assert hist[-1] < min(rand) / 10  # far better than the best of 300 random partitions
    # Papenberg & Klau's criterion: within-group sum of squares, maximal among all single swaps.
    assert all(b <= a + 1e-12 for a, b in zip(hist, hist[1:]))


def test_exchange_engines_agree_on_the_objective():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 2))
    g0 = np.arange(30) % 6
    args = (X, np.ones(30), g0, np.zeros(30, np.int64), np.zeros((6, 2)), np.ones(6))
    for exchange in (oracles.exchange, ex.exchange):
        g, h = exchange(*args, sign=1.0, passes=20, rng=np.random.default_rng(0))
        assert h[-1] == pytest.approx(ex.objective(X, np.ones(30), g, np.zeros((6, 2)), np.ones(6)), rel=1e-12)
        assert np.array_equal(np.bincount(g), np.bincount(g0))


@pytest.mark.parametrize("engine", ["numpy", "go"])
def test_kdpp_inclusion_probabilities_match_enumeration(engine):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(7, 2))
    L = rbf_gram(x, (0.3, 1.0))
    k, n = 3, 7
    subsets = list(itertools.combinations(range(n), k))
    w = np.array([np.linalg.det(L[np.ix_(S, S)]) for S in subsets])
    p = w / w.sum()
    incl = np.array([sum(pi for pi, S in zip(p, subsets) if i in S) for i in range(n)])
    lam, v = np.linalg.eigh(L)
    N = 20000 if engine == "go" else 8000  # NumPy draws one subset per Python loop
    if engine == "go":
        from psda import _native

        draws = _native.kdpp_sample(lam, v, k, N, seed=0)
    else:
        draws = oracles.kdpp_sample(lam, v, oracles.log_esp(lam, k), k, N, np.random.default_rng(0))
    assert all(len(set(r)) == k for r in draws[:100])
    freq = np.bincount(draws.ravel(), minlength=n) / N
    # Each frequency is a binomial proportion: 5 standard errors (a false
    # alarm about once in 2e6 per entry) with the fixed seed.
    tol = 5 * np.sqrt(incl * (1 - incl) / N)
    assert np.all(np.abs(freq - incl) <= tol), (freq, incl)
    # The subsets themselves: chi-square against det(L_Y)/e_k, 34 degrees of freedom.
    idx = {S: j for j, S in enumerate(subsets)}
    counts = np.bincount([idx[tuple(sorted(r))] for r in draws], minlength=len(subsets))
    chi2 = float(((counts - N * p) ** 2 / (N * p)).sum())
    assert chi2 < 80  # the 0.99999 quantile of chi-square(34) is about 76.5


def test_kmeanspp_seeding_distribution():
    from psda.samplers.simple import _augment, _kmeanspp

    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    n, N = 4, 40000
    d2 = ((x[:, None] - x[None]) ** 2).sum(-1)
    want = np.zeros((n, n))
    for i in range(n):
        want[i] = 0.25 * d2[i] / d2[i].sum()
    got = _kmeanspp(_augment(x), n, 2, N, np.random.default_rng(0))
    freq = np.zeros((n, n))
    np.add.at(freq, (got[:, 0], got[:, 1]), 1.0 / N)
    tol = 5 * np.sqrt(want * (1 - want) / N) + 1e-12
    assert np.all(np.abs(freq - want) <= tol), (freq, want)


def test_variance_reduction_order_on_gaussians():
    """A smoke check of the variance experiment: the strata/anticlusters/order beat uniform."""
    s, t = _data(400, 400, seed=2)
    ev = DiscrepancyError(s, t, kernel="linear")
    err = {}
    for name in ("uniform", "vardass", "anticlustering", "ordered"):
        sm = _make(name, s, t, k=8)
        err[name] = np.mean([ev.batch_errors(iter(sm)).mean() for _ in range(3)])
    assert err["vardass"] < err["uniform"] / 2
    assert err["anticlustering"] < err["uniform"] / 20
    assert err["ordered"] < err["uniform"] / 20


@pytest.mark.parametrize("name", ["vardass", "ordered", "anticlustering"])
@pytest.mark.parametrize("disc,kernel", [("mmd", "rbf"), ("coral", "linear")])
def test_other_discrepancies_build(name, disc, kernel):
    s, t = _data(40, 36, d=3)
    sm = _make(name, s, t, k=4, discrepancy=disc, kernel=kernel)
    assert len(list(sm)) == len(sm) == 10


GLOO = ["vardass", "dpp", "ordered"]  # one per kind of plan; the sharding of all is tested above


def _dist_worker(rank, world_size, port, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, world_size=world_size, rank=rank)
    from psda.samplers import distributed_batch_sampler

    out = {}
    for name in GLOO:
        s, t = _data(seed=rank)  # rank 1's own features are replaced by rank 0's
        sm = distributed_batch_sampler(name, s.astype(np.float32), t.astype(np.float32), K, seed=5)
        out[name] = (len(sm), list(sm))
    with open(f"{out_dir}/rank{rank}.pkl", "wb") as f:
        pickle.dump(out, f)
    dist.destroy_process_group()


def test_two_process_gloo_shards_one_plan(tmp_path):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    mp.spawn(_dist_worker, args=(2, port, str(tmp_path)), nprocs=2, join=True)
    r0, r1 = (pickle.load(open(tmp_path / f"rank{r}.pkl", "rb")) for r in range(2))
    s, _ = _data(seed=0)
    for name in GLOO:
        (n0, b0), (n1, b1) = r0[name], r1[name]
        assert n0 == n1 == len(b0) == len(b1)
        # Rank 0 has batches 0, 2, 4, ... and rank 1 batches 1, 3, 5, ... of one epoch.
        one = _make(name, s.astype(np.float32), _data(seed=0)[1].astype(np.float32), seed=5)
        full = list(one)
        assert b0 == full[0::2][:n0] and b1 == full[1::2][:n1]


def test_one_set_of_options_serves_every_name():
    s, t = _data()
    opts = dict(discrepancy="mmd", kernel="linear", seed=1, drop_last=True, num_replicas=1, rank=0)
    for name in psda.SAMPLERS:
        sm = psda.batch_sampler(name, s, t, 4, **opts)
        assert len(list(sm)) == len(sm)
    with pytest.raises(ValueError, match="discrepancy = 'kl'"):
        psda.batch_sampler("uniform", s, t, 4, discrepancy="kl")


def test_c_entries_cancel_and_check_sizes():
    from psda import _native

    native, fn = _native, _native._lib.psda_exchange_f64
    a = native._addr
    X = np.random.default_rng(0).normal(size=(200, 2))
    w, cls = np.ones(200), np.zeros(200, np.int64)
    group = np.arange(200, dtype=np.int64) % 10
    centre, omega = np.zeros((10, 2)), np.ones(10)
    hist, hlen, done = np.zeros(6), np.zeros(1, np.int64), np.zeros(1, np.int64)
    cancel = np.ones(1, np.int32)  # Ctrl-C already pressed: the first poll stops the search
    st = fn(a(X), 200, 2, a(w), a(group), a(cls), a(centre), 10, a(omega), 1.0, 5, 0, 1, a(hist), 6, a(hlen),
            a(cancel), a(done))
    assert st == native._ERR_CANCELLED and done[0] == 0
    st = fn(a(X), 200, 2, a(w), a(group), a(cls), a(centre), 10, a(omega), 1.0, 5, 0, 1, a(hist), 3, a(hlen),
            None, None)
    assert st == native._ERR_SIZE
    with pytest.raises(Exception, match="history_cap = 3"):
        native._check(st)
    kd = _native._lib.psda_kdpp_sample_f64
    lam, v = np.array([0.0, 0.0, 1.0]), np.eye(3)
    out = np.zeros((1, 2), np.int64)
    st = kd(a(lam), 3, a(v), 3, 2, 1, 0, a(out), 2, None, None)
    assert st == native._ERR_INVALID
    with pytest.raises(Exception, match="fewer than k = 2"):
        native._check(st)
    km = _native._lib.psda_kmeans_f64
    g = np.arange(200, dtype=np.int64) % 10
    hist, hlen, done = np.zeros(21), np.zeros(1, np.int64), np.zeros(1, np.int64)
    st = km(a(X), 200, 2, a(w), a(g), 10, 5, 20, 1, a(hist), 21, a(hlen), a(np.ones(1, np.int32)), a(done))
    assert st == native._ERR_CANCELLED and done[0] == 0
    st = km(a(X), 200, 2, a(w), a(g), 10, 5, 20, 1, a(hist), 21, a(hlen), a(np.zeros(1, np.int32)), a(done))
    assert st == native._OK and done[0] == hlen[0] - 1 >= 1  # every pass reported
    st = km(a(X), 200, 2, a(w), a(g), 10, 21, 20, 1, a(hist), 21, a(hlen), None, None)
    assert st == native._ERR_INVALID
    with pytest.raises(Exception, match="MinSize = 21"):
        native._check(st)
