"""Tests of psda.refresh: feature extraction, the schedule and the refresher (foreground
and background) with the real sampler and real DataLoaders."""

import io
import time
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import ConcatDataset, DataLoader, Dataset, TensorDataset  # noqa: E402

import psda  # noqa: E402
from psda.refresh import FeatureRefresher, RefreshSchedule, extract_features, refresh  # noqa: E402


class Recorder(torch.nn.Module):
    """A linear feature extractor that records the grad mode and training flag it ran with."""

    def __init__(self, d_in, d_out, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.lin = torch.nn.Linear(d_in, d_out)
        with torch.no_grad():
            self.lin.weight.copy_(torch.randn(d_out, d_in, generator=g))
            self.lin.bias.copy_(torch.randn(d_out, generator=g))
        self.drop = torch.nn.Dropout(p=0.9)
        self.seen = []

    def forward(self, x):
        self.seen.append((torch.is_grad_enabled(), self.training))
        return self.drop(self.lin(x))


def xy_dataset(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, d, generator=g), torch.arange(n))


def reference(model, ds):
    """Features computed item by item, in dataset order, in eval mode: the ground truth."""
    with torch.no_grad():
        return np.stack([model.lin(ds[i][0][None]).numpy()[0] for i in range(len(ds))]).astype(np.float32)


@pytest.mark.parametrize("batch_size,num_workers", [(1, 0), (7, 0), (64, 0), (5, 2)])
def test_extract_features_rows_follow_dataset_order(batch_size, num_workers):
    ds = xy_dataset(23, 4, seed=1)
    model = Recorder(4, 3)
    z = extract_features(model, ds, batch_size=batch_size, num_workers=num_workers, progress=False)
    assert z.dtype == np.float32 and z.shape == (23, 3)
    np.testing.assert_allclose(z, reference(model, ds), rtol=1e-5, atol=1e-5)


def test_extract_features_indices_select_rows_in_order():
    ds = xy_dataset(20, 4, seed=2)
    model = Recorder(4, 3)
    idx = [17, 3, 3, 9]
    z = extract_features(model, ds, batch_size=3, indices=idx, progress=False)
    np.testing.assert_allclose(z, reference(model, ds)[idx], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_extract_features_eval_no_grad_and_mode_restored(training):
    model = Recorder(4, 3)
    model.train(training)
    extract_features(model, xy_dataset(10, 4, 3), batch_size=4, progress=False)
    assert model.seen and all(seen == (False, False) for seen in model.seen)
    assert model.training is training and model.drop.training is training
    assert torch.is_grad_enabled()


def test_extract_features_restores_mode_on_error():
    class Boom(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    m = Boom().train()
    with pytest.raises(RuntimeError, match="boom"):
        extract_features(m, xy_dataset(4, 2, 0), progress=False)
    assert m.training


def test_extract_features_flattens_and_accepts_plain_callables():
    ds = TensorDataset(torch.arange(24.0).reshape(6, 2, 2))  # items are 1-tuples
    z = extract_features(lambda x: x * 2, ds, batch_size=4, progress=False)
    np.testing.assert_array_equal(z, (np.arange(24.0).reshape(6, 4) * 2).astype(np.float32))


def test_extract_features_progress_bar_on_given_stream(monkeypatch):
    # A short pass into a log writes nothing (it wrote lines in every DDP run: issue 25).
    buf = io.StringIO()
    extract_features(Recorder(4, 2), xy_dataset(10, 4, 0), batch_size=3, stream=buf, desc="src")
    assert buf.getvalue() == ""
    # A pass longer than the line interval writes plain lines.
    import psda._progress

    monkeypatch.setattr(psda._progress, "LINE_INTERVAL", 0.0)
    rec = Recorder(4, 2)

    def slow(x):  # each batch takes longer than the bar's 0.1 s interval
        time.sleep(0.12)
        return rec(x)

    buf = io.StringIO()
    extract_features(slow, xy_dataset(10, 4, 0), batch_size=3, stream=buf, desc="src")
    out = buf.getvalue()
    # Not a terminal: plain lines, no carriage returns (issue 17 case 12).
    assert "\r" not in out and out.endswith("\n")
    assert out.splitlines()[-1].startswith("src: 4/4 (100%)")
    buf = io.StringIO()
    extract_features(Recorder(4, 2), xy_dataset(10, 4, 0), batch_size=3, stream=buf, progress=False)
    assert buf.getvalue() == ""


@pytest.mark.parametrize("kwargs,exc,msg", [
    (dict(batch_size=0), ValueError, "batch_size must be an int >= 1, got 0"),
    (dict(batch_size=2.5), ValueError, "batch_size"),
    (dict(indices=[]), ValueError, "empty"),
])
def test_extract_features_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        extract_features(Recorder(4, 2), xy_dataset(5, 4, 0), progress=False, **kwargs)


def test_extract_features_model_must_return_rows():
    with pytest.raises(TypeError, match="one row per item"):
        extract_features(lambda x: (x, x), xy_dataset(5, 4, 0), progress=False)
    with pytest.raises(TypeError, match="one row per item"):
        extract_features(lambda x: x[:1], xy_dataset(5, 4, 0), batch_size=5, progress=False)


@pytest.mark.parametrize("name,kwargs,steps,epochs,want_steps,want_epochs", [
    ("never", {}, 10, 3, [], []),
    ("every 3 steps", dict(every_steps=3), 10, 0, [3, 6, 9], []),
    ("every step", dict(every_steps=1), 3, 0, [1, 2, 3], []),
    ("every 2 epochs", dict(every_epochs=2), 0, 5, [], [2, 4]),
    ("both", dict(every_steps=4, every_epochs=1), 8, 2, [4, 8], [1, 2]),
])
def test_refresh_schedule(name, kwargs, steps, epochs, want_steps, want_epochs):
    s = RefreshSchedule(**kwargs)
    assert [i for i in range(1, steps + 1) if s.step()] == want_steps
    assert [i for i in range(1, epochs + 1) if s.epoch_end()] == want_epochs
    s2 = RefreshSchedule(**kwargs)
    s2.load_state_dict(s.state_dict())
    assert (s2.steps, s2.epochs) == (steps, epochs)


@pytest.mark.parametrize("kwargs", [dict(every_steps=0), dict(every_epochs=-1), dict(every_steps=1.5),
                                    dict(every_epochs=True)])
def test_refresh_schedule_rejects_bad_intervals(kwargs):
    with pytest.raises(ValueError, match="must be None or an int >= 1"):
        RefreshSchedule(**kwargs)


# ---- with the real sampler -------------------------------------------------------

N_S, N_T, D, K = 40, 32, 5, 8


def domains():
    return xy_dataset(N_S, D, seed=10), xy_dataset(N_T, D, seed=11)


def pairs_of(batch_indices, n_source):
    k = len(batch_indices) // 2
    return {(s, t - n_source) for s, t in zip(batch_indices[:k], batch_indices[k:])}


def matching_pairs(m):
    return {tuple(p) for p in np.asarray(m.pairs).tolist()}


@pytest.mark.parametrize("solver", ["auto", "sparse"])
def test_refresh_updates_sampler_with_the_models_features(solver):
    """The refreshed matching is the one psda.match computes (dense) from the new
    features, whichever solver the sampler recomputes it with."""
    src, tgt = domains()
    m0, m1 = Recorder(D, 3, seed=0), Recorder(D, 3, seed=1)
    sampler = psda.PairedBatchSampler(reference(m0, src), reference(m0, tgt), K, solver=solver)
    before = matching_pairs(sampler.matching)
    zs, zt = refresh(sampler, m1, src, tgt, batch_size=16, progress=False)
    np.testing.assert_allclose(zs, reference(m1, src), rtol=1e-5, atol=1e-5)
    want = matching_pairs(psda.match(zs, zt, batch_size=K, solver="dense"))
    assert want != before  # the test can tell the matchings apart
    assert matching_pairs(sampler.matching) == before  # not before the next epoch
    list(sampler)
    assert matching_pairs(sampler.matching) == want


@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("num_workers", [0, 2])
def test_refresher_new_pairing_only_from_next_epoch(background, num_workers):
    """A refresh mid-epoch never changes the batches of that epoch (even those not yet
    prefetched); the next epoch uses exactly the matching of the refreshed features."""
    src, tgt = domains()
    m = Recorder(D, 3, seed=0)
    sampler = psda.PairedBatchSampler(reference(m, src), reference(m, tgt), K)
    old = matching_pairs(sampler.matching)
    loader = DataLoader(ConcatDataset([src, tgt]), batch_sampler=sampler, num_workers=num_workers)
    refresher = FeatureRefresher(sampler, m, src, tgt, every_steps=2, background=background, progress=False)
    with torch.no_grad():
        m.lin.weight.mul_(-3.0).add_(1.0)  # the "training" that moves the features
    new = matching_pairs(psda.match(reference(m, src), reference(m, tgt), batch_size=K))
    assert new != old
    for epoch in range(2):
        seen = set()
        for step, (_, idx) in enumerate(loader):
            seen |= pairs_of(idx.tolist(), 0)  # items carry their index within their own dataset
            refresher.step()
        assert seen <= (old if epoch == 0 else new)
        refresher.epoch_end()
    assert refresher.refreshes >= 2 and len(refresher.stalls) == refresher.refreshes
    assert not refresher.pending()


def test_background_matching_runs_while_the_caller_works():
    """The matching thread makes progress while the training thread holds the GIL in
    Python code: the Go call released it."""
    rng = np.random.default_rng(0)
    big = rng.normal(size=(1500, 16)).astype(np.float32)
    ds = TensorDataset(torch.from_numpy(big))
    sampler = psda.PairedBatchSampler(big, big[::-1].copy(), 32)
    refresher = FeatureRefresher(sampler, lambda x: x + 1, ds, ds, manual=True, background=True, progress=False)
    refresher.refresh()
    spins = 0
    while refresher.pending():
        spins += 1  # pure-Python work in this thread
    refresher.wait()
    assert sampler.pending_matching is not None
    assert spins > 100


def test_background_error_is_raised_by_wait():
    src, tgt = domains()
    sampler = psda.PairedBatchSampler(np.ones((N_S, 2)) + np.arange(N_S)[:, None], np.zeros((N_T, 2)), K)
    # Features of another size: update() raises in the thread, wait() re-raises here.
    refresher = FeatureRefresher(sampler, lambda x: x, TensorDataset(torch.zeros(N_S + 1, 2)),
                                 TensorDataset(torch.zeros(N_T, 2)), manual=True, background=True,
                                 progress=False)
    refresher.refresh()
    with pytest.raises(ValueError, match="same datasets"):
        refresher.wait()
    assert refresher.wait() == 0.0


# ---- resume with torchdata's StatefulDataLoader ------------------------------------------

@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("refresh_at", ["none", "previous epoch", "mid-epoch before the save"])
def test_stateful_dataloader_resumes_mid_epoch(num_workers, refresh_at):
    """A StatefulDataLoader and a FeatureRefresher restored from states taken after 2
    batches of epoch 1 (into a fresh sampler built from other features) yield exactly
    the rest of that epoch and the next epoch of an uninterrupted run, refreshes
    included. With workers the DataLoader snapshots the sampler ahead of the loop, so a
    refresh just before the save is not in the loader's state: the refresher's state
    puts it back at epoch_end."""
    tdl = pytest.importorskip("torchdata.stateful_dataloader")
    src, tgt = domains()
    ds = ConcatDataset([src, tgt])
    when = {"none": None, "previous epoch": (0, 2), "mid-epoch before the save": (1, 0)}[refresh_at]

    def run(stop_after=None, states=None):
        m = Recorder(D, 3, seed=0)
        if states is None:
            sampler = psda.PairedBatchSampler(reference(m, src), reference(m, tgt), K)
        else:
            sampler = psda.PairedBatchSampler(np.zeros((N_S, 2)), np.arange(2 * N_T).reshape(N_T, 2), K)
        loader = tdl.StatefulDataLoader(ds, batch_sampler=sampler, num_workers=num_workers)
        refresher = FeatureRefresher(sampler, m, src, tgt, manual=True, progress=False)
        start = 0
        if states is not None:
            loader.load_state_dict(states[0])
            refresher.load_state_dict(states[1])
            start = 1
        out = []
        for epoch in range(start, 3):
            for i, (_, idx) in enumerate(loader):
                out.append(idx.tolist())
                if states is None and (epoch, i) == when:
                    with torch.no_grad():
                        m.lin.weight.mul_(-2.0).add_(float(epoch) + 0.5)
                    refresher.refresh()
                if stop_after is not None and len(out) == stop_after:
                    return out, (loader.state_dict(), refresher.state_dict())
            refresher.epoch_end()
        return out, None

    full, _ = run()
    n = len(full) // 3
    head, states = run(stop_after=n + 2)
    assert head == full[: n + 2]
    tail, _ = run(states=states)
    assert tail == full[n + 2:]
