"""Tests of psda.PairedBatchSampler with the real torch DataLoader.

One file of about 600 lines: one public object, its contract as a batch
sampler, and its state; the comparison samplers are in test_samplers.py.
"""

from __future__ import annotations

import copy
import io
import pickle
import random
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader, Sampler  # noqa: E402

import psda  # noqa: E402

from conftest import check_matching_structure, features, index_datasets, split_loader_batch  # noqa: E402

# (n_source, n_target) cases: balanced, imbalanced both ways, odd numbers of pairs.
SIZES = [(40, 40), (45, 17), (17, 45), (33, 32)]


def make(ns=40, nt=40, k=4, seed=0, rng_seed=0, **kw):
    s, t = features(np.random.default_rng(rng_seed), ns, nt)
    return psda.PairedBatchSampler(s, t, k, seed=seed, **kw), s, t


def pair_index(m):
    """Maps (source, target) to its row in m.pairs (pairs are unique: the larger side appears once)."""
    return {(int(a), int(b)): r for r, (a, b) in enumerate(m.pairs)}


def check_batches(batches, m, k, stages, ns, drop_last, num_replicas=1):
    """Layout, pairing and quadruplets of one rank's epoch against m; returns the pair rows served."""
    index = pair_index(m)
    quads = {frozenset(map(int, q)) for q in m.quads}
    rows = []
    for i, b in enumerate(batches):
        assert all(type(x) is int for x in b)
        n = len(b) // 2
        assert len(b) == 2 * n and (n == k or (not drop_last and 0 < n < k))
        src, tgt = b[:n], [x - ns for x in b[n:]]
        assert all(0 <= x < ns for x in src) and all(0 <= x < m.n_target for x in tgt)
        r = [index[(a, c)] for a, c in zip(src, tgt)]  # KeyError: position m is not a matched pair
        if stages == 2:
            # Quadruplets come first in the epoch's order and k is even, so
            # every aligned position pair is a quadruplet (the single pair,
            # last, can only be alone at the end of a short final batch).
            for j in range(0, n - 1, 2):
                assert frozenset((r[j], r[j + 1])) in quads
        rows += r
    return rows


# ---------------------------------------------------------------------------
# Layout and coverage through a real DataLoader
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("drop_last", [True, False])
@pytest.mark.parametrize("ns,nt", SIZES)
def test_layout_pairing_and_coverage(ns, nt, drop_last, stages):
    k = 6
    sampler, s, t = make(ns, nt, k, stages=stages, drop_last=drop_last)
    m = sampler.matching
    check_matching_structure(m, ns, nt, stages)
    ds, _, _ = index_datasets(ns, nt)
    loader = DataLoader(ds, batch_sampler=sampler)
    batches = []
    for batch in loader:
        src, tgt = split_loader_batch(batch, ns)
        batches.append(src + [x + ns for x in tgt])
    assert len(batches) == len(sampler) == len(loader)
    rows = check_batches(batches, m, k, stages, ns, drop_last)
    p = max(ns, nt)
    assert len(rows) == len(set(rows))  # every pair at most once
    if drop_last:
        assert len(rows) == (p // k) * k
    else:
        assert sorted(rows) == list(range(p))  # exactly once


@pytest.mark.parametrize("stages", [1, 2])
@pytest.mark.parametrize("ns,nt", [(90, 64), (33, 70)])
def test_sparse_solver_serves_valid_batches(ns, nt, stages):
    """solver='sparse' computes the matching on the sparse path, at construction and in
    update(): batches as with dense, and the same certified Stage 1 optimum."""
    k = 8
    sampler, s, t = make(ns, nt, k, stages=stages, drop_last=False, solver="sparse")
    assert sampler.solver == "sparse" and "solver='sparse'" in repr(sampler)
    m = sampler.matching
    check_matching_structure(m, ns, nt, stages)
    dense = psda.match(s, t, batch_size=k, stages=stages, solver="dense")
    assert m.stage1_cost == pytest.approx(dense.stage1_cost, rel=1e-9)
    assert set(pair_index(m)) == set(pair_index(dense))  # untied random data: one optimum
    rows = check_batches(list(sampler), m, k, stages, ns, drop_last=False)
    assert sorted(rows) == list(range(max(ns, nt)))

    new_s, new_t = features(np.random.default_rng(5), ns, nt, d=4)
    sampler.update(new_s, new_t)
    new = sampler.pending_matching
    check_matching_structure(new, ns, nt, stages)
    want = psda.match(new_s, new_t, batch_size=k, stages=stages, solver="dense")
    assert new.stage1_cost == pytest.approx(want.stage1_cost, rel=1e-9)
    check_batches(list(sampler), new, k, stages, ns, drop_last=False)


def test_solver_survives_state_pickle_and_copy():
    a, _, _ = make(40, 30, 4, solver="Sparse")
    assert a.solver == "sparse" and a.state_dict()["options"]["solver"] == "sparse"
    for b in (copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert b.solver == "sparse" and b.matching.fingerprint == a.matching.fingerprint
    # load_state_dict keeps the loading sampler's own solver (both are exact).
    fresh, _, _ = make(40, 30, 4)
    fresh.load_state_dict(roundtrip(a.state_dict()))
    assert fresh.solver == "auto" and fresh.matching.fingerprint == a.matching.fingerprint


@pytest.mark.parametrize("stages", [1, 2])
def test_quadruplets_adjacent(stages):
    """With stages=2 the pairs at positions 2m, 2m+1 form a quadruplet; full coverage checks them all."""
    sampler, _, _ = make(44, 30, 4, stages=stages, drop_last=False)
    m = sampler.matching
    index = pair_index(m)
    quads = {frozenset(map(int, q)) for q in m.quads}
    found = 0
    for b in sampler:
        n = len(b) // 2
        r = [index[(a, c - 44)] for a, c in zip(b[:n], b[n:])]
        for j in range(0, n - 1, 2):
            found += frozenset(r[j : j + 2]) in quads
    assert found == (len(m.quads) if stages == 2 else 0)


@pytest.mark.parametrize("ns,nt", [(37, 13), (13, 37), (50, 7), (7, 50)])
def test_imbalanced_multiplicities(ns, nt):
    sampler, _, _ = make(ns, nt, 4, drop_last=False, stages=2)
    cs, ct = Counter(), Counter()
    for b in sampler:
        n = len(b) // 2
        cs.update(b[:n])
        ct.update(x - ns for x in b[n:])
    big, small, nsmall = (cs, ct, nt) if ns > nt else (ct, cs, ns)
    assert set(big.values()) == {1} and len(big) == max(ns, nt)
    counts = [small[i] for i in range(nsmall)]
    assert min(counts) >= 1 and max(counts) - min(counts) <= 1


@pytest.mark.parametrize("drop_last", [True, False])
@pytest.mark.parametrize("k", [2, 4, 8, 32])
@pytest.mark.parametrize("ns,nt", SIZES)
def test_len_exact(ns, nt, k, drop_last):
    sampler, _, _ = make(ns, nt, k, drop_last=drop_last)
    ds, _, _ = index_datasets(ns, nt)
    p = max(ns, nt)
    want = p // k if drop_last else -(-p // k)
    assert len(sampler) == want == len(list(sampler)) == len(DataLoader(ds, batch_sampler=sampler))


def test_is_a_torch_batch_sampler():
    sampler, _, _ = make()
    assert isinstance(sampler, Sampler)
    for view in sampler.views():
        assert isinstance(view, Sampler)
    assert "PairedBatchSampler(" in repr(sampler) and "batches_per_epoch=10" in repr(sampler)


# ---------------------------------------------------------------------------
# Randomness: determinism, epochs, no global RNG
# ---------------------------------------------------------------------------


def test_determinism_and_epochs():
    a, _, _ = make(seed=7)
    b, _, _ = make(seed=7)
    a0, a1 = list(a), list(a)  # the epoch advances after a complete pass
    assert a.epoch == 2
    assert a0 == list(b) and a1 == list(b)
    assert a0 != a1
    a.set_epoch(0)
    assert list(a) == a0
    a.set_epoch(1)
    assert list(a) == a1
    c, _, _ = make(seed=8)
    assert list(c) != a0
    # An abandoned pass does not advance the epoch.
    d, _, _ = make(seed=7)
    it = iter(d)
    next(it)
    assert d.epoch == 0 and list(d) == a0


def test_seed_accepts_any_int():
    a, _, _ = make(seed=-1)
    b, _, _ = make(seed=2**64 - 1)
    assert list(a) == list(b)
    with pytest.raises(TypeError, match="seed = 1.5"):
        make(seed=1.5)


def test_global_rng_untouched():
    np.random.seed(3)
    torch.manual_seed(3)
    random.seed(3)
    np_state, torch_state, py_state = np.random.get_state(), torch.get_rng_state(), random.getstate()
    sampler, s, t = make(60, 45, 4)
    for _ in range(3):
        list(sampler)
    sampler.update(s + 1, t)
    list(sampler)
    for a, b in zip(np_state, np.random.get_state()):
        assert np.array_equal(a, b)
    assert torch.equal(torch_state, torch.get_rng_state())
    assert py_state == random.getstate()


# ---------------------------------------------------------------------------
# DataLoader workers
# ---------------------------------------------------------------------------


def loader_epoch(loader, ns):
    out = []
    for batch in loader:
        src, tgt = split_loader_batch(batch, ns)
        out.append(src + [x + ns for x in tgt])
    return out


@pytest.mark.parametrize("num_workers", [0, 2])
def test_workers_serve_the_sampler_batches(num_workers):
    ns, nt = 45, 30
    sampler, _, _ = make(ns, nt, 4, seed=3)
    twin, _, _ = make(ns, nt, 4, seed=3)
    ds, _, _ = index_datasets(ns, nt)
    kw = {"multiprocessing_context": "fork"} if num_workers else {}
    loader = DataLoader(ds, batch_sampler=sampler, num_workers=num_workers, **kw)
    for _ in range(2):
        assert loader_epoch(loader, ns) == list(twin)


def test_persistent_workers_pick_up_update_at_next_epoch():
    ns, nt, k = 48, 40, 4
    sampler, s, t = make(ns, nt, k, seed=1)
    ds, _, _ = index_datasets(ns, nt)
    loader = DataLoader(ds, batch_sampler=sampler, num_workers=2, persistent_workers=True, multiprocessing_context="fork")
    old = sampler.matching
    first = loader_epoch(loader, ns)
    check_batches(first, old, k, 2, ns, True)

    # update() in the middle of an epoch: the running epoch keeps the old matching.
    new_s, new_t = features(np.random.default_rng(99), ns, nt)
    it = iter(loader)
    head = [next(it) for _ in range(3)]
    sampler.update(new_s, new_t)
    assert sampler.matching is old and sampler.pending_matching is not None
    new = sampler.pending_matching
    assert new.fingerprint != old.fingerprint
    rest = [split_loader_batch(b, ns) for b in it]
    mid = [a + [x + ns for x in c] for a, c in (split_loader_batch(b, ns) for b in head)] + [a + [x + ns for x in c] for a, c in rest]
    assert len(mid) == len(sampler)
    check_batches(mid, old, k, 2, ns, True)

    # The next epoch uses the new matching, on the same persistent workers.
    after = loader_epoch(loader, ns)
    assert sampler.matching is new and sampler.pending_matching is None
    check_batches(after, new, k, 2, ns, True)
    with pytest.raises(KeyError):
        check_batches(after, old, k, 2, ns, True)


def test_update_checks_its_input():
    sampler, s, t = make(20, 16, 4)
    with pytest.raises(ValueError, match="update\\(\\) got 19 source and 16 target"):
        sampler.update(s[:19], t)
    with pytest.raises(ValueError, match=r"source_features\[2, 0\] = nan"):
        bad = s.copy()
        bad[2, 0] = np.nan
        sampler.update(bad, t)
    # A different feature dimension is fine: the examples are the same.
    sampler.update(np.hstack([s, s]), np.hstack([t, t]))
    list(sampler)
    assert sampler.matching.n_source == 20


# ---------------------------------------------------------------------------
# Resume
# ---------------------------------------------------------------------------


def roundtrip(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


@pytest.mark.parametrize("drop_last", [True, False])
def test_resume_after_b_batches(drop_last):
    ns, nt, k = 45, 30, 4
    a, s, t = make(ns, nt, k, seed=5, drop_last=drop_last)
    list(a)  # be in epoch 1
    nb = len(a)
    full = list(a)
    following = list(a)
    for b in range(0, nb + 1):
        a.set_epoch(1)
        it = iter(a)
        head = [next(it) for _ in range(b)]
        assert head == full[:b]
        state = roundtrip(a.state_dict())
        assert (state["epoch"], state["batches"]) == ((1, b) if b < nb else (2, 0))
        # A fresh sampler built from other features: the state carries the matching.
        fresh, _, _ = make(ns, nt, k, seed=0, rng_seed=42, drop_last=drop_last)
        assert fresh.matching.fingerprint != a.matching.fingerprint
        fresh.load_state_dict(state)
        assert fresh.matching.fingerprint == a.matching.fingerprint
        if b < nb:
            assert list(fresh) == full[b:]
        assert list(fresh) == following


def test_resume_with_pending_update():
    ns, nt, k = 40, 36, 4
    a, s, t = make(ns, nt, k, seed=2)
    it = iter(a)
    head = [next(it) for _ in range(4)]
    a.update(*features(np.random.default_rng(7), ns, nt))
    state = roundtrip(a.state_dict())
    rest = list(it)
    nxt = list(a)  # uses the updated matching
    fresh, _, _ = make(ns, nt, k)
    fresh.load_state_dict(state)
    assert fresh.pending_matching.fingerprint == a.matching.fingerprint
    assert list(fresh) == rest
    assert list(fresh) == nxt
    assert len(head) + len(rest) == len(a)


def test_resume_then_set_epoch_keeps_position():
    a, _, _ = make(seed=4)
    it = iter(a)
    next(it), next(it)
    state = a.state_dict()
    rest = list(it)
    fresh, _, _ = make()
    fresh.load_state_dict(state)
    fresh.set_epoch(0)  # the DistributedSampler habit at the top of the epoch loop
    assert list(fresh) == rest


def test_load_state_dict_errors():
    a, _, _ = make(40, 30, 4)
    state = a.state_dict()
    for kw, key in [({"k": 8}, "batch_size"), ({"drop_last": False}, "drop_last"),
                    ({"num_replicas": 2, "rank": 1}, "num_replicas"), ({"ns": 41}, "n_source")]:
        args = {"ns": 40, "nt": 30, "k": 4, **kw}
        other, _, _ = make(args.pop("ns"), args.pop("nt"), args.pop("k"), **args)
        with pytest.raises(ValueError, match=f"state_dict has {key} = .* but this sampler has {key} ="):
            other.load_state_dict(state)
    with pytest.raises(ValueError, match="not a psda.BatchSampler/2 state"):
        a.load_state_dict({"epoch": 0})
    bad = copy.deepcopy(state)
    blob = bad["plan"]["arrays"]
    bad["plan"]["arrays"] = blob[:-8] + (int.from_bytes(blob[-8:], "little") ^ 1).to_bytes(8, "little")
    with pytest.raises(ValueError, match="corrupt"):
        a.load_state_dict(bad)
    bad = dict(state, batches=99)
    with pytest.raises(ValueError, match="batches = 99"):
        a.load_state_dict(bad)


def test_deepcopy_and_pickle_continue_identically():
    a, _, _ = make(seed=9)
    it = iter(a)
    next(it)
    copies = [copy.deepcopy(a), pickle.loads(pickle.dumps(a))]
    rest, following = list(it), list(a)
    for b in copies:
        assert b.matching.fingerprint == a.matching.fingerprint
        assert list(b) == rest and list(b) == following


# ---------------------------------------------------------------------------
# Views for two DataLoaders
# ---------------------------------------------------------------------------


def test_views_one_after_the_other():
    ns, nt = 45, 30
    sampler, _, _ = make(ns, nt, 4, seed=6)
    twin, _, _ = make(ns, nt, 4, seed=6)
    sb, tb = sampler.views()
    assert len(sb) == len(tb) == len(sampler)
    for _ in range(2):  # two epochs
        src = list(sb)
        tgt = list(tb)
        want = list(twin)
        assert [a + [x + ns for x in c] for a, c in zip(src, tgt)] == want


def test_views_in_lockstep_with_two_loaders():
    ns, nt = 40, 34
    sampler, _, _ = make(ns, nt, 4, seed=6)
    twin, _, _ = make(ns, nt, 4, seed=6)
    _, sds, tds = index_datasets(ns, nt)
    sb, tb = sampler.views()
    ls = DataLoader(sds, batch_sampler=sb, num_workers=2, multiprocessing_context="fork")
    lt = DataLoader(tds, batch_sampler=tb)
    for _ in range(2):
        got = [xs[:, 1].tolist() + (xt[:, 1] + ns).tolist() for xs, xt in zip(ls, lt)]
        assert got == list(twin)


def test_views_resume():
    ns, nt = 40, 34
    sampler, _, _ = make(ns, nt, 4, seed=6)
    sb, tb = sampler.views()
    its, itt = iter(sb), iter(tb)
    for _ in range(3):
        next(its), next(itt)
    state = sampler.state_dict()
    rest = list(zip(its, itt))
    fresh, _, _ = make(ns, nt, 4)
    fresh.load_state_dict(state)
    fs, ft = fresh.views()
    assert list(zip(fs, ft)) == rest


# ---------------------------------------------------------------------------
# Sharding over replicas
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("drop_last", [True, False])
@pytest.mark.parametrize("ns,nt,k", [(40, 40, 4), (45, 17, 4), (40, 40, 6), (17, 45, 2)])
def test_sharding(ns, nt, k, drop_last):
    single, _, _ = make(ns, nt, k, seed=3, drop_last=drop_last)
    whole = list(single)
    shards = []
    for rank in range(2):
        r, _, _ = make(ns, nt, k, seed=3, drop_last=drop_last, num_replicas=2, rank=rank)
        assert r.matching.fingerprint == single.matching.fingerprint
        shards.append(list(r))
        assert len(shards[-1]) == len(r)
    assert len(shards[0]) == len(shards[1])
    s0, s1 = {tuple(b) for b in shards[0]}, {tuple(b) for b in shards[1]}
    if drop_last:
        assert not s0 & s1  # disjoint
        assert len(shards[0]) == len(whole) // 2
        assert s0 | s1 <= {tuple(b) for b in whole}
        assert len(s0 | s1) == 2 * (len(whole) // 2)
        if len(whole) % 2 == 0:
            assert s0 | s1 == {tuple(b) for b in whole}
    else:
        assert s0 | s1 == {tuple(b) for b in whole}  # padding repeats batches
        assert len(shards[0]) == -(-len(whole) // 2)


def test_sharded_loaders():
    ns, nt, k = 40, 40, 4
    ds, _, _ = index_datasets(ns, nt)
    seen = []
    for rank in range(2):
        r, _, _ = make(ns, nt, k, num_replicas=2, rank=rank)
        seen += loader_epoch(DataLoader(ds, batch_sampler=r, num_workers=2, multiprocessing_context="fork"), ns)
    flat = [x for b in seen for x in b]
    assert sorted(x for x in flat if x < ns) == list(range(ns))


# ---------------------------------------------------------------------------
# Inputs and bad arguments
# ---------------------------------------------------------------------------


def test_accepts_torch_tensors_and_other_dtypes():
    s, t = features(np.random.default_rng(0), 30, 20, dtype=np.float32)
    want = psda.PairedBatchSampler(s, t, 4).matching.fingerprint
    assert psda.PairedBatchSampler(torch.from_numpy(s), torch.from_numpy(t), 4).matching.fingerprint == want
    assert psda.PairedBatchSampler(np.asfortranarray(s), t, 4).matching.fingerprint == want
    h = psda.PairedBatchSampler(s.astype(np.float16), t.astype(np.float16), 4)
    assert h.matching.fingerprint == psda.match(s.astype(np.float16).astype(np.float32),
                                                t.astype(np.float16).astype(np.float32), batch_size=4).fingerprint


S, T = features(np.random.default_rng(0), 12, 10)

BAD_SAMPLER = {
    # name: (args, kwargs, exception, substrings)
    "nan": ((np.where(np.arange(36).reshape(12, 3) == 17, np.nan, S), T, 4), {}, ValueError,
            ["source_features[5, 2] = nan", "row 5"]),
    "1-D target": ((S, T[:, 0], 4), {}, ValueError, ["target_features has shape (10,)", "2-D"]),
    "empty": ((S, T[:0], 4), {}, ValueError, ["target_features has shape (0, 3)"]),
    "dimension mismatch": ((S, T[:, :1], 4), {}, ValueError, ["source_features has 3 features", "target_features has 1"]),
    "object": ((S.astype(object), T, 4), {}, TypeError, ["source_features has dtype object"]),
    "complex": ((S, T + 0j, 4), {}, TypeError, ["target_features", "complex"]),
    "batch_size 0": ((S, T, 0), {}, ValueError, ["batch_size = 0"]),
    "batch_size float": ((S, T, 4.5), {}, TypeError, ["batch_size = 4.5"]),
    "odd batch_size": ((S, T, 3), {}, ValueError, ["batch_size = 3 with stages = 2", "even"]),
    "batch_size too large": ((S, T, 16), {}, ValueError, ["batch_size = 16", "only 12 pairs"]),
    "too large for replicas": ((S, T, 4), {"num_replicas": 4}, ValueError,
                               ["batch_size = 4 with num_replicas = 4", "3 full batch(es)", "batch_size <= 2"]),
    "unknown discrepancy": ((S, T, 4), {"discrepancy": "kl"}, ValueError, ["discrepancy = 'kl'"]),
    "unknown kernel": ((S, T, 4), {"kernel": "laplace"}, ValueError, ["kernel = 'laplace'"]),
    "unknown stages": ((S, T, 4), {"stages": 4}, ValueError, ["stages = 4"]),
    "coral batch_size 1": ((S, T, 1), {"discrepancy": "coral", "stages": 1}, ValueError, ["batch_size = 1", ">= 2"]),
    "rank too large": ((S, T, 4), {"num_replicas": 2, "rank": 2}, ValueError, ["rank = 2", "num_replicas = 2"]),
    "rank negative": ((S, T, 4), {"rank": -1}, ValueError, ["rank = -1"]),
    "num_replicas 0": ((S, T, 4), {"num_replicas": 0}, ValueError, ["num_replicas = 0", ">= 1"]),
    "drop_last not bool": ((S, T, 4), {"drop_last": "yes"}, TypeError, ["drop_last = 'yes'"]),
    "seed not int": ((S, T, 4), {"seed": "0"}, TypeError, ["seed = '0'"]),
    "unknown solver": ((S, T, 4), {"solver": "fast"}, ValueError, ["solver = 'fast'", "'auto'", "'dense'", "'sparse'"]),
}


@pytest.mark.parametrize("case", list(BAD_SAMPLER), ids=list(BAD_SAMPLER))
def test_bad_arguments(case):
    args, kw, exc, parts = BAD_SAMPLER[case]
    with pytest.raises(exc) as info:
        psda.PairedBatchSampler(*args, **kw)
    for part in parts:
        assert part in str(info.value), (part, str(info.value))


def test_set_epoch_checks():
    sampler, _, _ = make()
    with pytest.raises(ValueError, match="epoch = -1"):
        sampler.set_epoch(-1)
    with pytest.raises(TypeError, match="epoch = 1.0"):
        sampler.set_epoch(1.0)


def test_works_without_torch():
    """psda imports and samples with torch unavailable (the sampler is then a plain class)."""
    code = """
import sys
sys.modules["torch"] = None  # any import of torch fails
import numpy as np, psda
rng = np.random.default_rng(0)
s, t = rng.normal(size=(20, 3)), rng.normal(size=(14, 3))
m = psda.match(s, t, batch_size=4)
sampler = psda.PairedBatchSampler(s, t, 4)
batches = list(sampler)
assert len(batches) == len(sampler) == 5 and all(len(b) == 8 for b in batches)
assert type(sampler).__mro__[-2] is psda.samplers.BatchSampler and type(sampler).__mro__[-1] is object
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_import_psda_does_not_import_torch():
    code = "import sys, psda; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_through_a_dataloader(num_workers):
    """A DataLoader over a sampler loaded with a mid-epoch state serves exactly the rest of the epoch."""
    ns, nt = 45, 30
    a, _, _ = make(ns, nt, 4, seed=11)
    it = iter(a)
    head = [next(it) for _ in range(3)]
    state = a.state_dict()
    rest, following = list(it), list(a)
    fresh, _, _ = make(ns, nt, 4)
    fresh.load_state_dict(state)
    ds, _, _ = index_datasets(ns, nt)
    kw = {"multiprocessing_context": "fork"} if num_workers else {}
    loader = DataLoader(ds, batch_sampler=fresh, num_workers=num_workers, **kw)
    assert loader_epoch(loader, ns) == rest
    assert loader_epoch(loader, ns) == following
    assert len(head) + len(rest) == len(a)


def test_update_from_a_background_thread():
    """update() may run in another thread while an epoch is served; it lands at the next epoch."""
    import threading

    ns, nt, k = 60, 50, 4
    sampler, _, _ = make(ns, nt, k, seed=2)
    old = sampler.matching
    new_s, new_t = features(np.random.default_rng(5), ns, nt)
    it = iter(sampler)
    first = [next(it)]
    worker = threading.Thread(target=sampler.update, args=(new_s, new_t))
    worker.start()
    first += list(it)  # the rest of the epoch, while (or after) the update runs
    worker.join()
    check_batches(first, old, k, 2, ns, True)
    second = list(sampler)
    assert sampler.matching is not old
    check_batches(second, sampler.matching, k, 2, ns, True)
    assert sampler.matching.fingerprint == psda.match(new_s, new_t, batch_size=k).fingerprint


def test_load_state_dict_rejects_out_of_range_integers():
    """A state whose integer settings do not fit 64 bits is refused with a
    ValueError that names the field (test_fuzz found an OverflowError)."""
    rng = np.random.default_rng(0)
    s, t = rng.normal(size=(10, 2)), rng.normal(size=(7, 2))
    state = psda.PairedBatchSampler(s, t, 2).state_dict()
    for key in ("stages", "n_source", "batch_size"):
        bad = dict(state, plan=dict(state["plan"], **{key: 1e308}))
        with pytest.raises(ValueError, match=key):
            psda.PairedBatchSampler(s, t, 2).load_state_dict(bad)
