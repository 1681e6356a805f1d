"""Tests of tools/fashion_protocol.py's analysis on a small synthetic record set: the
selection (best training-domain validation over draws and checkpoints), the per-row
means and SEs, the paired differences and their tests (against scipy called directly and
a hand computation), the failure counts and the job order of the runner."""

import importlib.util
import json
import math
import os

import numpy as np
import pytest

scipy_stats = pytest.importorskip("scipy.stats")
pytest.importorskip("torch")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOMAINBED = os.environ.get("PSDA_DOMAINBED_DIR") or os.path.join(REPO, "..", "shared", "DomainBed")
needs_domainbed = pytest.mark.skipif(not os.path.isdir(os.path.join(DOMAINBED, "domainbed")),
                                     reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR")


def load_tool():
    spec = importlib.util.spec_from_file_location("fashion_protocol", os.path.join(REPO, "tools", "fashion_protocol.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fp = load_tool()


def test_mean_se_and_paired_stats_against_scipy():
    a = {u: v for u, v in enumerate([71.0, 64.5, 80.25, 55.0, 62.0, 90.0])}
    b = {u: v for u, v in enumerate([70.0, 66.5, 75.25, 45.0, 62.0, 84.0])}
    d = np.array([a[u] - b[u] for u in a])  # 1, -2, 5, 10, 0, 6
    st = fp.paired_stats(a, b)
    assert st["n"] == 6 and (st["wins"], st["losses"], st["ties"]) == (4, 1, 1)
    assert st["mean"] == pytest.approx(20 / 6)
    # SE by hand: sample sd (ddof 1) / sqrt(n)
    sd = math.sqrt(sum((x - 20 / 6) ** 2 for x in d) / 5)
    assert st["se"] == pytest.approx(sd / math.sqrt(6))
    assert st["t_p"] == pytest.approx(scipy_stats.ttest_1samp(d, 0).pvalue)
    assert st["w_p"] == pytest.approx(scipy_stats.wilcoxon(d).pvalue)
    m, se = fp.mean_se([1.0, 2.0, 4.0])
    assert m == pytest.approx(7 / 3) and se == pytest.approx(np.std([1, 2, 4], ddof=1) / math.sqrt(3))
    assert math.isnan(fp.mean_se([3.0])[1])


def _record(alg, env, trial, draw, step, val, test, n_envs=3):
    r = {"args": {"algorithm": alg, "test_envs": [env], "trial_seed": trial, "hparams_seed": draw,
                  "dataset": "RotatedFashionMNISTFlat"},
         "hparams": {"lr": 0.001 * draw}, "step": step}
    for i in range(n_envs):
        r["env%d_out_acc" % i] = (test - 0.5) if i == env else val  # the test env's out-split is never used
        r["env%d_in_acc" % i] = test if i == env else 0.99
    return r


def write_runs(root, table, unfinished=()):
    """table[(alg, env, trial, draw)] = [(step, val, test), ...]: one job directory each."""
    for n, (key, checkpoints) in enumerate(sorted(table.items())):
        d = os.path.join(root, "job%03d" % n)
        os.makedirs(d)
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            for step, val, test in checkpoints:
                f.write(json.dumps(_record(*key, step, val, test)) + "\n")
        if key not in unfinished:
            open(os.path.join(d, "done"), "w").close()


@needs_domainbed
def test_analysis_selects_and_compares_like_a_hand_computation(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(DOMAINBED)
    rng = np.random.default_rng(0)
    rows = ["ERM", "UDA_MMD", "UDA_MMD + Double-paired"]
    table, want = {}, {}
    for r_i, alg in enumerate(rows):
        for env in (0, 2):
            for trial in range(3):
                best = None
                for draw in (1, 2):
                    cps = [(s, float(rng.uniform(0.5, 0.9)), float(rng.uniform(0.2, 0.8))) for s in (0, 50, 100)]
                    table[(alg, env, trial, draw)] = cps
                    top = max(cps, key=lambda c: c[1])  # this run's checkpoint: best validation
                    if best is None or top[1] > best[1]:
                        best = top
                want[(alg, env, trial)] = 100 * best[2]
    # an unfinished job with a spectacular validation accuracy must be ignored
    table[("UDA_MMD", 0, 0, 3)] = [(0, 0.999, 0.01)]
    write_runs(str(tmp_path), table, unfinished={("UDA_MMD", 0, 0, 3)})
    args = fp.parser().parse_args(["analyze", "--output_dir", str(tmp_path), "--baselines", "ERM",
                                   "--algorithms", "UDA_MMD", "--samplers", "uniform", "double-paired",
                                   "--test_envs", "0", "2", "--n_trials", "3", "--steps", "100", "--n_hparams", "3"])
    runs, chosen = fp._load(str(tmp_path))
    assert {k: v["test_acc"] for k, v in chosen.items()} == pytest.approx(want)
    fp.analyze(args)
    text = (tmp_path / "tables.md").read_text()
    # paired difference Double-paired − uniform over the 6 (env, trial) units, by hand and with scipy
    d = np.array([want[("UDA_MMD + Double-paired", e, t)] - want[("UDA_MMD", e, t)] for e in (0, 2) for t in range(3)])
    se = d.std(ddof=1) / math.sqrt(len(d))
    line = next(x for x in text.splitlines() if x.startswith("| UDA_MMD + Double-paired − UDA_MMD |"))
    assert "| 6 | %.1f ± %.1f | %.3g | %.3g |" % (d.mean(), se, scipy_stats.ttest_1samp(d, 0).pvalue,
                                                 scipy_stats.wilcoxon(d).pvalue) in line
    assert "%d / %d / 0" % ((d > 0).sum(), (d < 0).sum()) in line
    # the average column: mean ± SE over trials of the per-trial average over envs
    avg = [np.mean([want[("ERM", e, t)] for e in (0, 2)]) for t in range(3)]
    erm = next(x for x in text.splitlines() if x.startswith("| ERM |"))
    assert "| %.1f ± %.1f | 3 |" % (np.mean(avg), np.std(avg, ddof=1) / math.sqrt(3)) in erm
    # failures: selected runs below ERM's of the same unit
    below = sum(want[("UDA_MMD", e, t)] < want[("ERM", e, t)] for e in (0, 2) for t in range(3))
    far = sum(want[("UDA_MMD", e, t)] < want[("ERM", e, t)] - 5 for e in (0, 2) for t in range(3))
    assert "| UDA_MMD | 6 | %d | %d |" % (below, far) in text
    sel = [json.loads(x) for x in (tmp_path / "selected.jsonl").read_text().splitlines()]
    assert len(sel) == 18 and (tmp_path / "accuracy_strip.png").exists()


@needs_domainbed
def test_exact_validation_ties_follow_the_rule_not_float_rounding(tmp_path, monkeypatch):
    # The GPU run's unit (0°, trial 0), UDA_MMD: draw 3 at step 2100 and draw 1 at step 2700
    # both have 823 of 1,000 validation images right (4.115 / 5), but np.mean gives
    # 0.8230000000000001 and 0.8229999999999998. The rules are "first max" over checkpoints
    # and "the lowest draw" over draws, so draw 1's first 0.823 checkpoint must win.
    monkeypatch.syspath_prepend(DOMAINBED)
    lo, hi = [0.8, 0.805, 0.86, 0.82, 0.83], [0.86, 0.86, 0.775, 0.785, 0.835]
    assert np.mean(hi) > np.mean(lo)  # the float noise this test is about

    def job(name, draw, checkpoints):
        os.makedirs(tmp_path / name)
        with open(tmp_path / name / "results.jsonl", "w") as f:
            for step, outs, test in checkpoints:
                r = {"args": {"algorithm": "UDA_MMD", "test_envs": [0], "trial_seed": 0, "hparams_seed": draw},
                     "hparams": {}, "step": step, "env0_out_acc": 0.0, "env0_in_acc": test}
                r.update({"env%d_out_acc" % (i + 1): v for i, v in enumerate(outs)})
                r.update({"env%d_in_acc" % (i + 1): 0.9 for i in range(5)})
                f.write(json.dumps(r) + "\n")
        open(tmp_path / name / "done", "w").close()

    job("a", 3, [(2100, hi, 0.6969)])
    job("b", 1, [(2400, lo, 0.7438), (2700, hi, 0.5)])  # the first of two equal checkpoints
    runs, chosen = fp._load(str(tmp_path))
    assert runs[("UDA_MMD", 0, 0, 1)]["step"] == 2400
    assert chosen[("UDA_MMD", 0, 0)]["hparams_seed"] == 1
    assert chosen[("UDA_MMD", 0, 0)]["test_acc"] == pytest.approx(74.38)


@needs_domainbed
def test_job_order_keeps_whole_units_and_same_seeds_per_sampler(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(DOMAINBED)
    args = fp.parser().parse_args(["list", "--output_dir", str(tmp_path), "--n_trials", "2", "--n_hparams", "3",
                                   "--test_envs", "0", "5"])
    jobs = fp.list_jobs(args)
    keys = [(j.train_args["trial_seed"], j.train_args["test_envs"][0], j.train_args["hparams_seed"]) for j in jobs]
    assert len(jobs) == 2 * 2 * 2 * 8 and keys == sorted(keys, key=lambda k: (k[0], [0, 5].index(k[1]), k[2]))
    for unit in set(keys):  # the three samplers of an algorithm share the torch seed and the draw
        seeds = {}
        for j in jobs:
            ta = j.train_args
            if (ta["trial_seed"], ta["test_envs"][0], ta["hparams_seed"]) == unit:
                seeds.setdefault(ta["algorithm"].split(" + ")[0], set()).add(ta["seed"])
        assert all(len(s) == 1 for s in seeds.values()) and len(seeds) == 4
    # two shards: interleaved, disjoint, together all
    a, b = jobs[0::2], jobs[1::2]
    assert {j.output_dir for j in a}.isdisjoint({j.output_dir for j in b}) and len(a) + len(b) == len(jobs)


def test_claim_gives_each_job_to_one_process(tmp_path):
    class Job:
        output_dir = str(tmp_path / "run" / "abc123")

    assert fp.claim(str(tmp_path), Job) and not fp.claim(str(tmp_path), Job)
    assert (tmp_path / "abc123").read_text() == "%d\n" % os.getpid()


def test_longest_job_reads_every_workers_records(tmp_path):
    assert fp.longest_job(str(tmp_path)) == 0.0
    (tmp_path / "records-shard0.jsonl").write_text(json.dumps({"wall_s": 12.5}) + "\n")
    (tmp_path / "records-shard3.jsonl").write_text(json.dumps({"wall_s": 40.0}) + "\n" + json.dumps({"wall_s": 7}) + "\n")
    assert fp.longest_job(str(tmp_path)) == 40.0


@needs_domainbed
def test_run_starts_no_job_that_would_end_after_the_deadline(tmp_path, monkeypatch, capsys):
    import time

    monkeypatch.syspath_prepend(DOMAINBED)
    # a finished job took 100 s: with 60 s left, the next (estimated 125 s) must not start
    (tmp_path / "records-shard1.jsonl").write_text(json.dumps({"wall_s": 100.0}) + "\n")
    fp.main(["run", "--output_dir", str(tmp_path), "--queue", "t1", "--deadline", str(time.time() + 60),
             "--test_envs", "0", "--n_trials", "1", "--n_hparams", "2"])
    assert "stops at the deadline" in capsys.readouterr().out
    assert os.listdir(tmp_path / "claims-t1") == []  # nothing claimed, so nothing dropped for the other workers
    assert sorted(os.listdir(tmp_path)) == ["claims-t1", "records-shard0.jsonl", "records-shard1.jsonl"]
    with pytest.raises(SystemExit, match="--queue"):
        fp.main(["run", "--output_dir", str(tmp_path), "--queue", "../x"])
