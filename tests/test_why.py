"""Tests of tools/why_psda.py (issue 27, item 4): the bias/variance split of the per-batch
gradients against an independent closed-form computation over every batch of the epochs,
the blockwise full-data MMD gradient against the direct one, the V-statistic's batch bias
against an enumeration of all batches, and a tiny run of the tool on
RotatedFashionMNISTFlat (skipped without DomainBed or Debian's dataset-fashion-mnist)."""

import importlib.util
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import psda  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tool():
    spec = importlib.util.spec_from_file_location("why_psda", os.path.join(REPO, "tools", "why_psda.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


why = _tool()


# ---- the split, against closed forms over every batch ------------------------------------

def _linear_mmd(zs, zt):
    """Linear-kernel MMD²: ‖mean zs − mean zt‖²."""
    return (zs.mean(0) - zt.mean(0)).pow(2).sum()


def _closed_form_grads(W, V, c, xs, ys, xt):
    """For z = W x, logits = V z + c: the gradient of ‖W(x̄_s − x̄_t)‖² w.r.t. W
    (2 W Δ Δᵀ) and of the mean cross-entropy w.r.t. (W, V, c), by hand in NumPy."""
    delta = xs.mean(0) - xt.mean(0)
    g = 2.0 * np.outer(W @ delta, delta)
    z = xs @ W.T
    logits = z @ V.T + c
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dl = p.copy()
    dl[np.arange(len(ys)), ys] -= 1.0
    dl /= len(ys)
    dV, dc = dl.T @ z, dl.sum(0)
    dW = (dl @ V).T @ xs
    return g.ravel(), np.concatenate([dW.ravel(), dV.ravel(), dc])


@pytest.mark.parametrize("name", ["uniform", "double-paired"])
def test_split_matches_enumeration_of_every_batch(name):
    """ErrorSplit over the sampler's batches of 3 epochs equals the split computed directly
    from every batch's closed-form gradient (stored, then averaged in NumPy), for the
    discrepancy, the task and the objective at λ = 3."""
    rng = np.random.default_rng(1)
    ns, nt, d, k = 24, 10, 3, 4
    xs = rng.normal(size=(ns, d))
    xt = rng.normal(0.7, 1.3, size=(nt, d))
    ys = rng.integers(0, 3, size=ns)
    torch.manual_seed(0)
    f = torch.nn.Linear(d, 2, bias=False).double()
    c = torch.nn.Linear(2, 3).double()
    W, V, b = (p.detach().numpy() for p in (f.weight, c.weight, c.bias))
    g, t = _closed_form_grads(W, V, b, xs, ys, xt)
    sampler = psda.batch_sampler(name, xs, xt, k, seed=3, num_replicas=1, rank=0)
    batches, ends = [], []
    for e in range(3):
        sampler.set_epoch(e)
        batches += [list(bt) for bt in sampler]
        ends.append(len(batches))
    T = lambda a: torch.from_numpy(a)  # noqa: E731
    split = why.measure(f, c, T(xs), T(ys), T(xt), batches, _linear_mmd, T(g), T(t), ends)

    gb, tb = [], []
    for bt in batches:
        s, q = np.array(bt[:k]), np.array(bt[k:]) - ns
        gi, ti = _closed_form_grads(W, V, b, xs[s], ys[s], xt[q])
        gb.append(gi)
        tb.append(ti)
    gb, tb = np.array(gb), np.array(tb)
    assert split.B == len(batches) == 3 * (ns // k)

    def ref(vecs, full):
        total = np.mean(((vecs - full) ** 2).sum(1))
        mean = vecs.mean(0)
        bias2 = ((mean - full) ** 2).sum()
        r2 = full @ full
        return {"total": total / r2, "bias2": bias2 / r2, "variance": (total - bias2) / r2,
                "cosine": mean @ full / np.sqrt((mean @ mean) * r2)}

    lam = 3.0
    pad = np.zeros((len(batches), t.size - g.size))
    got = {"disc": split.disc(), "task": split.task(), "objective": split.objective(lam)}
    want = {"disc": ref(gb, g), "task": ref(tb, t),
            "objective": ref(tb + lam * np.hstack([gb, pad]), t + lam * np.concatenate([g, pad[0]]))}
    for part in want:
        for key, value in want[part].items():
            assert got[part][key] == pytest.approx(value, rel=1e-9, abs=1e-12), (part, key)
    epoch1 = gb[: ends[0]].mean(0) - g
    assert got["disc"]["bias2_epoch1"] == pytest.approx(epoch1 @ epoch1 / (g @ g), rel=1e-9)
    # every source row once per epoch (k divides n_s): the task's batch mean is exact
    assert got["task"]["bias2"] < 1e-20


def test_split_on_fixed_batches_has_no_variance_beyond_the_spread():
    """Two fixed batches with gradients g ± e: bias² 0, variance ‖e‖² / ‖g‖²."""
    g = torch.tensor([3.0, 4.0])
    s = why.ErrorSplit(g, torch.zeros(3))
    for sign in (1, -1, 1, -1):
        s.add(g + sign * torch.tensor([0.0, 1.0]), torch.zeros(3))
    d = s.disc()
    assert d["bias2"] == pytest.approx(0.0, abs=1e-15)
    assert d["variance"] == pytest.approx(1.0 / 25.0)
    assert d["cosine"] == pytest.approx(1.0)


# ---- the full-data gradient, blockwise ---------------------------------------------------

@pytest.mark.parametrize("block", [5, 8, 1000])
def test_full_mmd_grad_blockwise_equals_direct(block):
    """full_mmd_grad (blocks of rows, then one backward pass through the network) equals
    autograd through psda's rbf_mmd on the full sets, for blocks that do and do not divide n."""
    from psda.domainbed.algorithms import rbf_mmd

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)).double()
    xs = torch.randn(37, 4, dtype=torch.float64)
    xt = torch.randn(11, 4, dtype=torch.float64) + 0.5
    gammas = tuple(psda.DEFAULT_GAMMAS)
    got = why.full_mmd_grad(net, xs, xt, gammas, block=block)
    direct = torch.autograd.grad(rbf_mmd(net(xs), net(xt), gammas), list(net.parameters()))
    want = torch.cat([p.reshape(-1) for p in direct])
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-12)
    with torch.no_grad():
        value = why._full_mmd_value(net(xs), net(xt), gammas, block)
        assert value == pytest.approx(float(rbf_mmd(net(xs), net(xt), gammas)), rel=1e-9)


def test_vstat_bias_equals_enumeration_of_all_batches():
    """vstat_bias (closed form) equals the mean of rbf_mmd's batch gradient over every pair
    of k-subsets (source, target), minus the full-data gradient: explicit enumeration."""
    import itertools

    from psda.domainbed.algorithms import rbf_mmd

    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    xs = torch.randn(6, 3, dtype=torch.float64)
    xt = torch.randn(5, 3, dtype=torch.float64) * 0.8 + 0.3
    gammas, k = tuple(psda.DEFAULT_GAMMAS), 3
    params = list(net.parameters())

    def grad(a, b):
        return torch.cat([p.reshape(-1) for p in torch.autograd.grad(rbf_mmd(net(a), net(b), gammas), params)])

    subsets = [(list(s), list(t)) for s in itertools.combinations(range(6), k)
               for t in itertools.combinations(range(5), k)]
    mean = sum(grad(xs[s], xt[t]) for s, t in subsets) / len(subsets)
    want = mean - grad(xs, xt)
    got = why.vstat_bias(net, xs, xt, gammas, k, block=4)
    assert want.norm() > 1e-3 * grad(xs, xt).norm()  # a bias there is to find
    assert torch.allclose(got, want, rtol=1e-8, atol=1e-12)


# ---- the tool on real data, tiny ----------------------------------------------------------

def _domainbed_dir():
    d = os.environ.get("PSDA_DOMAINBED_DIR") or os.path.join(REPO, "..", "shared", "DomainBed")
    return os.path.abspath(d) if os.path.isdir(os.path.join(d, "domainbed")) else None


DOMAINBED = _domainbed_dir()


def _fashion_missing():
    """Why the tiny run cannot run here, or None."""
    try:
        from psda.domainbed.fashion import find_fashion_mnist
    except ImportError:
        return "psda.domainbed.fashion (RotatedFashionMNIST) is not in this tree"
    try:
        find_fashion_mnist(None)
    except FileNotFoundError:
        return "Fashion-MNIST not found (apt-get install dataset-fashion-mnist)"
    return None


@pytest.mark.skipif(not DOMAINBED, reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR or put one in "
                    "../shared/DomainBed")
@pytest.mark.skipif(_fashion_missing() is not None, reason=str(_fashion_missing()))
def test_tool_tiny_run(tmp_path, monkeypatch):
    """The whole tool at a tiny size: every variant and checkpoint recorded, the table and
    figure written, and the task's bias² 0 (each source row once per epoch)."""
    pytest.importorskip("torchvision")
    pytest.importorskip("matplotlib")
    monkeypatch.syspath_prepend(DOMAINBED)
    args = why.parse(["--out", str(tmp_path), "--env_size", "60", "--steps", "2", "--checkpoints", "0", "1", "2",
                      "--epochs", "1", "--ks", "8", "--k", "8", "--discrepancies", "mmd", "coral"])
    records = why.run(args)
    lines = [json.loads(x) for x in open(tmp_path / "why.jsonl")]
    assert lines[0]["meta"]["n_source"] == 5 * (60 - 12) and lines[0]["meta"]["n_target"] == 9
    assert len(lines) - 1 == len(records)
    have = {(r["discrepancy"], r["step"], r["label"]) for r in records}
    for dname in ("mmd", "coral"):
        for step in (0, 1, 2):
            assert (dname, step, "double-paired") in have and (dname, step, "uniform") in have
        assert (dname, 2, "double-paired (previous checkpoint features)") in have
        assert (dname, 1, "double-paired (step 0 features)") in have
    for r in records:
        assert r["batches"] == 240 // 8
        assert r["task"]["bias2"] < 1e-10, r["label"]
        assert r["disc"]["variance"] >= 0 and -1 <= r["disc"]["cosine"] <= 1
        assert ("vstat_bias2" in r["disc"]) == (r["discrepancy"] == "mmd")
        assert r["trajectory"] == "UDA_" + r["discrepancy"].upper()
    # the same initial weights on both trajectories: step 0's accuracies agree
    acc0 = {r["source_acc"] for r in records if r["step"] == 0}
    assert len(acc0) == 1
    assert (tmp_path / "why.png").stat().st_size > 10_000
    assert "| variant |" in (tmp_path / "why.md").read_text()
