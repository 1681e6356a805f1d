"""Tests of psda.variance (error estimators), the comparison samplers it drives and `psda variance`.

The estimators are checked against the definitions evaluated literally on tiny
data: D_hat from batch means, explicit d x d unbiased covariances, and RKHS
norms as double loops over weighted kernel values.
"""

import io
import os
import sys
from contextlib import redirect_stdout

import numpy as np
import pytest

try:
    import psda  # noqa: F401
except ImportError:  # running from a checkout without an install
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

import psda
from psda.variance import DiscrepancyError, expected_error

GAMMAS = (0.2, 1.0, 5.0)


def data(n_s, n_t, d, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n_s, d)), 1.5 * rng.standard_normal((n_t, d)) + 0.4


def random_batches(n_s, n_t, sizes, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for k in sizes:
        src = rng.choice(n_s, k, replace=False)
        tgt = rng.choice(n_t, k, replace=False) + n_s
        out.append(src.tolist() + tgt.tolist())
    return out


def rbf(x, y):
    return sum(np.exp(-g * np.sum((x - y) ** 2)) for g in GAMMAS)


def brute_error(s, t, batch, discrepancy, kernel):
    """||D_hat - D||^2 straight from the definitions."""
    m = len(batch) // 2
    bs, bt = s[batch[:m]], t[np.array(batch[m:]) - len(s)]
    if discrepancy == "coral":
        d_full = np.cov(s, rowvar=False) - np.cov(t, rowvar=False)
        d_hat = np.cov(bs, rowvar=False) - np.cov(bt, rowvar=False)
        return float(np.sum((np.atleast_2d(d_hat) - np.atleast_2d(d_full)) ** 2))
    if kernel == "linear":
        v = (bs.mean(0) - bt.mean(0)) - (s.mean(0) - t.mean(0))
        return float(v @ v)
    # D_hat - D = sum_m c_m phi(z_m) with the weights below.
    terms = ([(1 / m, z) for z in bs] + [(-1 / m, z) for z in bt]
             + [(-1 / len(s), z) for z in s] + [(1 / len(t), z) for z in t])
    return float(sum(c1 * c2 * rbf(z1, z2) for c1, z1 in terms for c2, z2 in terms))


CASES = {
    "mmd linear": ("mmd", "linear", 3, [2, 3, 3, 1, 4]),
    "mmd rbf": ("mmd", "rbf", 2, [2, 2, 3, 1]),
    "coral direct (d <= k)": ("coral", "linear", 2, [2, 3, 4, 3]),
    "coral small d > k": ("coral", "linear", 4, [2, 3, 2]),
    "coral Gram route (d*d > 64, d > k)": ("coral", "linear", 9, [2, 3, 4, 3]),
}


@pytest.mark.parametrize("name", CASES.keys())
@pytest.mark.parametrize("block", [1 << 22, 1])
def test_batch_errors_match_definition(name, block):
    discrepancy, kernel, d, sizes = CASES[name]
    s, t = data(7, 6, d)
    batches = random_batches(7, 6, sizes)
    ev = DiscrepancyError(s, t, discrepancy=discrepancy, kernel=kernel, gammas=GAMMAS,
                          block_elems=block)
    got = ev.batch_errors(batches)
    want = [brute_error(s, t, b, discrepancy, kernel) for b in batches]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_full_batch_has_zero_mmd_error():
    s, t = data(6, 6, 3)
    ev = DiscrepancyError(s, t, kernel="linear")
    assert ev.batch_errors([list(range(12))])[0] == pytest.approx(0.0, abs=1e-24)


def test_expected_error_averages_over_epochs():
    s, t = data(8, 8, 2)
    batches = random_batches(8, 8, [2, 2, 2])
    est = expected_error(s, t, batches, epochs=5, kernel="linear")
    want = np.mean([brute_error(s, t, b, "mmd", "linear") for b in batches])
    assert est.mean == pytest.approx(want)
    assert est.n_batches == 15 and est.epochs == 5
    assert est.stderr == pytest.approx(0.0, abs=1e-12)   # the same batches every epoch


@pytest.mark.parametrize("batch,msg", [
    ([0, 1, 8], "length 3"),
    ([0, 1, 2, 3], "target indices"),
    ([-1, 9], "source indices"),
])
def test_batch_errors_reject_bad_batches(batch, msg):
    s, t = data(8, 8, 2)
    with pytest.raises(ValueError, match=msg):
        DiscrepancyError(s, t).batch_errors([batch])


@pytest.mark.parametrize("kwargs,msg", [
    (dict(discrepancy="wasserstein"), "discrepancy"),
    (dict(kernel="poly"), "kernel"),
    (dict(kernel="rbf", gammas=()), "gammas"),
])
def test_discrepancy_error_rejects_bad_config(kwargs, msg):
    s, t = data(8, 8, 2)
    with pytest.raises(ValueError, match=msg):
        DiscrepancyError(s, t, **kwargs)


# ---------------------------------------------------------------------------
# Samplers


def UniformBatchSampler(n_s, n_t, k, *, seed=0):
    return psda.batch_sampler("uniform", np.zeros((n_s, 1)), np.zeros((n_t, 1)), k, seed=seed, num_replicas=1, rank=0)


def KMeansPPBatchSampler(s, t, k, **kw):
    return psda.batch_sampler("kmeans++", s, t, k, num_replicas=1, rank=0, **kw)


def StratifiedBatchSampler(s, t, k, **kw):
    return psda.batch_sampler("vardass", s, t, k, num_replicas=1, rank=0, **kw)


def split(batch, n_s):
    m = len(batch) // 2
    return np.array(batch[:m]), np.array(batch[m:]) - n_s


@pytest.mark.parametrize("n_s,n_t,k", [(12, 12, 3), (12, 8, 4), (7, 15, 5), (10, 10, 1)])
def test_uniform_sampler_covers_each_index_once_per_epoch(n_s, n_t, k):
    sampler = UniformBatchSampler(n_s, n_t, k, seed=3)
    state = np.random.get_state()
    epochs = [list(sampler) for _ in range(3)]
    assert np.all(np.random.get_state()[1] == state[1])     # global RNG untouched
    P = max(n_s, n_t)
    for batches in epochs:
        assert len(batches) == len(sampler) == P // k
        src = np.concatenate([split(b, n_s)[0] for b in batches])
        tgt = np.concatenate([split(b, n_s)[1] for b in batches])
        assert src.min() >= 0 and src.max() < n_s and tgt.min() >= 0 and tgt.max() < n_t
        big = src if n_s >= n_t else tgt
        assert len(np.unique(big)) == len(big)              # larger side: each index at most once
        if P % k == 0:
            assert len(big) == P                            # ... and exactly once
    assert epochs[0] != epochs[1]                           # the epoch advances by itself
    sampler.set_epoch(0)
    assert list(sampler) == epochs[0]
    assert list(UniformBatchSampler(n_s, n_t, k, seed=3)) == epochs[0]


def test_kmeanspp_batches_valid():
    s, t = data(40, 30, 3)
    sampler = KMeansPPBatchSampler(s, t, 8, seed=1, chunk=2)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 40 // 8
    for b in batches:
        assert len(b) == 16 and all(isinstance(v, int) for v in b)
        src, tgt = split(b, 40)
        assert len(set(src)) == 8 and len(set(tgt)) == 8
        assert src.min() >= 0 and src.max() < 40 and tgt.min() >= 0 and tgt.max() < 30


def test_kmeanspp_prefers_far_points():
    # Two tight clusters far apart: D^2 seeding's second pick lands in the other
    # cluster with probability ~1 - 1e-9; uniform sampling would do so half the time.
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 0.01, (50, 2)), rng.normal(100, 0.01, (50, 2))])
    sampler = KMeansPPBatchSampler(x, x, 2, seed=2)
    for _ in range(3):
        for b in sampler:
            src, tgt = split(b, 100)
            assert (src[0] < 50) != (src[1] < 50)
            assert (tgt[0] < 50) != (tgt[1] < 50)


def test_kmeanspp_handles_duplicate_rows():
    x = np.zeros((6, 2))
    batches = list(KMeansPPBatchSampler(x, x, 4, seed=0))
    for b in batches:
        src, tgt = split(b, 6)
        assert len(set(src)) == 4 and len(set(tgt)) == 4


def test_kmeanspp_rejects_batch_larger_than_smaller_domain():
    s, t = data(10, 4, 2)
    with pytest.raises(ValueError, match="batch_size = 5"):
        KMeansPPBatchSampler(s, t, 5)


@pytest.mark.parametrize("n_s,n_t,k", [(40, 40, 4), (37, 29, 5), (20, 33, 3), (16, 16, 16)])
def test_stratified_one_row_per_stratum(n_s, n_t, k):
    s, t = data(n_s, n_t, 3)
    sampler = StratifiedBatchSampler(s, t, k, seed=4)
    for strata, n in ((sampler.strata_s, n_s), (sampler.strata_t, n_t)):
        assert len(strata) == k
        sizes = [len(x) for x in strata]
        assert max(sizes) - min(sizes) <= 1
        assert sorted(np.concatenate(strata).tolist()) == list(range(n))
    which_s = np.empty(n_s, int)
    for i, st in enumerate(sampler.strata_s):
        which_s[st] = i
    batches = list(sampler)
    assert len(batches) == len(sampler) == max(n_s, n_t) // k
    src = []
    for b in batches:
        bs, bt = split(b, n_s)
        assert sorted(which_s[bs].tolist()) == list(range(k))
        assert bt.min() >= 0 and bt.max() < n_t
        src += bs.tolist()
    if n_s >= n_t:
        assert len(set(src)) == len(src)


def test_stratified_strata_are_spatial():
    # Two far clusters and k = 2: the first cut separates them.
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 1, (30, 2)), rng.normal(50, 1, (30, 2))])
    sampler = StratifiedBatchSampler(x, x, 2)
    assert sorted(sorted(st.tolist()) for st in sampler.strata_s) == [
        list(range(30)), list(range(30, 60))]


class _M:
    pairs = np.array([[0, 1], [1, 0], [2, 2], [3, 4], [4, 3]])
    quads = np.array([[0, 3], [1, 2]])
    singles = np.array([4])
    stage1_cost = stage2_cost = stage2_bound = 0.0


def test_matching_sampler_layout():
    """benchmarks/scipy_psda.batch_sampler serves a given matching with psda's schedule (ref-* of psda variance)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    pytest.importorskip("scipy")
    from scipy_psda import batch_sampler as MatchingBatchSampler

    m = _M()
    sampler = MatchingBatchSampler(m, 5, 5, 2, stages=2, seed=0)
    batches = list(sampler)
    assert len(batches) == 2
    quads = {tuple(sorted(map(tuple, m.pairs[q]))) for q in m.quads}
    for b in batches:
        src, tgt = split(b, 5)
        assert tuple(sorted(zip(src.tolist(), tgt.tolist()))) in quads
    singles = list(MatchingBatchSampler(m, 5, 5, 1, stages=1, seed=0))
    got = sorted(tuple(split(b, 5)[i][0] for i in (0, 1)) for b in singles)
    assert got == sorted(map(tuple, m.pairs.tolist()))


# ---------------------------------------------------------------------------
# The command line


def run_cli(*argv):
    from psda.cli import main
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def parse_table(text, title):
    lines = text.splitlines()
    i = lines.index(title)
    ks = [int(h[2:]) for h in lines[i + 1].split()[1:]]
    rows = {}
    for line in lines[i + 2:]:
        if not line.strip():
            break
        name, *cells = line.split()
        rows[name] = dict(zip(ks, cells))
    return rows


SMALL = ["variance", "--n-source", "400", "--n-target", "300", "--k", "2,8", "--epochs", "3",
         "--no-progress"]


def test_cli_baselines_table():
    code, out = run_cli(*SMALL, "--methods", "uniform,kmeans++,vardass", "--dim", "3",
                        "--data", "mixture")
    assert code == 0
    err = parse_table(out, "error (mean over batches)")
    assert set(err) == {"uniform", "kmeans++", "vardass"}
    for k in (2, 8):
        # Uniform: roughly E||mean_s - mean_t - delta||^2 ~ tr(Cov_s + Cov_t)/k.
        assert 0 < float(err["uniform"][k]) < 20.0 / k
    ratio = parse_table(out, "ratio to uniform")
    assert ratio["uniform"] == {2: "1.00", 8: "1.00"}


def test_cli_rejects_unknown_method(capsys):
    with pytest.raises(SystemExit):
        run_cli("variance", "--methods", "uniform,bogus")
    assert "bogus" in capsys.readouterr().err


def test_cli_reference_methods_reduce_error():
    pytest.importorskip("scipy")
    code, out = run_cli(*SMALL, "--methods", "uniform,ref-paired,ref-double-paired")
    assert code == 0
    err = parse_table(out, "error (mean over batches)")
    for k in (2, 8):
        u = float(err["uniform"][k])
        assert float(err["ref-paired"][k]) < u / 10
        assert float(err["ref-double-paired"][k]) < float(err["ref-paired"][k])


def _native_available():
    try:
        from psda import _native  # noqa: F401
    except Exception:   # not built yet: ImportError, OSError from the loader
        return False
    return True


@pytest.mark.skipif(not _native_available(), reason="psda's native core is not built")
def test_cli_psda_samplers_end_to_end():
    code, out = run_cli(*SMALL, "--methods", "uniform,paired,double-paired")
    assert code == 0
    err = parse_table(out, "error (mean over batches)")
    for k in (2, 8):
        u = float(err["uniform"][k])
        assert float(err["paired"][k]) < u / 10
        assert float(err["double-paired"][k]) < float(err["paired"][k])


def test_cli_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "variance.png"
    code, out = run_cli(*SMALL, "--methods", "uniform,vardass", "--plot", str(path))
    assert code == 0 and "plot written" in out
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not _native_available(), reason="psda's native core is not built")
def test_cli_plot_names_and_colours_every_row(tmp_path):
    """Each --imbalance row of a PSDA method is named "PSDA ..." with its choice, and eleven rows get
    eleven colours (matplotlib's default cycle has ten)."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    plt.close("all")
    code, out = run_cli(*SMALL, "--k", "4", "--epochs", "1", "--methods",
                        "uniform,kmeans++,vardass,ordered,random-pairs,paired,double-paired",
                        "--imbalance", "cost", "random", "systematic", "--plot", str(tmp_path / "v.png"))
    assert code == 0, out
    ax = plt.gcf().axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "PSDA Double-paired (systematic)" in labels and "PSDA Paired" in labels, labels
    assert not [x for x in labels if "paired/" in x], labels
    lines = [c[0] for c in ax.containers]  # each errorbar's data line
    assert len(lines) == 11
    assert len({tuple(l.get_color()) if not isinstance(l.get_color(), str) else l.get_color()
                for l in lines}) == 11
    plt.close("all")


@pytest.mark.skipif(not _native_available(), reason="psda's native core is not built")
def test_cli_plot_draws_the_random_pairs_control_as_a_comparison(tmp_path):
    """random-pairs is the control for PSDA's optimisation, not PSDA: its line is a comparison
    sampler's (thin, dashed) under its registry name, while PSDA's rows keep the thick solid line."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    plt.close("all")
    code, out = run_cli(*SMALL, "--k", "4", "--epochs", "1", "--methods", "uniform,random-pairs,paired",
                        "--plot", str(tmp_path / "v.png"))
    assert code == 0, out
    ax = plt.gcf().axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    lines = dict(zip(labels, (c[0] for c in ax.containers)))
    assert set(labels) == {"Uniform", "Random pairs", "PSDA Paired"}, labels
    assert lines["Random pairs"].get_linestyle() == lines["Uniform"].get_linestyle() == "--"
    assert lines["Random pairs"].get_linewidth() < lines["PSDA Paired"].get_linewidth()
    plt.close("all")


@pytest.mark.skipif(not _native_available(), reason="psda's native core is not built")
def test_bench_smoke():
    pytest.importorskip("scipy")
    from psda.cli import _load_benchmark_module
    if _load_benchmark_module("bench") is None:
        pytest.skip("not a source checkout")
    code, out = run_cli("bench", "--n", "60", "--d", "3", "--cases", "mmd-linear,coral",
                        "--k", "4", "--imbalanced", "on")
    assert code == 0, out
    assert "all objectives agree" in out
    assert out.count("stage1 objective") == 3


def test_cli_all_methods_have_rows_and_setup_times():
    code, out = run_cli("variance", "--n-source", "120", "--n-target", "100", "--k", "4", "--epochs", "5",
                        "--methods", "all", "--no-progress")
    assert code == 0
    err = parse_table(out, "error (mean over batches)")
    assert set(err) == set(psda.SAMPLERS)
    setup = parse_table(out, "set-up seconds (strata, partition, eigenvectors or matching)")
    assert all(float(setup[m][4]) >= 0 for m in psda.SAMPLERS)


@pytest.mark.skipif(not _native_available(), reason="psda's native core is not built")
def test_cli_imbalance_splits_bias_and_variance():
    code, out = run_cli("variance", "--n-source", "120", "--n-target", "90", "--k", "8", "--epochs", "40",
                        "--plans", "40", "--methods", "double-paired", "--imbalance", "cost", "random",
                        "--no-progress")
    assert code == 0
    err = parse_table(out, "error (mean over batches)")
    bias = parse_table(out, "bias^2")
    var = parse_table(out, "variance (error - bias^2)")
    assert set(bias) == {"double-paired", "double-paired/random"}
    for row in bias:
        assert float(err[row][8]) == pytest.approx(float(bias[row][8]) + float(var[row][8]), rel=1e-2, abs=1e-6)
    # The paper's extra uses bias the estimate; drawn ones do not (over 40 plans), though each plan errs more.
    assert float(bias["double-paired"][8]) > 5 * abs(float(bias["double-paired/random"][8]))
    assert float(err["double-paired/random"][8]) > float(err["double-paired"][8])


def test_cli_rejects_unknown_imbalance(capsys):
    with pytest.raises(SystemExit):
        run_cli("variance", "--imbalance", "costly")
    assert "--imbalance" in capsys.readouterr().err


_SETUP_SPY = """
import sys
import psda.cli as cli
seen = []
build = cli._sampler
def spy(*args, **kwargs):
    seen.append(sorted(m for m in ("torch", "psda.samplers.simple") if m not in sys.modules))
    return build(*args, **kwargs)
cli._sampler = spy
assert cli.main(["variance", "--n-source", "40", "--n-target", "30", "--k", "4", "--epochs", "1",
                 "--methods", "uniform", "--no-progress"]) == 0
print("NOT IMPORTED BEFORE THE FIRST SET-UP:", seen[0])
"""


def test_cli_setup_time_excludes_imports():
    # README and docs/samplers.md report uniform's set-up time as none; the first sampler
    # built must not pay for importing torch and the sampler modules (1.7 s here).
    pytest.importorskip("torch")
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(psda.__file__)), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _SETUP_SPY], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "NOT IMPORTED BEFORE THE FIRST SET-UP: []" in out.stdout, out.stdout
