"""Named regression tests for the twelve cases of issue 17 ("Hardening: no
crash, leak, stuck state or silent misuse"). Case 1 (the C ABI) is
tests/test_capi.py::test_c_hostile_use; the rest are here. Cases that need
an address-space limit run in a child process under resource.setrlimit, so
that an abort there fails the test instead of ending the test run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import psda

ROOT = Path(__file__).resolve().parent.parent


def run_limited(code: str, limit_bytes: int | None = None, timeout: float = 120,
                headroom: int | None = None) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter whose RLIMIT_AS is limit_bytes, or, with
    headroom, the child's size after loading psda's library plus headroom bytes
    (so that the test does not depend on how much address space the Go runtime
    reserves on this machine)."""
    prelude = textwrap.dedent(
        """
        import resource, sys
        limit, headroom = %r, %r
        if headroom is not None:
            import numpy, psda._native
            vm = next(int(l.split()[1]) << 10 for l in open("/proc/self/status") if l.startswith("VmSize:"))
            limit = vm + headroom
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
        """
        % (limit_bytes, headroom)
    )
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(psda.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)  # fmt: skip


needs_rlimit = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's"
)


@needs_rlimit
def test_case02_coral_wide_features_run_in_little_memory():
    # n = 8, d = 16,000: CORAL's d×d covariances would need 8 GB; with fewer rows
    # than features the costs come from Gram products of the rows instead.
    res = run_limited(
        """
        import numpy as np, psda
        x = np.random.default_rng(0).random((8, 16000), dtype=np.float32)
        y = np.random.default_rng(1).random((8, 16000), dtype=np.float32)
        m = psda.match(x, y, batch_size=2, discrepancy="coral")
        print("pairs", len(m.pairs), np.isfinite(m.stage1_cost))
        """,
        6 << 30,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "pairs 8 True" in res.stdout, res.stdout + res.stderr[-3000:]


@needs_rlimit
def test_case02_coral_dense_covariances_are_guarded():
    # More rows than features: the d×d covariances are used, and counted.
    res = run_limited(
        """
        import numpy as np, psda
        x = np.zeros((3000, 2000), dtype=np.float32)
        try:
            psda.match(x, x, batch_size=2, stages=1, discrepancy="coral")
        except ValueError as e:
            print("ValueError:", e)
        """,
        headroom=150 << 20,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ValueError:" in res.stdout and "2000×2000 covariances" in res.stdout, res.stdout + res.stderr[-3000:]


@needs_rlimit
def test_case03_ulimit_v_dense_match_refused_not_aborted():
    res = run_limited(
        """
        import numpy as np, psda
        x = np.random.default_rng(0).random((16000, 4), dtype=np.float32)
        try:
            psda.match(x, x, batch_size=2, solver="dense")
        except ValueError as e:
            print("ValueError:", e)
        """,
        headroom=600 << 20,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ValueError:" in res.stdout and "ulimit -v" in res.stdout, res.stdout + res.stderr[-3000:]


@needs_rlimit
def test_case03_ulimit_v_sparse_kernel_tables_refused_not_swapped():
    # At 24000 × 1200 Auto runs Stage 1 dense (230 MB) and Stage 2 sparse
    # (its P × P matrix would take 4.6 GB), whose RBF tables (16·24000·1200
    # bytes, 472 MB with K_bb) are chosen by the sizes alone; where they do
    # not fit, the Match is refused with an error naming them, not run on
    # another model whose costs differ in their last bits.
    res = run_limited(
        """
        import numpy as np, psda
        rng = np.random.default_rng(0)
        x, y = rng.random((24000, 4)), rng.random((1200, 4))
        try:
            psda.match(x, y, batch_size=2)
        except ValueError as e:
            print("ValueError:", e)
        """,
        headroom=150 << 20,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ValueError:" in res.stdout and "kernel tables" in res.stdout and "solver" not in res.stdout, \
        res.stdout + res.stderr[-3000:]


@needs_rlimit
def test_case03_ulimit_v_sparse_stage1_graph_refused_not_killed():
    # The sparse Stage 1 repeats every candidate edge once per copy of its
    # column (n_large / n_small = 100 here): 40000 × 400 forced sparse would
    # take about 9 GB (a reviewer's run reached 21.9 GB before the graph was
    # sized ahead and the OOM killer ended it). It is refused, with the dense
    # solver offered where the dense Match fits (stages = 1: 128 MB), not
    # with stages = 2, whose dense Stage 2 matrix (40000², 12.8 GB) it would
    # refuse in turn.
    res = run_limited(
        """
        import numpy as np, psda
        rng = np.random.default_rng(0)
        x, y = rng.random((40000, 4)), rng.random((400, 4))
        for stages, solver in [(1, "sparse"), (2, "sparse"), (2, "dense")]:
            try:
                psda.match(x, y, batch_size=2, stages=stages, solver=solver)
            except ValueError as e:
                print(stages, solver, "ValueError:", e)
        """,
        headroom=600 << 20,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert len(lines) == 3 and all("ValueError:" in line for line in lines), res.stdout + res.stderr[-3000:]
    assert "candidate graph" in lines[0] and 'solver = "dense"' in lines[0], lines[0]
    assert "candidate graph" in lines[1] and 'solver = "dense"' not in lines[1], lines[1]
    assert "dense cost matrices" in lines[2], lines[2]


@needs_rlimit
@pytest.mark.parametrize("limit", [150 << 20, 800 << 20])
def test_case03_ulimit_v_import_gives_the_real_error(limit):
    # Under a tight limit the Go runtime cannot load: psda must say so with
    # an ImportError naming the limit, never abort or raise a NameError.
    res = run_limited(
        """
        try:
            import numpy as np
        except BaseException as e:  # numpy itself may not fit; not ours
            print("numpy does not load:", type(e).__name__)
            raise SystemExit(0)
        import psda
        try:
            psda.match(np.zeros((4, 2)), np.ones((4, 2)), batch_size=2)
        except ImportError as e:
            print("ImportError:", e)
        """,
        limit,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "NameError" not in res.stdout + res.stderr
    if "numpy does not load" not in res.stdout:
        assert "ImportError:" in res.stdout and "ulimit -v" in res.stdout, res.stdout + res.stderr[-3000:]


# ---------------------------------------------------------------------------
# Case 4: views() iterated one at a time must not keep every past pass.
# ---------------------------------------------------------------------------


def _features(n_source, n_target, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_source, d)), rng.normal(0.5, 1, size=(n_target, d))


def test_case04_views_one_side_alone_does_not_grow():
    import tracemalloc

    src, tgt = _features(2000, 20)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=250, stages=1, kernel="linear")
    sb, _ = sampler.views()
    for _ in range(70):  # past the lag limit, so that the kept passes are at their cap
        for _ in sb:
            pass
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(100):
        for _ in sb:
            pass
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    # Before the fix every pass kept its 2·P int64 index buffer: 100 × 32 kB.
    assert grown < 1 << 20, f"100 passes of one view grew the heap by {grown} bytes"


def test_case04_views_still_aligned_when_iterated_one_after_the_other():
    src, tgt = _features(40, 30)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=4, seed=3)
    ref = psda.PairedBatchSampler(src, tgt, batch_size=4, seed=3)
    sb, tb = sampler.views()
    s_epochs = [list(sb) for _ in range(3)]
    t_epochs = [list(tb) for _ in range(3)]
    for e in range(3):
        want = list(ref)
        assert [b[:4] for b in want] == s_epochs[e]
        assert [[i - 40 for i in b[4:]] for b in want] == t_epochs[e]


# ---------------------------------------------------------------------------
# Case 5: the epoch counter wraps at 2**64 instead of breaking iter().
# ---------------------------------------------------------------------------


def test_case05_set_epoch_last_wraps_to_zero():
    src, tgt = _features(30, 30)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=4, seed=1)
    epoch0 = list(psda.PairedBatchSampler(src, tgt, batch_size=4, seed=1))
    sampler.set_epoch(2**64 - 1)
    assert len(list(sampler)) == len(sampler)
    assert sampler.epoch == 0
    assert list(sampler) == epoch0
    list(sampler)  # and it keeps going
    with pytest.raises(ValueError, match="2\\*\\*64"):
        sampler.set_epoch(2**64)


def test_case05_loaded_state_at_last_epoch_wraps():
    src, tgt = _features(30, 30)
    a = psda.PairedBatchSampler(src, tgt, batch_size=4)
    a.set_epoch(2**64 - 1)
    list(a)  # the whole last epoch: the state points past it
    b = psda.PairedBatchSampler(src, tgt, batch_size=4)
    b.load_state_dict(a.state_dict())
    assert b.epoch == 0
    assert list(b) == list(a)


# ---------------------------------------------------------------------------
# Case 8: load_state_dict refuses states of other settings, names missing keys.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "saved, loading, key",
    [
        (dict(stages=1), dict(stages=2), "stages"),
        (dict(discrepancy="coral", kernel="rbf"), dict(discrepancy="mmd"), "discrepancy"),
        (dict(kernel="linear"), dict(kernel="rbf"), "kernel"),
    ],
)
def test_case08_load_state_dict_refuses_other_settings(saved, loading, key):
    src, tgt = _features(40, 40)
    state = psda.PairedBatchSampler(src, tgt, batch_size=4, **saved).state_dict()
    other = psda.PairedBatchSampler(src, tgt, batch_size=4, **loading)
    before = other.matching
    # Another stages is another sampler name ('paired'): the name check says so first.
    with pytest.raises(ValueError, match=f"{key} = |is from a 'paired' sampler"):
        other.load_state_dict(state)
    assert other.matching is before and other.stages == loading.get("stages", 2)


@pytest.mark.parametrize("key", ["plan", "epoch", "seed", "pending_plan", "n_source"])
def test_case08_load_state_dict_missing_key_is_named(key):
    src, tgt = _features(40, 40)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=4)
    state = sampler.state_dict()
    del state[key]
    with pytest.raises(ValueError, match=f"lacks the key\\(s\\) '{key}'"):
        sampler.load_state_dict(state)


# ---------------------------------------------------------------------------
# Case 9: threads iterating one sampler: no corruption, documented semantics.
# ---------------------------------------------------------------------------


def test_case09_concurrent_iteration_serves_whole_epochs():
    import threading

    src, tgt = _features(400, 400)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=4, stages=1, kernel="linear", seed=5)
    ref = psda.PairedBatchSampler(src, tgt, batch_size=4, stages=1, kernel="linear", seed=5)
    epochs = [list(ref) for _ in range(12)]
    got, errors = [], []

    def run():
        try:
            for _ in range(3):
                got.append(list(sampler))
        except BaseException as e:  # pragma: no cover - the failure being tested
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # Every pass is a whole epoch of the schedule (never a mix of two).
    assert all(g in epochs for g in got), "a thread got batches that are no epoch's"
    assert 0 < sampler.epoch <= 12
    assert "Threads:" in psda.PairedBatchSampler.__doc__


# ---------------------------------------------------------------------------
# Case 6: WholeBatches refuses a sampler that already shards.
# (The two-process Accelerate run that checks every batch of an epoch is used
# exactly once is tests/test_distributed.py::test_accelerate_two_processes.)
# ---------------------------------------------------------------------------


def test_case06_whole_batches_refuses_a_sharding_sampler():
    from psda.distributed import WholeBatches

    src, tgt = _features(40, 40)
    with pytest.raises(ValueError, match="num_replicas=1, rank=0"):
        WholeBatches(psda.PairedBatchSampler(src, tgt, batch_size=4, num_replicas=2, rank=1))
    w = WholeBatches(psda.PairedBatchSampler(src, tgt, batch_size=4, num_replicas=1, rank=0))
    assert w.batch_size == 8 and len(w) == 10


# ---------------------------------------------------------------------------
# Case 10: a refresher that would never refresh; CORAL with a kernel.
# ---------------------------------------------------------------------------


def test_case10_feature_refresher_without_schedule_is_an_error():
    from psda.refresh import FeatureRefresher

    src, tgt = _features(20, 20)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=4)
    with pytest.raises(ValueError, match="never refresh.*every_epochs=1.*manual=True"):
        FeatureRefresher(sampler, lambda x: x, [], [])
    with pytest.raises(ValueError, match="manual means no schedule"):
        FeatureRefresher(sampler, lambda x: x, [], [], manual=True, every_steps=3)
    assert FeatureRefresher(sampler, lambda x: x, [], [], manual=True).schedule.every_epochs is None


def test_case10_coral_with_linear_kernel_is_an_error():
    src, tgt = _features(20, 20)
    for call in (lambda: psda.match(src, tgt, batch_size=4, discrepancy="coral", kernel="linear"),
                 lambda: psda.PairedBatchSampler(src, tgt, 4, discrepancy="coral", kernel="linear")):
        with pytest.raises(ValueError, match="CORAL compares covariance matrices and uses no kernel"):
            call()
    psda.match(src, tgt, batch_size=4, discrepancy="coral")  # the default kernel is not an explicit choice


# ---------------------------------------------------------------------------
# Case 11: confusing errors become errors that name the input and the fix.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("scale, discrepancy, kernel", [(1e154, "mmd", "linear"), (1e77, "coral", "rbf"),
                                                        (1e200, "mmd", "rbf")])
def test_case11_huge_finite_features_name_the_input(scale, discrepancy, kernel):
    src, tgt = _features(12, 10)
    with pytest.raises(ValueError, match="^target has entries up to .*rescale both feature sets"):
        psda.match(src, tgt * scale, batch_size=2, discrepancy=discrepancy, kernel=kernel)
    with pytest.raises(ValueError, match="^source_features has entries up to"):
        psda.PairedBatchSampler(src * scale, tgt, 2, discrepancy=discrepancy, kernel=kernel)
    # A common rescale makes it work, with the matching of the unscaled data (linear MMD and CORAL).
    m = psda.match(src * scale / scale, tgt * scale / scale, batch_size=2, discrepancy=discrepancy, kernel=kernel)
    assert np.isfinite(m.stage1_cost)


def _odd_tensors():
    torch = pytest.importorskip("torch")
    import warnings

    x = torch.rand(6, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # beta/prototype/deprecation notes from torch
        out = {
            "meta": (torch.empty(6, 3, device="meta"), "meta torch tensor"),
            "sparse_coo": (x.to_sparse(), "to_dense"),
            "sparse_csr": (x.to_sparse_csr(), "to_dense"),
            "quantized": (torch.quantize_per_tensor(x, 0.1, 0, torch.quint8), "dequantize"),
            "nested": (torch.nested.nested_tensor([torch.rand(3), torch.rand(2)]), "nested torch tensor"),
        }
    return out


@pytest.mark.parametrize("kind", ["meta", "sparse_coo", "sparse_csr", "quantized", "nested"])
def test_case11_odd_torch_tensors_name_the_argument(kind):
    import warnings

    t, fix = _odd_tensors()[kind]
    x = np.random.default_rng(0).random((6, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=f"^target .*{fix}"):
            psda.match(x, t, batch_size=2)
        with pytest.raises(TypeError, match=f"^source_features .*{fix}"):
            psda.PairedBatchSampler(t, x, 2)


@pytest.mark.parametrize("n", [2**63, 2**64 + 5])
def test_case11_huge_num_replicas_is_a_value_error(n):
    src, tgt = _features(10, 10)
    with pytest.raises(ValueError, match="num_replicas = .*< 2\\*\\*63"):
        psda.PairedBatchSampler(src, tgt, 2, num_replicas=n, rank=0)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--gammas", "nan"], "finite numbers > 0"),
        (["--gammas", "1,inf"], "finite numbers > 0"),
        (["--seed", "-1"], "0 <= seed"),
        (["--plot", "/missing/dir/plot.png"], "does not exist"),
        (["--k", "64", "--n-source", "30", "--n-target", "20"], "at most max(n_source, n_target) = 30"),
    ],
)
def test_case11_cli_bad_arguments_exit_2_without_traceback(argv, message):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(psda.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-m", "psda", "variance", "--no-progress", *argv], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and message in res.stderr, res.stderr


# ---------------------------------------------------------------------------
# Case 12: progress output in logs and under DDP.
# ---------------------------------------------------------------------------


def test_case12_progress_not_a_terminal_writes_plain_lines():
    import io

    from psda._progress import LINE_INTERVAL, Progress

    buf = io.StringIO()
    p = Progress(1000, "job", stream=buf, force=True, interval=0.0)
    for _ in range(1000):
        p.advance()
    p.close()
    out = buf.getvalue()
    assert "\r" not in out
    lines = out.splitlines()
    assert lines[-1].startswith("job: 1000/1000 (100%)")
    # At most one line per LINE_INTERVAL besides the first and the last.
    assert len(lines) <= 2 + int(float(lines[-1].split()[-1].rstrip("s")) / LINE_INTERVAL)
    quiet = io.StringIO()
    q = Progress(3, "quiet", stream=quiet)  # not forced, not a terminal: nothing for short work
    q.advance(3)
    q.close()
    assert quiet.getvalue() == ""


def test_case12_progress_in_a_log_writes_lines_for_long_work(monkeypatch):
    """Not a terminal, not forced (psda variance in a log): plain lines every LINE_INTERVAL, then the last."""
    import io
    import time

    import psda._progress as P

    monkeypatch.setattr(P, "LINE_INTERVAL", 0.05)
    buf = io.StringIO()
    p = P.Progress(4, "long", stream=buf)
    for _ in range(4):
        time.sleep(0.06)
        p.advance()
    p.close()
    lines = buf.getvalue().splitlines()
    assert 2 <= len(lines) <= 5 and lines[-1].startswith("long: 4/4 (100%)"), lines


@pytest.mark.parametrize("rank, all_ranks, drawn", [("0", False, True), ("1", False, False), ("1", True, True)])
def test_case12_progress_only_on_rank_zero_by_default(rank, all_ranks, drawn):
    # RANK is what torchrun and friends set in each process; with an initialised
    # process group its rank is used instead (psda._progress.process_rank).
    code = (
        "import io, psda._progress as P\n"
        "buf = io.StringIO()\n"
        f"p = P.Progress(2, 'r', stream=buf, force=True, all_ranks={all_ranks})\n"
        "p.advance(2); p.close(); print(repr(buf.getvalue()))\n"
    )
    env = dict(os.environ, RANK=rank)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(psda.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    assert ("r: 2/2" in res.stdout) == drawn, res.stdout


# ---------------------------------------------------------------------------
# Case 7: a checked way to build the loader, and a split that is always right.
# ---------------------------------------------------------------------------


def _datasets(n_source, n_target):
    torch = pytest.importorskip("torch")
    from torch.utils.data import TensorDataset

    # Items carry their own-domain index and a domain tag (0 source, 1 target).
    return (TensorDataset(torch.arange(n_source), torch.zeros(n_source, dtype=torch.long)),
            TensorDataset(torch.arange(n_target), torch.ones(n_target, dtype=torch.long)))


def test_case07_paired_loader_refuses_datasets_that_do_not_match_the_features():
    src, tgt = _features(150, 120)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=8)
    s200, t120 = _datasets(200, 120)
    with pytest.raises(ValueError, match="source_dataset has 200 items .* 150 source"):
        psda.paired_loader(s200, t120, sampler)
    s150, _ = _datasets(150, 120)
    with pytest.raises(ValueError, match="look swapped"):
        psda.paired_loader(t120, s150, sampler)
    with pytest.raises(ValueError, match="batch_size"):
        psda.paired_loader(s150, t120, sampler, batch_size=8)
    with pytest.raises(TypeError, match="PairedBatchSampler"):
        psda.paired_loader(s150, t120, object())


@pytest.mark.parametrize("drop_last", [True, False])
def test_case07_paired_loader_and_split_batch_give_the_matched_pairs(drop_last):
    n_s, n_t, k = 45, 30, 4  # 45 pairs: with drop_last=False the last batch has 1 pair
    src, tgt = _features(n_s, n_t)
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=k, drop_last=drop_last, stages=1)
    want = [(b[:len(b) // 2], [t - n_s for t in b[len(b) // 2:]]) for b in
            psda.PairedBatchSampler(src, tgt, batch_size=k, drop_last=drop_last, stages=1)]
    loader = psda.paired_loader(*_datasets(n_s, n_t), sampler)
    got = []
    for batch in loader:
        (i_s, dom_s), (i_t, dom_t) = psda.split_batch(batch)
        assert dom_s.eq(0).all() and dom_t.eq(1).all()  # never a target item on the source side
        got.append((i_s.tolist(), i_t.tolist()))
    assert got == want
    assert drop_last or len(got[-1][0]) == 45 % k  # the short last batch, split right
    pairs = {tuple(p) for p in sampler.matching.pairs.tolist()}
    assert all((s, t) in pairs for ss, tt in got for s, t in zip(ss, tt))


def test_case07_split_batch_structures_and_errors():
    torch = pytest.importorskip("torch")
    x = torch.arange(10).reshape(5, 2)
    with pytest.raises(ValueError, match="5 rows"):
        psda.split_batch(x)
    a, b = psda.split_batch({"x": torch.arange(6), "y": [1, 2, 3, 4, 5, 6]})
    assert a["x"].tolist() == [0, 1, 2] and b["y"] == [4, 5, 6]
    with pytest.raises(TypeError, match="no length"):
        psda.split_batch((torch.arange(4), 3))
    assert psda.split_batch([5, 6, 7, 8]) == ([5, 6], [7, 8])  # a sampler batch: rows
    assert psda.split_batch(["a", "b"]) == (["a"], ["b"])
