"""A matching is a function of the features and the settings only (docs/design.md,
"Determinism"): every Python way of asking for it gives the same pairs, quadruplets,
singles and the same float64 bits of its costs and bound."""

import struct

import numpy as np
import pytest

import psda
from psda.samplers import PairedBatchSampler

torch = pytest.importorskip("torch")
from torch.utils.data import TensorDataset  # noqa: E402

from psda.refresh import FeatureRefresher, refresh  # noqa: E402


def signature(m):
    """What must not change: the units and the bits of the three floats."""
    bits = [struct.pack("<d", x).hex() for x in (m.stage1_cost, m.stage2_cost, m.stage2_bound)]
    return (m.fingerprint, *bits)


def relu_features(rng, n, d, shift):
    return np.maximum(0, rng.normal(size=(n, d)) + shift).astype(np.float32)


@pytest.fixture
def restore_threads():
    before = psda.get_num_threads()
    yield
    psda.set_num_threads(before)


CASES = [
    (300, 300, 32, dict()),  # balanced RBF: Stage 1's kernel kept for Stage 2
    (500, 110, 40, dict(solver="sparse")),  # imbalanced: the factored model, sparse
    (200, 301, 24, dict(discrepancy="coral")),  # target the larger side, odd P
    (400, 300, 8, dict(kernel="linear", solver="sparse")),
]


@pytest.mark.parametrize("ns,nt,d,kw", CASES)
def test_every_entry_point_gives_the_same_bits(ns, nt, d, kw, restore_threads):
    rng = np.random.default_rng(ns + nt + d)
    s, t = relu_features(rng, ns, d, 0.0), relu_features(rng, nt, d, 0.3)
    want = signature(psda.match(s, t, batch_size=8, **kw))
    got = {
        "float64": psda.match(s.astype(np.float64), t.astype(np.float64), batch_size=8, **kw),
        "float32 and float64": psda.match(s, t.astype(np.float64), batch_size=8, **kw),
        "Fortran order": psda.match(np.asfortranarray(s), t, batch_size=8, **kw),
        "torch tensors": psda.match(torch.from_numpy(s), torch.from_numpy(t), batch_size=8, **kw),
    }
    psda.set_num_threads(1)
    got["one thread"] = psda.match(s, t, batch_size=8, **kw)
    psda.set_num_threads(3)
    got["three threads"] = psda.match(s, t, batch_size=8, **kw)
    got["PairedBatchSampler"] = PairedBatchSampler(s, t, 8, **kw).matching
    # The refreshers start from other features and recompute the matching from
    # these, extracted by an identity "model".
    src, tgt = TensorDataset(torch.from_numpy(s)), TensorDataset(torch.from_numpy(t))
    stale = PairedBatchSampler(s + 1, t, 8, **kw)
    assert signature(stale.matching) != want  # the test can tell them apart
    refresh(stale, lambda x: x, src, tgt, progress=False)
    list(stale)
    got["refresh"] = stale.matching
    stale = PairedBatchSampler(s + 1, t, 8, **kw)
    refresher = FeatureRefresher(stale, lambda x: x, src, tgt, manual=True, background=True, progress=False)
    refresher.refresh()
    refresher.epoch_end()
    list(stale)
    got["background refresher"] = stale.matching
    for name, m in got.items():
        assert signature(m) == want, name
