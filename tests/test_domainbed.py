"""Tests of psda.domainbed: the algorithms' losses and update step, the paired loaders and
the DomainBed stand-in loaders (no DomainBed needed), and real runs of `python -m psda.domainbed`'s
main() on Debug28 with a DomainBed checkout ($PSDA_DOMAINBED_DIR or ../shared/DomainBed)."""

import itertools
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import ConcatDataset, Dataset, TensorDataset  # noqa: E402

import psda  # noqa: E402
from psda.domainbed import PSDA_CORAL, PSDA_MMD, coral, rbf_mmd  # noqa: E402
from psda.domainbed.loaders import DomainBedPSDA, PairedLoaders, activate  # noqa: E402

GAMMAS = (0.001, 0.01, 0.1, 1.0, 10.0)


def brute_mmd(x, y, gammas):
    """V-statistic MMD² by explicit double loops over the RBF-mixture kernel."""
    def k(a, b):
        return sum(np.exp(-g * np.sum((a - b) ** 2)) for g in gammas)

    def mean_k(A, B):
        return np.mean([[k(a, b) for b in B] for a in A])

    return mean_k(x, x) + mean_k(y, y) - 2 * mean_k(x, y)


def brute_coral(x, y):
    """‖Σs − Σt‖_F² with covariances summed element by element."""
    def cov(z):
        n, d = z.shape
        m = z.mean(0)
        return np.array([[sum((z[r, a] - m[a]) * (z[r, b] - m[b]) for r in range(n)) / (n - 1)
                          for b in range(d)] for a in range(d)])

    return float(np.sum((cov(x) - cov(y)) ** 2))


@pytest.mark.parametrize("name,m,n,d,gammas", [
    ("square", 5, 5, 3, GAMMAS),
    ("rectangular", 4, 7, 2, GAMMAS),
    ("one gamma", 6, 3, 4, (0.5,)),
])
def test_rbf_mmd_matches_explicit_sums(name, m, n, d, gammas):
    rng = np.random.default_rng(len(name))
    x, y = rng.normal(size=(m, d)), rng.normal(0.7, 1.3, size=(n, d))
    got = rbf_mmd(torch.tensor(x), torch.tensor(y), gammas).item()
    assert got == pytest.approx(brute_mmd(x, y, gammas), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name,m,n,d", [("square", 5, 5, 3), ("rectangular", 3, 6, 2)])
def test_coral_matches_explicit_covariances(name, m, n, d):
    rng = np.random.default_rng(len(name))
    x, y = rng.normal(size=(m, d)), rng.normal(0, 2, size=(n, d))
    assert coral(torch.tensor(x), torch.tensor(y)).item() == pytest.approx(brute_coral(x, y), rel=1e-9)


HP = {"lr": 1e-3, "weight_decay": 0.0, "mmd_gamma": 0.7, "nonlinear_classifier": False}


def tiny(cls, seed=0, hp=HP):
    torch.manual_seed(seed)
    feat = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh())
    clf = torch.nn.Linear(4, 2)
    return cls((3,), 2, 2, dict(hp), featurizer=feat, classifier=clf)


@pytest.mark.parametrize("cls,disc", [(PSDA_MMD, "mmd"), (PSDA_CORAL, "coral")])
def test_update_step_is_task_loss_plus_tradeoff_times_discrepancy(cls, disc):
    """One SGD(lr=1) step moves every parameter by minus the gradient of
    CE(source) + mmd_gamma · disc(source features, target features), computed here from
    scratch with the brute-force discrepancy."""
    alg = tiny(cls)
    alg.optimizer = torch.optim.SGD(alg.network.parameters(), lr=1.0)
    before = [p.detach().clone() for p in alg.network.parameters()]
    g = torch.Generator().manual_seed(1)
    x0, x1 = torch.randn(3, 3, generator=g), torch.randn(2, 3, generator=g)
    y0, y1 = torch.tensor([0, 1, 1]), torch.tensor([1, 0])
    xt = torch.randn(5, 3, generator=g) + 1.0
    calls = []
    alg.after_step = lambda: calls.append(1)
    out = alg.update([(x0, y0), (x1, y1)], [xt[:2], xt[2:]])
    assert calls == [1]

    ref = tiny(cls)  # same initial weights
    params = list(ref.network.parameters())
    xs, ys = torch.cat([x0, x1]), torch.cat([y0, y1])
    zs, zt = ref.featurizer(xs), ref.featurizer(xt)
    ce = torch.nn.functional.cross_entropy(ref.classifier(zs), ys)
    zs64, zt64 = zs.detach().double().numpy(), zt.detach().double().numpy()
    pen = brute_mmd(zs64, zt64, GAMMAS) if disc == "mmd" else brute_coral(zs64, zt64)
    assert out["loss"] == pytest.approx(ce.item(), rel=1e-5)
    assert out["penalty"] == pytest.approx(pen, rel=1e-4, abs=1e-7)
    dpen = rbf_mmd(zs, zt, GAMMAS) if disc == "mmd" else coral(zs, zt)
    grads = torch.autograd.grad(ce + HP["mmd_gamma"] * dpen, params)
    for b, a, gr in zip(before, alg.network.parameters(), grads):
        torch.testing.assert_close(a.detach(), b - gr, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("unlabeled", [None, []])
def test_update_without_target_batch_is_a_task_loss_step(unlabeled):
    """With no unlabeled batch (DomainBed's DG task, its test suite) one SGD(lr=1) step
    moves every parameter by minus the gradient of the cross-entropy alone."""
    alg = tiny(PSDA_MMD)
    alg.optimizer = torch.optim.SGD(alg.network.parameters(), lr=1.0)
    ref = tiny(PSDA_MMD)
    x, y = torch.randn(4, 3, generator=torch.Generator().manual_seed(2)), torch.tensor([0, 1, 0, 1])
    grads = torch.autograd.grad(torch.nn.functional.cross_entropy(ref.network(x), y), list(ref.network.parameters()))
    out = alg.update([(x[:1], y[:1]), (x[1:], y[1:])], unlabeled)
    assert out["penalty"] == 0.0
    for p, q, g in zip(alg.network.parameters(), ref.network.parameters(), grads):
        torch.testing.assert_close(p.detach(), q.detach() - g, rtol=1e-5, atol=1e-6)


def test_coral_needs_two_rows():
    x, y = torch.randn(4, 3), torch.tensor([0, 1, 0, 1])
    with pytest.raises(ValueError, match="CORAL needs at least 2"):
        tiny(PSDA_CORAL).update([(x, y)], [torch.randn(1, 3)])


def test_predict_and_classifier_without_featurizer():
    alg = tiny(PSDA_MMD)
    assert alg.predict(torch.randn(5, 3)).shape == (5, 2)
    with pytest.raises(ValueError, match="pass both or neither"):
        PSDA_MMD((3,), 2, 2, dict(HP), featurizer=torch.nn.Linear(3, 4))


# ---- loaders -------------------------------------------------------------------------

class Items(Dataset):
    """Items are (float features, own index): batches reveal which indices they hold."""

    def __init__(self, n, d, seed, shift=0.0):
        self.x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed)) + shift

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], i


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("order", ["source first", "target first", "target twice then source twice"])
def test_paired_loaders_stay_aligned(num_workers, order):
    src, tgt = Items(30, 3, 0), Items(22, 3, 1, shift=1.0)
    sampler = psda.PairedBatchSampler(src.x.numpy(), tgt.x.numpy(), 6)
    want = [list(b) for b in itertools.islice(itertools.chain(sampler, sampler), 2 * len(sampler))]
    sampler2 = psda.PairedBatchSampler(src.x.numpy(), tgt.x.numpy(), 6)
    ends = []
    paired = PairedLoaders(src, tgt, sampler2, num_workers=num_workers, on_epoch_end=lambda: ends.append(1))
    got = []
    for _ in range(len(want) // 2):
        if order == "source first":
            a = [paired.next("source"), paired.next("target")]
            b = [paired.next("source"), paired.next("target")]
        elif order == "target first":
            a = [paired.next("target"), paired.next("source")][::-1]
            b = [paired.next("target"), paired.next("source")][::-1]
        else:
            t1, t2 = paired.next("target"), paired.next("target")
            a, b = [paired.next("source"), t1], [paired.next("source"), t2]
        for s, t in (a, b):
            got.append(s[1].tolist() + (t[1] + len(src)).tolist())
            torch.testing.assert_close(s[0], src.x[s[1]])
            torch.testing.assert_close(t[0], tgt.x[t[1]])
    assert got == want
    assert len(ends) == 1  # one epoch boundary crossed (the second epoch is not exhausted yet)


def test_paired_loaders_finite_stream_stops_at_epoch_end():
    src, tgt = Items(16, 2, 0), Items(16, 2, 1)
    sampler = psda.PairedBatchSampler(src.x.numpy(), tgt.x.numpy(), 4)
    paired = PairedLoaders(src, tgt, sampler, infinite=False)
    assert len(list(paired.stream("source"))) == len(sampler)


def simulate_train_py(coord, envs, uda, batch_size):
    """What DomainBed's train.py does with InfiniteDataLoader: one per training env, then
    one per UDA split, zipped."""
    train = [coord.loader(e, None, batch_size, 0) for e in envs]
    udas = [coord.loader(u, None, batch_size, 0) for u in uda]
    return zip(*train), zip(*udas)


@pytest.mark.parametrize("cls", [PSDA_MMD, PSDA_CORAL])
def test_domainbed_loaders_and_refresh_without_domainbed(cls):
    """The stand-in loaders give env i only env i's rows, target rows from the UDA
    splits, source/target paired per the sampler's matching, and the algorithm's
    featurizer refreshes the matching every psda_refresh_steps steps."""
    envs = [Items(14, 3, 0), Items(10, 3, 1, shift=0.5)]
    uda = [Items(9, 3, 2, shift=2.0)]
    coord = DomainBedPSDA(n_train=2, seed=3)
    activate(coord)
    try:
        train_it, uda_it = simulate_train_py(coord, envs, uda, batch_size=2)
        alg = tiny(cls, hp=dict(HP, psda_refresh_steps=3, psda_feature_batch_size=5))
        assert coord.algorithm is alg
        for step in range(10):
            mbs, ubs = next(train_it), next(uda_it)
            sampler = coord.sampler
            src_ids = [(i, int(j)) for i, (_, ys) in enumerate(mbs) for j in ys]
            tgt_ids = [int(j) for _, ys in ubs for j in ys]
            assert len(src_ids) == len(tgt_ids) == 4  # k = batch_size × 2 training envs
            offset = [0, 14]
            flat_src = {offset[i] + j for i, j in src_ids}
            # every source row is paired in the matching in force with some target row of the batch
            pairs = {tuple(p) for p in np.asarray(sampler.matching.pairs).tolist()}
            assert all(any((s, t) in pairs for t in tgt_ids) for s in flat_src)
            for i, (x, y) in enumerate(mbs):
                torch.testing.assert_close(x, envs[i].x[y])
            alg.update([(x, y % 2) for x, y in mbs], [x for x, _ in ubs])  # labels from indices
        assert coord.refresher.refreshes == 3
        # the refreshed matching is the one of the featurizer's current features
        feats = lambda ds: alg.featurizer(torch.cat([d.x for d in ds])).detach().numpy()  # noqa: E731
        coord.refresher.refresh()
        next(train_it), next(uda_it)  # may cross into a new epoch
        want = psda.match(feats(envs), feats(uda), batch_size=4, discrepancy=alg.discrepancy)
        assert np.array_equal(sampler.pending_matching.pairs if sampler.pending_matching is not None
                              else sampler.matching.pairs, want.pairs)
    finally:
        activate(None)


def test_domainbed_loaders_need_uda_split():
    coord = DomainBedPSDA(n_train=1)
    coord.attach(tiny(PSDA_MMD))
    (loader,) = [coord.loader(Items(8, 3, 0), None, 2, 0)]
    with pytest.raises(ValueError, match="--uda_holdout_fraction"):
        next(iter(loader))


# ---- a real DomainBed run --------------------------------------------------------------

def _domainbed_dir():
    """$PSDA_DOMAINBED_DIR, else ../shared/DomainBed next to the repository, if it holds DomainBed."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    d = os.environ.get("PSDA_DOMAINBED_DIR") or os.path.join(repo, "..", "shared", "DomainBed")
    return os.path.abspath(d) if os.path.isdir(os.path.join(d, "domainbed")) else None


DOMAINBED = _domainbed_dir()


@pytest.fixture
def domainbed_on_path(monkeypatch):
    """DomainBed importable in this process (the runs below call the command's main():
    `python -m psda.domainbed` itself runs in the sweep test's jobs). Debug28's loaders
    run without worker processes: DomainBed's infinite loaders never stop theirs, which
    a separate process would end but this one would keep (prefetching workers are
    tested in test_domainbed_workflow.py)."""
    monkeypatch.syspath_prepend(DOMAINBED)
    from domainbed import datasets

    monkeypatch.setattr(datasets.Debug28, "N_WORKERS", 0)
    return DOMAINBED


@pytest.mark.skipif(not DOMAINBED, reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR or put one in ../shared/DomainBed")
@pytest.mark.parametrize("algorithm", ["PSDA_MMD", "PSDA_CORAL"])
def test_python_m_psda_domainbed_debug28(domainbed_on_path, tmp_path, algorithm):
    from psda.domainbed.__main__ import main

    hp = {"batch_size": 4, "psda_refresh_steps": 2, "psda_feature_batch_size": 8}
    main(["--dataset", "Debug28", "--algorithm", algorithm,
          "--task", "domain_adaptation", "--test_envs", "0", "--uda_holdout_fraction", "0.5",
          "--steps", "7", "--checkpoint_freq", "3", "--hparams", json.dumps(hp),
          "--output_dir", str(tmp_path), "--skip_model_save"])
    assert (tmp_path / "done").exists()
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [0, 3, 6]
    assert all(np.isfinite(row["loss"]) and np.isfinite(row["penalty"]) for row in rows)
    assert "env0_uda_acc" in rows[-1] and rows[-1]["hparams"]["psda_refresh_steps"] == 2
    # out.txt: the sampler was built once and refreshed after steps 2, 4 and 6 (of 7), each timed
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert sum("sampler over" in line and "built in" in line for line in lines) == 1
    assert [line.split(" after ")[1].split(" took ")[0] for line in lines if "psda: refresh" in line] == \
        ["2 steps", "4 steps", "6 steps"]


@pytest.mark.skipif(not DOMAINBED, reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR or put one in ../shared/DomainBed")
def test_python_m_psda_domainbed_rejects_domain_generalization(domainbed_on_path, tmp_path):
    from psda.domainbed.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(["--dataset", "Debug28", "--algorithm", "PSDA_MMD", "--output_dir", str(tmp_path)])
    assert "--task domain_adaptation" in str(e.value.code)


@pytest.mark.skipif(not DOMAINBED, reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR or put one in ../shared/DomainBed")
def test_guard_refuses_a_split_smaller_than_the_batch(domainbed_on_path):
    """DomainBed's own InfiniteDataLoader on 5 items with batch_size 8 never yields (drop_last);
    guarded, it is refused at construction, and still serves splits that fill a batch or have
    class weights (drawn with replacement)."""
    import importlib.util

    from domainbed.lib import fast_data_loader

    from psda.domainbed.guard import SplitSmallerThanBatch, guarded, unguarded

    # DomainBed's own class from a fresh copy of its module: psda.domainbed.install (other
    # tests) replaces the module's attribute by psda's loaders or by this guard.
    spec = importlib.util.spec_from_file_location("_fresh_fast_data_loader", fast_data_loader.__file__)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    InfiniteDataLoader = fresh.InfiniteDataLoader

    load = guarded(InfiniteDataLoader)
    assert guarded(load) is load and unguarded(load) is InfiniteDataLoader
    small = TensorDataset(torch.arange(5.0), torch.zeros(5, dtype=torch.long))
    with pytest.raises(SplitSmallerThanBatch, match=r"5 items, fewer than batch_size = 8.*\"batch_size\": 5"):
        load(dataset=small, weights=None, batch_size=8, num_workers=0)
    x, _ = next(iter(load(dataset=small, weights=torch.ones(5), batch_size=8, num_workers=0)))
    assert len(x) == 8
    x, _ = next(iter(load(dataset=small, weights=None, batch_size=5, num_workers=0)))
    assert len(x) == 5


@pytest.mark.skipif(not DOMAINBED, reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR or put one in ../shared/DomainBed")
def test_domainbed_erm_with_a_small_uda_split_is_refused_not_hung(tmp_path):
    """Issue 27, item 9: ERM on DomainBed's own loaders, RotatedDigitsFlat's 48-item UDA
    split and the default batch_size 64 used to spin forever in DomainBed's
    _InfiniteSampler; it must now exit at once with a message naming batch_size."""
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([DOMAINBED, os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "psda.domainbed", "--dataset", "RotatedDigitsFlat", "--algorithm", "ERM",
           "--task", "domain_adaptation", "--uda_holdout_fraction", "0.2", "--test_envs", "0",
           "--steps", "3", "--output_dir", str(tmp_path), "--skip_model_save"]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail("python -m psda.domainbed hung on a UDA split smaller than the batch")
    assert done.returncode == 1, done.stderr[-2000:]
    assert "48 items, fewer than batch_size = 64" in done.stderr and '"batch_size": 48' in done.stderr
    assert not (tmp_path / "done").exists()
