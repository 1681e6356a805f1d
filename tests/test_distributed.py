"""Tests of psda.distributed: a real 2-process gloo run (spawned, CPU) that trains a few DDP
steps with refreshes, and the Accelerate and Lightning recipes of docs/recipes.md."""

import os
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.utils.data import ConcatDataset, DataLoader, TensorDataset  # noqa: E402

import psda  # noqa: E402
from psda.distributed import (WholeBatches, broadcast_features, check_identical,  # noqa: E402
                              gather_features, paired_batch_sampler, world)
from psda.refresh import FeatureRefresher, extract_features  # noqa: E402

N_S, N_T, D, K = 45, 37, 4, 4


def make_data():
    """Index-carrying datasets: item i of either domain is (x_i, i)."""
    g = torch.Generator().manual_seed(0)
    xs = torch.randn(N_S, D, generator=g)
    xt = torch.randn(N_T, D, generator=g) * 1.5 + 1.0
    return TensorDataset(xs, torch.arange(N_S)), TensorDataset(xt, torch.arange(N_T))


def make_model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(D, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world_size, port, out_dir, background):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, world_size=world_size, rank=rank)
    try:
        torch.manual_seed(100 + rank)  # ranks differ in everything but what DDP and PSDA synchronise
        src, tgt = make_data()
        net = make_model()
        feat = net[:2]
        # Rank 1 starts from deliberately different features: broadcast makes them rank 0's.
        zs = extract_features(feat, src, progress=False) + rank
        zt = extract_features(feat, tgt, progress=False)
        sampler = paired_batch_sampler(zs, zt, K)
        ddp = torch.nn.parallel.DistributedDataParallel(net)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
        loader = DataLoader(ConcatDataset([src, tgt]), batch_sampler=sampler)
        refresher = FeatureRefresher(sampler, feat, src, tgt, every_steps=3, background=background,
                                     progress=False)
        plain = psda.PairedBatchSampler(zs, zt, K)  # no num_replicas/rank: taken from the process group
        log = {"len": len(sampler), "world": world(), "plain": (plain.num_replicas, plain.rank),
               "batches": [], "digests": [],
               "initial": sampler.matching.fingerprint}
        for epoch in range(3):
            batches = []
            for x, idx in loader:
                if not batches:
                    log["digests"].append(sampler.matching.fingerprint)  # the matching this epoch uses
                batches.append(idx.tolist())
                out = ddp(x)  # one DDP forward per step: source rows [:K], target rows [K:]
                loss = out[:K].logsumexp(1).mean() + (out[:K].mean(0) - out[K:].mean(0)).pow(2).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                refresher.step()
            refresher.epoch_end()
            log["batches"].append(batches)
        # the features a refresh sees are the same on every rank
        log["gathered"] = gather_features(feat, src, batch_size=7, progress=False)
        log["params"] = [p.detach().clone() for p in net.parameters()]
        check_identical(sampler)
        torch.save(log, os.path.join(out_dir, "rank%d.pt" % rank))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("background", [False, True])
def test_two_process_gloo_training(tmp_path, background):
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path), background), nprocs=2, join=True)
    logs = [torch.load(tmp_path / ("rank%d.pt" % r), weights_only=False) for r in range(2)]
    assert [lg["world"] for lg in logs] == [(2, 0), (2, 1)]
    assert [lg["plain"] for lg in logs] == [(2, 0), (2, 1)]
    assert logs[0]["len"] == logs[1]["len"] >= 2
    assert logs[0]["initial"] == logs[1]["initial"]  # rank 1 got rank 0's features
    for epoch in range(3):
        b0, b1 = logs[0]["batches"][epoch], logs[1]["batches"][epoch]
        assert len(b0) == len(b1) == logs[0]["len"]  # equal-length shards
        assert all(len(b) == 2 * K for b in b0 + b1)  # whole batches
        pairs = [{(b[m], b[K + m]) for b in bs for m in range(K)} for bs in (b0, b1)]
        assert not pairs[0] & pairs[1]  # disjoint shards: no pair is served to both ranks
        assert logs[0]["digests"][epoch] == logs[1]["digests"][epoch]  # identical matchings
    # refreshes changed the matching (the test can tell), and the ranks agree on features and weights
    assert len(set(logs[0]["digests"])) >= 2
    np.testing.assert_array_equal(logs[0]["gathered"], logs[1]["gathered"])
    for p0, p1 in zip(logs[0]["params"], logs[1]["params"]):
        torch.testing.assert_close(p0, p1)


def test_single_process_defaults():
    """Without a process group: world is (1, 0), features pass through, checks are no-ops."""
    assert world() == (1, 0)
    src, tgt = make_data()
    a, b = broadcast_features(src.tensors[0], tgt.tensors[0].double())
    assert a.dtype == np.float32 and b.dtype == np.float64 and a.shape == (N_S, D)
    s = paired_batch_sampler(a, b, K)
    assert (s.num_replicas, s.rank) == (1, 0)
    check_identical(s)
    net = make_model()
    np.testing.assert_array_equal(gather_features(net, src, progress=False),
                                  extract_features(net, src, progress=False))


def test_fingerprint_tells_matchings_apart():
    src, tgt = make_data()
    a = psda.match(src.tensors[0].numpy(), tgt.tensors[0].numpy(), batch_size=K)
    b = psda.match(src.tensors[0].numpy(), tgt.tensors[0].numpy() * -1, batch_size=K)
    assert a.fingerprint == psda.match(src.tensors[0].numpy(), tgt.tensors[0].numpy(), batch_size=K).fingerprint
    assert not np.array_equal(a.pairs, b.pairs) and a.fingerprint != b.fingerprint


# ---- recipes (docs/recipes.md) -----------------------------------------------------

def sampler_and_dataset():
    src, tgt = make_data()
    return psda.PairedBatchSampler(src.tensors[0].numpy(), tgt.tensors[0].numpy(), K), ConcatDataset([src, tgt])


def test_accelerate_batch_sampler_shard_keeps_batches_whole():
    """Accelerate's BatchSamplerShard with split_batches=False gives rank r the whole
    batches r, r + 2, ... of our epoch once the sampler is wrapped in WholeBatches
    (unwrapped it compares len(batch) = 2k with batch_size = k and yields nothing)."""
    pytest.importorskip("accelerate")
    from accelerate.data_loader import BatchSamplerShard

    sampler, _ = sampler_and_dataset()
    want = [list(b) for b in sampler]
    shards = []
    for r in range(2):
        sampler.set_epoch(0)  # each shard below walks epoch 0 again
        shards.append([list(b) for b in BatchSamplerShard(WholeBatches(sampler), num_processes=2,
                                                           process_index=r, split_batches=False)])
    half = len(want) // 2
    assert len(shards[0]) == len(shards[1]) >= half
    assert shards[0][:half] == want[0:2 * half:2] and shards[1][:half] == want[1:2 * half:2]


def test_accelerate_prepare_single_process():
    pytest.importorskip("accelerate")
    from accelerate import Accelerator

    sampler, ds = sampler_and_dataset()
    acc = Accelerator(cpu=True)
    loader = acc.prepare(DataLoader(ds, batch_sampler=sampler))
    sampler.set_epoch(0)
    want = [list(b) for b in sampler]
    sampler.set_epoch(0)
    got = [idx.tolist() for _, idx in loader]
    assert len(got) == len(want)
    for g, w in zip(got, want):  # items carry their own-domain index
        assert g[:K] == w[:K] and g[K:] == [t - N_S for t in w[K:]]


def test_lightning_use_distributed_sampler_false():
    L = pytest.importorskip("lightning.pytorch")

    src, tgt = make_data()
    seen = []

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = make_model()

        def train_dataloader(self):
            zs = extract_features(self.net[:2], src, progress=False)
            zt = extract_features(self.net[:2], tgt, progress=False)
            self.sampler = paired_batch_sampler(zs, zt, K)  # num_replicas/rank from the trainer's process group
            self.refresher = FeatureRefresher(self.sampler, self.net[:2], src, tgt, every_epochs=1, progress=False)
            return DataLoader(ConcatDataset([src, tgt]), batch_sampler=self.sampler)

        def training_step(self, batch, i):
            x, idx = batch
            seen.append((self.current_epoch, idx.tolist()))
            z = self.net[:2](x)
            return self.net(x[:K]).logsumexp(1).mean() + (z[:K].mean(0) - z[K:].mean(0)).pow(2).sum()

        def on_train_epoch_end(self):
            self.refresher.epoch_end()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    m = Module()
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, use_distributed_sampler=False,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(m)
    n = len(m.sampler)
    assert len(seen) == 2 * n and m.refresher.refreshes == 2
    for epoch in range(2):
        pairs = {(b[j], b[K + j]) for e, b in seen if e == epoch for j in range(K)}
        assert len(pairs) == n * K  # every pair of the epoch once: Lightning kept our batches


def _accelerate_worker(rank, world_size, port, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size))
    from accelerate import Accelerator

    acc = Accelerator(cpu=True)
    src, tgt = make_data()
    net = make_model()
    zs = extract_features(net[:2], src, progress=False) + acc.process_index  # differ until broadcast
    zt = extract_features(net[:2], tgt, progress=False)
    zs, zt = broadcast_features(zs, zt)
    # One replica: Accelerate shards the batches (WholeBatches refuses more).
    sampler = psda.PairedBatchSampler(zs, zt, K, num_replicas=1, rank=0)
    epoch = [list(b) for b in psda.PairedBatchSampler(zs, zt, K, num_replicas=1, rank=0)]
    with pytest.raises(ValueError, match="num_replicas=1, rank=0"):
        WholeBatches(psda.PairedBatchSampler(zs, zt, K))  # world size 2 from torch.distributed
    loader = acc.prepare(DataLoader(ConcatDataset([src, tgt]), batch_sampler=WholeBatches(sampler)))
    batches = [idx.tolist() for _, idx in loader]
    torch.save({"batches": batches, "digest": sampler.matching.fingerprint, "state": acc.num_processes,
                "epoch": epoch}, os.path.join(out_dir, "acc%d.pt" % rank))
    acc.wait_for_everyone()
    dist.destroy_process_group()


def test_accelerate_two_processes(tmp_path):
    """The Accelerate recipe with 2 real processes: whole, disjoint, equal-length shards
    of the same matching."""
    pytest.importorskip("accelerate")
    mp.spawn(_accelerate_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    logs = [torch.load(tmp_path / ("acc%d.pt" % r), weights_only=False) for r in range(2)]
    assert logs[0]["state"] == 2 and logs[0]["digest"] == logs[1]["digest"]
    b0, b1 = logs[0]["batches"], logs[1]["batches"]
    assert len(b0) == len(b1) >= 2 and all(len(b) == 2 * K for b in b0 + b1)
    pairs = [{(b[m], b[K + m]) for b in bs for m in range(K)} for bs in (b0, b1)]
    assert not pairs[0] & pairs[1]
    # Issue 17 case 6: every batch of the epoch is used exactly once across the
    # two processes (items carry their own-domain index: undo the offset).
    # Before, the sampler also took world size 2 and each process got half its share.
    # With drop_last (the sampler's default, which WholeBatches passes on) Accelerate
    # drops an odd last batch, as DistributedSampler would.
    want = [b[:K] + [t - N_S for t in b[K:]] for b in logs[0]["epoch"]]
    assert sorted(b0 + b1) == sorted(want[: 2 * (len(want) // 2)])


try:
    import lightning.pytorch as _L
except ImportError:  # the Lightning tests skip
    _L = None

if _L is not None:

    class SpawnModule(_L.LightningModule):
        """The Lightning recipe, at module level so that ddp_spawn can pickle it."""

        def __init__(self, out_dir):
            super().__init__()
            self.net = make_model()
            self.out_dir = out_dir
            self.seen = []

        def train_dataloader(self):
            src, tgt = make_data()
            zs = extract_features(self.net[:2], src, progress=False)
            zt = extract_features(self.net[:2], tgt, progress=False)
            self.sampler = paired_batch_sampler(zs, zt, K)
            self.refresher = FeatureRefresher(self.sampler, self.net[:2], src, tgt, every_epochs=1, progress=False)
            return DataLoader(ConcatDataset([src, tgt]), batch_sampler=self.sampler)

        def training_step(self, batch, i):
            x, idx = batch
            self.seen.append((self.current_epoch, idx.tolist(), self.sampler.matching.fingerprint))
            out = self.net(x)
            return out[:K].logsumexp(1).mean() + (out[:K].mean(0) - out[K:].mean(0)).pow(2).sum()

        def on_train_epoch_end(self):
            self.refresher.epoch_end()

        def on_train_end(self):
            torch.save({"seen": self.seen, "world": world(), "refreshes": self.refresher.refreshes},
                       os.path.join(self.out_dir, "pl%d.pt" % self.global_rank))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)



def test_lightning_ddp_spawn_two_processes(tmp_path):
    """The Lightning recipe with strategy='ddp_spawn' on 2 CPU processes."""
    L = pytest.importorskip("lightning.pytorch")
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=2, strategy="ddp_spawn",
                        use_distributed_sampler=False, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(SpawnModule(str(tmp_path)))
    logs = [torch.load(tmp_path / ("pl%d.pt" % r), weights_only=False) for r in range(2)]
    assert [lg["world"] for lg in logs] == [(2, 0), (2, 1)]
    assert logs[0]["refreshes"] == logs[1]["refreshes"] == 2
    for epoch in range(2):
        s0, s1 = ([s for s in lg["seen"] if s[0] == epoch] for lg in logs)
        assert len(s0) == len(s1) >= 2
        assert {s[2] for s in s0} == {s[2] for s in s1} and len({s[2] for s in s0}) == 1
        pairs = [{(b[m], b[K + m]) for _, b, _ in s for m in range(K)} for s in (s0, s1)]
        assert not pairs[0] & pairs[1]
