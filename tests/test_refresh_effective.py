"""Issue 27, item 4(c): update(..., effective="batch") re-forms the rest of the running epoch.

For every sampler of psda.SAMPLERS, balanced and imbalanced, drop_last True and
False, one and two ranks: after a mid-epoch update with effective="batch",
(a) the epoch serves per domain exactly the rows it served without the update,
(b) the batches after the switch are a fresh sampler's batches on those rows'
new features (built here by hand), and differ from the old ones for PSDA,
(c) a state taken right after the switch resumes exactly, (d) so does a pickle,
(e) the next epoch uses the new full plan, (f) effective="epoch" is unchanged.
Then the views, a switch racing a thread, states that were edited, and
FeatureRefresher in both modes. Each test of the new behaviour fails on the code
before it (update() had no ``effective``).
"""

import copy
import pickle
import threading
import time

import numpy as np
import pytest

import psda
import psda.samplers.registry

torch = pytest.importorskip("torch")
from torch.utils.data import ConcatDataset, DataLoader, TensorDataset  # noqa: E402

from psda.refresh import FeatureRefresher  # noqa: E402

K = 4
SIZES = {"balanced": (42, 42), "imbalanced": (42, 27)}
# The kinds that always re-group the rest in these cases (no refusal applies).
ALWAYS = {"uniform", "random-pairs", "paired", "double-paired", "anticlustering", "ordered"}
# The kinds that never do: independent draws from the whole domain.
NEVER = {"kmeans++", "dpp"}


def _features(ns, nt, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(ns, 3)), rng.normal(0.5, 1.0, size=(nt, 3))


def _make(name, s, t, R, rank, drop_last, seed=5):
    return psda.batch_sampler(name, s, t, K, seed=seed, drop_last=drop_last, num_replicas=R, rank=rank)


def _domains(batches, n_source):
    """Per domain, the sorted rows served by batches (target rows un-offset)."""
    src = sorted(i for b in batches for i in b[: len(b) // 2])
    tgt = sorted(i - n_source for b in batches for i in b[len(b) // 2:])
    return src, tgt


def _within_batch_repeats(batches):
    """How many rows repeat within their batch, per domain, summed."""
    n = 0
    for b in batches:
        for half in (b[: len(b) // 2], b[len(b) // 2:]):
            n += len(half) - len(set(half))
    return n


def _by_hand(name, s2, t2, old_rest, n_source, seed, epoch, at):
    """What the rest must be: a fresh sampler of the kind on the old rest's rows' new features."""
    rs = np.array([i for b in old_rest for i in b[: len(b) // 2]])
    rt = np.array([i - n_source for b in old_rest for i in b[len(b) // 2:]])
    lens = [len(b) // 2 for b in old_rest]
    from psda.samplers.regroup import REST_TAG as _REST_TAG  # the tag of the rest's seed (seed, epoch, batch, tag)

    sub = int(np.random.SeedSequence([seed, epoch, at, _REST_TAG]).generate_state(1, np.uint64)[0])
    fresh = psda.batch_sampler(name, s2[rs], t2[rt], K, seed=sub, drop_last=False, num_replicas=1, rank=0)
    got = [(np.array(b[: len(b) // 2]), np.array(b[len(b) // 2:]) - len(rs)) for b in fresh]
    full = [g for g in got if len(g[0]) == K]
    short = [g for g in got if len(g[0]) < K]
    out = []
    for n in lens:  # full batches in order, the short one where the old schedule had it
        g = (full if n == K else short).pop(0)
        out.append(rs[g[0]].tolist() + (rt[g[1]] + n_source).tolist())
    return out


@pytest.mark.parametrize("R", [1, 2])
@pytest.mark.parametrize("drop_last", [True, False])
@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize("name", psda.SAMPLERS)
def test_batch_effective_update_regroups_the_rest_and_keeps_coverage(name, sizes, drop_last, R):
    ns, nt = SIZES[sizes]
    s, t = _features(ns, nt, 0)
    s2, t2 = _features(ns, nt, 1)  # the "refreshed" features of the same rows
    rank = R - 1
    ref = _make(name, s, t, R, rank, drop_last)
    old = list(ref)  # epoch 0 without the update
    at = 3
    a = _make(name, s, t, R, rank, drop_last)
    it = iter(a)
    head = [next(it) for _ in range(at)]
    assert head == old[:at]
    a.update(s2, t2, effective="batch")
    state = a.state_dict()
    pickled = pickle.dumps(a)
    rest = list(it)
    # (a) exact coverage: the same rows per domain as the epoch without the update
    assert _domains(head + rest, ns) == _domains(old, ns)
    assert len(rest) == len(old) - at and [len(b) for b in rest] == [len(b) for b in old[at:]]
    switched = state["rest"] is not None
    if name in ALWAYS:
        assert switched
    if name in NEVER:
        assert not switched
    if sizes == "balanced" and drop_last:  # k divides the rest: no kind but the independent draws refuses
        assert switched == (name not in NEVER)
    # (b) the rest is a fresh sampler's batches on the rest's new features
    if switched:
        want = _by_hand(name, s2, t2, old[at:], ns, 5, 0, at)
        distinct = psda.samplers.registry.REGISTRY[name].distinct_rows
        if distinct and _within_batch_repeats(want) and not _within_batch_repeats(old[at:]):
            # kinds of distinct rows: the copies of a row the fresh sampler put in one batch were swapped
            # apart; the rest is the fresh batches up to those few swaps
            assert not _within_batch_repeats(rest)
            moved = sum(x != y for a_, b_ in zip(rest, want) for x, y in zip(a_, b_))
            assert 0 < moved <= 4 * _within_batch_repeats(want)
        else:
            assert rest == want
        if name in ("paired", "double-paired"):
            assert rest != old[at:]
    else:
        assert rest == old[at:]
    # (e) the next epoch uses the new full plan
    nxt = list(a)
    fresh = _make(name, s2, t2, R, rank, drop_last)
    fresh.set_epoch(1)
    assert nxt == list(fresh)
    # (c) the state taken right after the switch resumes exactly, then the same next epoch
    b = _make(name, s, t, R, rank, drop_last, seed=99)
    b.load_state_dict(state)
    assert list(b) == rest
    assert list(b) == nxt
    # (d) pickling goes through the state
    c = pickle.loads(pickled)
    assert list(c) == rest and list(c) == nxt


@pytest.mark.parametrize("name", ["uniform", "double-paired", "ordered"])
def test_epoch_effective_update_leaves_the_running_epoch(name):
    """(f) effective="epoch" (the default, also spelled out) changes nothing in the running epoch."""
    s, t = _features(42, 27, 0)
    s2, t2 = _features(42, 27, 1)
    old = list(_make(name, s, t, 1, 0, False))
    for kw in ({}, {"effective": "epoch"}):
        a = _make(name, s, t, 1, 0, False)
        it = iter(a)
        head = [next(it) for _ in range(3)]
        a.update(s2, t2, **kw)
        assert a.state_dict()["rest"] is None
        assert head + list(it) == old


@pytest.mark.parametrize("bad", ["next", "Batch", None, 1])
def test_effective_is_checked_naming_the_argument(bad):
    s, t = _features(20, 20, 0)
    a = _make("paired", s, t, 1, 0, True)
    with pytest.raises(ValueError, match=r"effective = .*want 'epoch' .* or 'batch'"):
        a.update(s, t, effective=bad)
    assert a.pending_plan is None  # refused before any work
    with pytest.raises(ValueError, match="effective = "):
        FeatureRefresher(a, lambda x: x, None, None, manual=True, effective=bad)


def test_two_switches_in_one_epoch_keep_coverage_and_resume():
    """A second batch-effective update re-forms what the first left; the state still resumes exactly."""
    s, t = _features(42, 27, 0)
    old = list(_make("double-paired", s, t, 1, 0, False))
    a = _make("double-paired", s, t, 1, 0, False)
    it = iter(a)
    got = [next(it) for _ in range(2)]
    a.update(*_features(42, 27, 1), effective="batch")
    got += [next(it) for _ in range(3)]
    s3, t3 = _features(42, 27, 2)
    a.update(s3, t3, effective="batch")
    st = a.state_dict()
    assert st["rest"]["from"] == 2 and st["batches"] == 5  # the rest keeps its start: its rows are checkable
    rest = list(it)
    assert _domains(got + rest, 42) == _domains(old, 42)
    b = _make("double-paired", s, t, 1, 0, False)
    b.load_state_dict(st)
    assert list(b) == rest


def test_views_switch_where_the_view_ahead_stands():
    """With views, the view behind gets the old batches up to where the view ahead stands, the new ones
    after: the two stay aligned, and equal a sampler iterated directly and switched at that batch."""
    s, t = _features(42, 42, 0)
    s2, t2 = _features(42, 42, 1)
    direct = _make("paired", s, t, 1, 0, False)
    it = iter(direct)
    want = [next(it) for _ in range(4)]
    direct.update(s2, t2, effective="batch")
    want += list(it)
    a = _make("paired", s, t, 1, 0, False)
    sv, tv = a.views()
    si, ti = iter(sv), iter(tv)
    src = [next(si) for _ in range(4)]
    tgt = [next(ti) for _ in range(1)]
    a.update(s2, t2, effective="batch")
    assert a.state_dict()["batches"] == 1  # the state resumes the view behind ...
    src += list(si)
    tgt += list(ti)
    got = [x + [j + 42 for j in y] for x, y in zip(src, tgt)]
    assert got == want
    assert got[4:] != list(_make("paired", s, t, 1, 0, False))[4:]


def test_state_resumes_the_view_behind_with_old_then_new_batches():
    s, t = _features(42, 42, 0)
    s2, t2 = _features(42, 42, 1)
    a = _make("paired", s, t, 1, 0, False)
    sv, tv = a.views()
    si, ti = iter(sv), iter(tv)
    [next(si) for _ in range(4)]
    next(ti)
    a.update(s2, t2, effective="batch")
    st = a.state_dict()
    rest_t = list(ti)
    b = _make("paired", s, t, 1, 0, False)
    b.load_state_dict(st)
    assert [x[len(x) // 2:] for x in b] == [[j + 42 for j in y] for y in rest_t]


def test_update_in_a_thread_while_iterating_keeps_coverage():
    """The switch races the iteration (retried when the pass moved): whatever batch it lands on, the
    epoch serves each row exactly as without it, and the state resumes what is left."""
    s, t = _features(300, 300, 0)
    s2, t2 = _features(300, 300, 1)
    old = list(_make("double-paired", s, t, 1, 0, False))
    switched = 0
    for trial in range(3):
        a = _make("double-paired", s, t, 1, 0, False)
        it = iter(a)
        got = [next(it)]
        errors = []

        def work():
            try:
                a.update(s2, t2, effective="batch")
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        th = threading.Thread(target=work)
        th.start()
        while th.is_alive() and len(got) < len(old) - 10:
            got.append(next(it))
            time.sleep(0.001 * trial)  # 0: the loop mostly waits at the end; 1, 2 ms: it races the thread
        th.join()
        assert not errors
        st = a.state_dict()
        switched += st["rest"] is not None
        rest = list(it)
        assert _domains(got + rest, 300) == _domains(old, 300)
        b = _make("double-paired", s, t, 1, 0, False)
        b.load_state_dict(st)
        assert list(b) == rest
    assert switched  # wherever it landed


def test_a_resumed_epoch_is_reformed_before_its_first_batch():
    """No pass running but a resumed epoch: its rest is re-formed (and carried by the state)."""
    s, t = _features(42, 27, 0)
    s2, t2 = _features(42, 27, 1)
    a = _make("paired", s, t, 1, 0, False)
    it = iter(a)
    head = [next(it) for _ in range(3)]
    b = _make("paired", s, t, 1, 0, False)
    b.load_state_dict(a.state_dict())
    b.update(s2, t2, effective="batch")
    assert b.state_dict()["rest"]["from"] == 3
    rest = list(b)
    old = list(_make("paired", s, t, 1, 0, False))
    assert _domains(head + rest, 42) == _domains(old, 42)
    assert rest == _by_hand("paired", s2, t2, old[3:], 42, 5, 0, 3)


def test_between_epochs_batch_effective_is_the_epoch_update():
    s, t = _features(42, 27, 0)
    s2, t2 = _features(42, 27, 1)
    a, b = _make("paired", s, t, 1, 0, False), _make("paired", s, t, 1, 0, False)
    list(a), list(b)
    a.update(s2, t2, effective="batch")
    b.update(s2, t2)
    assert a.state_dict()["rest"] is None and list(a) == list(b)


def test_a_rest_too_small_for_the_kind_keeps_its_batches(caplog):
    """The last batch of ORDERED with 4 distinct rows needs k rows; a short rest of 2 is refused: logged."""
    s, t = _features(42, 42, 0)
    old = list(_make("ordered", s, t, 1, 0, False))
    a = _make("ordered", s, t, 1, 0, False)
    it = iter(a)
    head = [next(it) for _ in range(len(old) - 1)]  # only the short batch (42 mod 4 = 2 rows) is left
    with caplog.at_level("INFO", logger="psda"):
        a.update(*_features(42, 42, 1), effective="batch")
    assert "keeps its batches" in caplog.text
    assert a.state_dict()["rest"] is None and head + list(it) == old


@pytest.mark.parametrize("edit, msg", [
    (lambda r: r.update({"from": 99}), "from"),
    (lambda r: r.update({"from": "3"}), "from"),
    (lambda r: r.pop("target"), "is not None nor a dict"),
    (lambda r: r["source"].update({"shape": [r["source"]["shape"][0] - 1]}), "malformed|shape"),
    ("out of range", "outside"),
    ("served twice", "does not serve the rows"),
])
def test_load_state_dict_checks_the_rest(edit, msg):
    s, t = _features(42, 27, 0)
    a = _make("paired", s, t, 1, 0, False)
    it = iter(a)
    [next(it) for _ in range(3)]
    a.update(*_features(42, 27, 1), effective="batch")
    st = copy.deepcopy(a.state_dict())
    if edit == "out of range" or edit == "served twice":
        rows = np.frombuffer(st["rest"]["source"]["data"], np.int64).copy()
        if edit == "out of range":
            rows[0] = 42
        else:
            rows[0] = rows[1]
        st["rest"]["source"]["data"] = rows.tobytes()
    else:
        edit(st["rest"])
    b = _make("paired", s, t, 1, 0, False)
    before = b.state_dict()
    with pytest.raises((ValueError, TypeError), match=msg):  # TypeError for a "from" that is no int
        b.load_state_dict(st)
    assert b.state_dict()["rest"] is None and b.state_dict()["batches"] == before["batches"]


def test_a_state_without_rest_still_loads():
    s, t = _features(42, 27, 0)
    a = _make("paired", s, t, 1, 0, False)
    it = iter(a)
    [next(it) for _ in range(3)]
    st = a.state_dict()
    del st["rest"]  # the states written before effective="batch"
    b = _make("paired", s, t, 1, 0, False)
    b.load_state_dict(st)
    assert list(b) == list(it)


# ---- FeatureRefresher --------------------------------------------------------


def _tiny_training():
    """(source dataset, target dataset, a linear model, its features of a dataset as NumPy) of the
    refresher tests: 42 source and 27 target rows, seeded."""
    g = torch.Generator().manual_seed(0)
    src = TensorDataset(torch.randn(42, 4, generator=g), torch.arange(42))
    tgt = TensorDataset(torch.randn(27, 4, generator=g) + 0.5, torch.arange(27))
    model = torch.nn.Linear(4, 3)
    with torch.no_grad():
        model.weight.copy_(torch.randn(3, 4, generator=g))
        model.bias.zero_()

    def feats(ds):
        with torch.no_grad():
            return model(ds.tensors[0]).numpy()

    return src, tgt, model, feats


def _run(background, effective, every=3, epochs=2, save_after=None):
    """A tiny training loop whose model moves every step; returns the batches the loader served."""
    src, tgt, model, feats = _tiny_training()
    sampler = psda.batch_sampler("double-paired", feats(src), feats(tgt), K, drop_last=False, num_replicas=1,
                                 rank=0)
    loader = DataLoader(ConcatDataset([src, tgt]), batch_sampler=sampler)
    refresher = FeatureRefresher(sampler, model, src, tgt, every_steps=every, background=background,
                                 effective=effective, progress=False, batch_size=64)
    served = []
    for _ in range(epochs):
        for _, idx in loader:
            served.append(idx.tolist())
            with torch.no_grad():
                model.weight.mul_(-1.1).add_(0.3)  # the "training step" that moves the features
            refresher.step()
            if len(served) == save_after:  # a checkpoint: the states, taken between two steps
                refresher.state_dict(), sampler.state_dict()
        refresher.epoch_end()
    refresher.wait()
    return served, len(sampler)


@pytest.mark.parametrize("background", [False, True])
def test_refresher_batch_effective_is_deterministic_and_changes_the_epoch(background):
    one, nb = _run(background, "batch")
    two, _ = _run(background, "batch")
    assert one == two
    per_epoch, _ = _run(background, "epoch")
    assert one[:3] == per_epoch[:3]  # nothing changes before the first refresh
    assert one[:nb] != per_epoch[:nb]  # ... the first epoch changes after it
    for e in range(2):  # each epoch still serves every source row once (items carry their own index)
        ep = one[e * nb:(e + 1) * nb]
        assert sorted(i for b in ep for i in b[: len(b) // 2]) == list(range(42))


def test_where_each_mode_switches():
    """Refresh after step 3 (batches 0-2 served): the foreground one re-forms from batch 3, the
    background one is joined at step 4 and re-forms from batch 4; before that, the epoch mode's batches."""
    ep, nb = _run(False, "epoch", epochs=1)
    fg, _ = _run(False, "batch", epochs=1)
    bg, _ = _run(True, "batch", epochs=1)
    assert fg[:3] == ep[:3] and fg[3] != ep[3]
    assert bg[:4] == ep[:4] and bg[4] != ep[4]


def test_a_checkpoint_after_the_refresh_step_changes_no_batch():
    """The background refresh's switch point is a batch count: a state_dict() right after the refresh
    step (which joins the thread there) gives the batches of the run without it."""
    plain, _ = _run(True, "batch", epochs=1)
    saved, _ = _run(True, "batch", epochs=1, save_after=3)
    assert saved == plain


def test_background_batch_refresh_needs_a_psda_sampler():
    with pytest.raises(ValueError, match="needs a psda batch sampler"):
        FeatureRefresher(object(), lambda x: x, None, None, manual=True, background=True, effective="batch")


# ---- DomainBed's stand-in loaders ---------------------------------------------


@pytest.mark.parametrize("background", [False, True])
def test_domainbed_hparam_psda_refresh_effective_reaches_the_sampler(background):
    """psda_refresh_effective="batch": a refresh mid-epoch re-forms the rest of the epoch (the sampler's
    state then carries it); the default, "epoch", leaves the running epoch alone."""
    from test_domainbed import HP, Items, simulate_train_py, tiny

    from psda.domainbed import PSDA_MMD
    from psda.domainbed.loaders import DomainBedPSDA, activate

    rests = {}
    for effective in ("epoch", "batch"):
        envs, uda = [Items(30, 3, 0), Items(26, 3, 1, shift=0.5)], [Items(40, 3, 2, shift=2.0)]
        coord = DomainBedPSDA(n_train=2, seed=3)
        activate(coord)
        try:
            train_it, uda_it = simulate_train_py(coord, envs, uda, batch_size=2)
            hp = dict(HP, psda_refresh_steps=3, psda_feature_batch_size=8, psda_background=background)
            if effective == "batch":
                hp["psda_refresh_effective"] = "batch"
            alg = tiny(PSDA_MMD, hp=hp)
            for _ in range(5):  # 14 batches per epoch: the refresh after step 3 is mid-epoch
                mbs, ubs = next(train_it), next(uda_it)
                alg.update([(x, y % 2) for x, y in mbs], [x for x, _ in ubs])
            assert coord.refresher.effective == effective and coord.refresher.refreshes == 1
            rests[effective] = coord.sampler.state_dict()["rest"]
        finally:
            activate(None)
    assert rests["epoch"] is None and rests["batch"] is not None
    assert rests["batch"]["from"] == (4 if background else 3)


def test_domainbed_bad_psda_refresh_effective_names_the_hparam():
    """A wrong psda_refresh_effective fails before training with the hparam's name (it said only
    "effective = ..."), as does "batch" with a sampler of independent draws."""
    from test_domainbed import HP, Items, simulate_train_py, tiny

    from psda.domainbed import PSDA_MMD
    from psda.domainbed.loaders import DomainBedPSDA, activate

    for value, sampler in (("next", "double-paired"), ("batch", "kmeans++")):
        envs, uda = [Items(30, 3, 0), Items(26, 3, 1, shift=0.5)], [Items(40, 3, 2, shift=2.0)]
        coord = DomainBedPSDA(n_train=2, seed=3, sampler=sampler)
        activate(coord)
        try:
            train_it, uda_it = simulate_train_py(coord, envs, uda, batch_size=2)
            alg = tiny(PSDA_MMD, hp=dict(HP, psda_refresh_steps=3, psda_refresh_effective=value))
            with pytest.raises(ValueError, match=r"hparams\['psda_refresh_effective'\] = '%s'" % value):
                mbs, ubs = next(train_it), next(uda_it)
                alg.update([(x, y % 2) for x, y in mbs], [x for x, _ in ubs])
        finally:
            activate(None)


def test_domainbed_registry_default_is_epoch(monkeypatch):
    import test_domainbed

    if not test_domainbed.DOMAINBED:
        pytest.skip("no DomainBed checkout (see tests/test_domainbed.py)")
    monkeypatch.syspath_prepend(test_domainbed.DOMAINBED)
    from domainbed import hparams_registry

    from psda.domainbed.hparams import wrap

    hp = wrap(hparams_registry._hparams)("PSDA_MMD", "RotatedMNIST", 0)
    assert hp["psda_refresh_effective"] == ("epoch", "epoch")


def test_why_batch_refresh_tiny_run(tmp_path, monkeypatch):
    """tools/why_batch_refresh.py at a tiny size: the four modes recorded, epoch mode equal to stale,
    every source row served once in each mode's epoch."""
    import test_why

    if not test_why.DOMAINBED or test_why._fashion_missing() is not None:
        pytest.skip("needs DomainBed and Fashion-MNIST (see tests/test_why.py)")
    import importlib.util
    import os

    monkeypatch.syspath_prepend(test_why.DOMAINBED)
    path = os.path.join(test_why.REPO, "tools", "why_batch_refresh.py")
    spec = importlib.util.spec_from_file_location("why_batch_refresh", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    records = tool.run(tool.parse(["--out", str(tmp_path), "--env_size", "60", "--at", "3", "--gap", "2",
                                   "--k", "8"]))
    by = {r["mode"]: r for r in records}
    assert set(by) == {"stale", "epoch", "batch", "fresh"}
    assert by["epoch"]["disc"] == by["stale"]["disc"] and by["batch"]["disc"] != by["stale"]["disc"]
    assert all(r["source_rows_once"] for r in records)
    assert "| batch |" in (tmp_path / "batch_refresh.md").read_text()


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("background", [False, True])
def test_stateful_dataloader_resumes_after_a_batch_refresh(num_workers, background):
    """A StatefulDataLoader restored from states saved mid-epoch, some batches after a batch-effective
    refresh, yields exactly the rest of the uninterrupted run (the re-formed rows are in the state)."""
    tdl = pytest.importorskip("torchdata.stateful_dataloader")
    g = torch.Generator().manual_seed(0)
    src = TensorDataset(torch.randn(42, 4, generator=g), torch.arange(42))
    tgt = TensorDataset(torch.randn(27, 4, generator=g) + 0.5, torch.arange(27))
    ds = ConcatDataset([src, tgt])

    def run(stop_after=None, states=None):
        model = torch.nn.Linear(4, 3)
        with torch.no_grad():
            model.weight.copy_(torch.arange(12.0).reshape(3, 4).sin())
            model.bias.zero_()
        if states is None:
            with torch.no_grad():
                zs, zt = model(src.tensors[0]).numpy(), model(tgt.tensors[0]).numpy()
        else:
            zs, zt = np.zeros((42, 2)), np.arange(54.0).reshape(27, 2)  # other features: the state decides
        sampler = psda.batch_sampler("double-paired", zs, zt, K, drop_last=False, num_replicas=1, rank=0)
        loader = tdl.StatefulDataLoader(ds, batch_sampler=sampler, num_workers=num_workers)
        refresher = FeatureRefresher(sampler, model, src, tgt, manual=True, background=background,
                                     effective="batch", progress=False)
        if states is not None:
            loader.load_state_dict(states[0])
            refresher.load_state_dict(states[1])
        out = []
        for epoch in range(2 if states is None else 1):
            for i, (_, idx) in enumerate(loader):
                out.append(idx.tolist())
                refresher.step()
                if states is None and (epoch, i) == (0, 1):
                    with torch.no_grad():
                        model.weight.mul_(-2.0).add_(0.5)
                    refresher.refresh()
                if stop_after is not None and len(out) == stop_after:
                    return out, (loader.state_dict(), refresher.state_dict())
            refresher.epoch_end()
        return out, None

    full, _ = run()
    head, states = run(stop_after=6)
    assert head == full[:6]
    tail, _ = run(states=states)
    n = len(full) // 2
    assert tail == full[6:n]


def test_random_sizes_ranks_and_positions_keep_coverage_and_resume():
    """Seeded random cases (every name, sizes up to 40, k up to 6, up to 3 ranks, any position): the epoch
    serves per domain the rows it served without the update, the batch lengths are the same, and a state
    taken right after the update resumes exactly."""
    rng = np.random.default_rng(27)
    done = 0
    for case in range(90):
        name = psda.SAMPLERS[case % len(psda.SAMPLERS)]
        k = int(rng.choice([2, 4, 6]))
        ns, nt = int(rng.integers(k, 40)), int(rng.integers(k, 40))
        R = int(rng.integers(1, 4))
        kw = dict(num_replicas=R, rank=int(rng.integers(R)), drop_last=bool(rng.integers(2)), seed=case)
        s, t = rng.normal(size=(ns, 2)), rng.normal(size=(nt, 2))
        try:
            a = psda.batch_sampler(name, s, t, k, **kw)
        except ValueError:
            continue  # sizes the kind refuses
        ref = list(psda.batch_sampler(name, s, t, k, **kw))
        if len(ref) < 2:
            continue
        h = int(rng.integers(1, len(ref)))
        it = iter(a)
        head = [next(it) for _ in range(h)]
        a.update(*_features(ns, nt, case), effective="batch")
        st = a.state_dict()
        rest = list(it)
        dom = lambda L: [sorted(i for b in L for i in b[: len(b) // 2]),  # noqa: E731
                         sorted(i for b in L for i in b[len(b) // 2:])]
        assert dom(head + rest) == dom(ref), (name, ns, nt, k, kw, h)
        assert [len(b) for b in head + rest] == [len(b) for b in ref]
        if psda.samplers.registry.REGISTRY[name].distinct_rows and not _within_batch_repeats(ref):
            assert not _within_batch_repeats(rest), (name, ns, nt, k, kw, h)
        b = psda.batch_sampler(name, s, t, k, **{**kw, "seed": 1})
        b.load_state_dict(st)
        assert list(b) == rest, (name, ns, nt, k, kw, h)
        done += 1
    assert done >= 60


def test_separate_repeats_swaps_copies_apart_or_says_it_cannot():
    from psda.samplers.regroup import _separate_repeats

    got = _separate_repeats(np.array([1, 1, 2, 3]), np.array([2, 2]))
    assert got.tolist() == [1, 2, 1, 3]
    assert _separate_repeats(np.array([1, 1]), np.array([2])) is None  # one batch: nowhere to go
    assert _separate_repeats(np.array([1, 1, 1, 2]), np.array([2, 2])) is None  # three copies, two batches
    rng = np.random.default_rng(0)
    for _ in range(200):  # against the definition: same rows, no batch holds one twice
        lens = rng.integers(1, 5, size=rng.integers(2, 8))
        rows = rng.integers(0, 6, size=int(lens.sum()))
        out = _separate_repeats(rows.copy(), lens)
        if out is not None:
            assert sorted(out.tolist()) == sorted(rows.tolist())
            parts = np.split(out, np.cumsum(lens)[:-1])
            assert all(len(set(p.tolist())) == len(p) for p in parts)


def _served_with_background_refresh(effective, sleep_after_epoch_end, refresher_on=True, epochs=3):
    """Batches of a small training run whose refresher (every epoch, background) starts a
    refresh at each epoch_end; the main thread may sleep after epoch_end, letting the
    thread finish before the next epoch's first batch."""
    src, tgt, model, feats = _tiny_training()
    sampler = psda.batch_sampler("double-paired", feats(src), feats(tgt), 4, drop_last=False, num_replicas=1,
                                 rank=0)
    loader = DataLoader(ConcatDataset([src, tgt]), batch_sampler=sampler)
    r = None
    if refresher_on:
        r = FeatureRefresher(sampler, model, src, tgt, every_epochs=1, background=True, effective=effective,
                             progress=False, batch_size=64)
    served = []
    for _ in range(epochs):
        for _, idx in loader:
            served.append(idx.tolist())
            with torch.no_grad():
                model.weight.mul_(-1.1).add_(0.3)
            if r is not None:
                r.step()
        if r is not None:
            r.epoch_end()
        time.sleep(sleep_after_epoch_end)
    if r is not None:
        r.wait()
    return served, len(sampler)


@pytest.mark.parametrize("effective", ["epoch", "batch"])
def test_background_refresh_started_between_epochs_waits_for_its_join(effective):
    """A refresh started at epoch_end is installed at the next join (the end of the next epoch), not
    when its thread happens to finish: before, a thread that finished before the next epoch's first
    batch put its plan into that epoch (timing, not the seed, decided the batches)."""
    slow, n = _served_with_background_refresh(effective, 0.5)
    fast, _ = _served_with_background_refresh(effective, 0.0)
    assert slow == fast
    none, _ = _served_with_background_refresh(effective, 0.0, refresher_on=False)
    if effective == "epoch":
        # Epoch 1 follows the refresh started at epoch 0's end: it is served by epoch 0's set-up, as
        # in a run without a refresher (the plan is joined at epoch 1's end and used from epoch 2).
        assert slow[n:2 * n] == none[n:2 * n]
    else:
        # Joined at epoch 1's first step: its first batch is the old set-up's, the rest re-grouped.
        assert slow[n] == none[n] and slow[n + 1:2 * n] != none[n + 1:2 * n]
    assert slow[2 * n:] != none[2 * n:]


def test_batch_update_reforms_a_resumed_epoch_at_its_first_batch():
    """A state taken with one view ahead says batches = 0 and holds a rest: the resumed epoch is under
    way, so update(effective="batch") re-forms it (it silently did nothing, and the pending plan was
    not applied either, the rest pinning the old one)."""
    rng = np.random.default_rng(0)
    n, k = 32, 4
    x, y = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))

    def make():
        return psda.batch_sampler("paired", x, y, k, num_replicas=1, rank=0)

    s = make()
    sv, _ = s.views()
    it = iter(sv)
    next(it), next(it)  # the source view 2 batches ahead, the target view none
    s.update(x ** 2, y ** 2, effective="batch")
    st = s.state_dict()
    assert st["batches"] == 0 and st["rest"]["from"] == 2
    kept, changed = make(), make()
    kept.load_state_dict(st)
    changed.load_state_dict(st)
    changed.update(np.sin(3 * x), np.cos(3 * y), effective="batch")
    before, after = list(kept), list(changed)
    assert before != after
    srows = lambda bs: sorted(i for b in bs for i in b[: len(b) // 2])  # noqa: E731
    assert srows(before) == srows(after) == list(range(n))


@pytest.mark.parametrize("name", ["kmeans++", "dpp"])
def test_refresher_refuses_batch_effective_for_independent_draws(name):
    """kmeans++ and dpp draw each batch from the whole domain: effective="batch" would silently act as
    "epoch", so the refresher refuses it, naming the value and the fix."""
    x = np.random.default_rng(0).normal(size=(40, 3))
    sm = psda.batch_sampler(name, x, x + 1, 4, num_replicas=1, rank=0)
    ds = TensorDataset(torch.tensor(x, dtype=torch.float32))
    with pytest.raises(ValueError, match="effective='epoch'"):
        FeatureRefresher(sm, torch.nn.Identity(), ds, ds, every_epochs=1, effective="batch")


def test_a_rest_kept_warns_once(caplog):
    """Where the rest cannot be re-grouped the update waits for the next epoch: a WARNING says so the
    first time (it was INFO only, hidden by default logging)."""
    import logging

    x = np.random.default_rng(0).normal(size=(40, 3))
    sm = psda.batch_sampler("kmeans++", x, x + 1, 4, num_replicas=1, rank=0)
    it = iter(sm)
    next(it)
    with caplog.at_level(logging.INFO, logger="psda"):
        sm.update(x ** 2, x, effective="batch")
        sm.update(x ** 3, x, effective="batch")
    kept = [r for r in caplog.records if "keeps its batches" in r.getMessage()]
    assert [r.levelno for r in kept] == [logging.WARNING, logging.INFO]
