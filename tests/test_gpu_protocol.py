"""The GPU protocol's bundle and script (tools/device_bundle.py, tools/gpu_protocol.sh).

- the import check's graph walk on a hand-made graph;
- the carried packages are exactly those the run imports and the device lacks: a real
  1-step job of every row under the import hook, then each carried package dropped in
  turn must show up as missing (so the check can fail);
- the CPU rehearsal (marked ``wheel``: it builds psda's wheel, minutes): a bundle for this
  Python, then tools/gpu_protocol.sh end to end at a tiny size, and its refusals (no GPU,
  a damaged bundle).
"""

import importlib.util
import json
import os
import subprocess
import sys
import tarfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOMAINBED = os.environ.get("PSDA_DOMAINBED_DIR") or os.path.join(REPO, "..", "shared", "DomainBed")
needs_domainbed = pytest.mark.skipif(not os.path.isdir(os.path.join(DOMAINBED, "domainbed")),
                                     reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "tools", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


db = load("device_bundle")


def fashion_dir():
    sys.path.insert(0, os.path.join(REPO, "python"))
    from psda.domainbed.fashion import find_fashion_mnist

    try:
        return find_fashion_mnist(None)
    except FileNotFoundError:
        pytest.skip("no Fashion-MNIST IDX files (apt-get install dataset-fashion-mnist)")


def test_missing_walks_only_through_packages_the_device_lacks():
    edges = {("psda", "numpy"), ("domainbed", "wilds"), ("wilds", "pytz"), ("wilds", "outdated"),
             ("outdated", "littleutils"), ("torch", "sympy"),  # the device's torch brings its own sympy
             ("__main__", "json"), ("psda", "psda"), ("domainbed", "mystery")}
    dists = {"numpy": ["numpy"], "wilds": ["wilds"], "pytz": ["pytz"], "outdated": ["outdated"],
             "littleutils": ["littleutils"], "torch": ["torch"], "sympy": ["sympy"]}
    needed, uncovered = db.missing(edges, dists, stdlib={"json"}, device={"NumPy", "torch"},
                                   carried={"wilds": "2.0.0"}, optional={"outdated": "why"})
    assert needed == ["?mystery", "littleutils", "numpy", "outdated", "pytz", "wilds"]
    assert uncovered == ["?mystery", "littleutils", "pytz"]
    # a device package's imports are not followed, whatever they are
    assert db.missing({("psda", "torch"), ("torch", "mystery")}, {"torch": ["torch"]}, set(),
                      device={"torch"}, carried={}, optional={}) == (["torch"], [])


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    if not os.path.isdir(os.path.join(DOMAINBED, "domainbed")):
        pytest.skip("no DomainBed checkout: set PSDA_DOMAINBED_DIR")
    pytest.importorskip("torch")
    p = db.probe(sys.executable, DOMAINBED, fashion_dir(), str(tmp_path_factory.mktemp("probe")))
    return {tuple(e) for e in p["edges"]}, p["dists"], set(p["stdlib"])


def test_carried_packages_are_exactly_what_the_device_lacks(probed):
    edges, dists, stdlib = probed
    needed, uncovered = db.missing(edges, dists, stdlib)
    assert uncovered == [], uncovered
    assert {"torch", "torchvision", "wilds", "pytz"} <= set(needed)
    for name in db.CARRY:  # each carried package is needed: without it the check fails
        carried = {k: v for k, v in db.CARRY.items() if k != name}
        assert db.missing(edges, dists, stdlib, carried=carried)[1] == [name]
    for name in db.OPTIONAL:  # and the optional ones are reached (so the note about them is about this run)
        assert name in needed


# ---------------------------------------------------------------- the CPU rehearsal

TINY = ["--steps", "2", "--checkpoint_freq", "1", "--test_envs", "0", "--n_hparams", "2", "--n_trials", "1",
        "--baselines", "ERM", "--algorithms", "UDA_MMD", "--samplers", "uniform", "double-paired",
        "--fixed", json.dumps({"psda_env_size": 200, "psda_refresh_steps": 1})]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    import shutil

    if shutil.which("go") is None:
        pytest.skip("Go is not installed: cannot build the wheel")
    if not os.path.isdir(os.path.join(DOMAINBED, "domainbed")):
        pytest.skip("no DomainBed checkout: set PSDA_DOMAINBED_DIR")
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("bundle") / "device"
    ver = "%d.%d" % sys.version_info[:2]
    res = subprocess.run([sys.executable, os.path.join(REPO, "tools", "device_bundle.py"), "--out", str(out),
                          "--python-version", ver, "--domainbed", DOMAINBED, "--data_dir", fashion_dir(), "--no-check"],
                         capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    return out


def rehearse(bundle, out, env=None, args=TINY):
    e = dict(os.environ, OUT=str(out), PSDA_GPU_PYTHON=sys.executable, PSDA_GPU_WORKERS="2",
             PSDA_GPU_BUDGET_S="600", **(env or {}))
    e.pop("PYTHONPATH", None)  # the script must find psda and DomainBed in the bundle alone
    return subprocess.run(["bash", os.path.join(REPO, "tools", "gpu_protocol.sh"), str(bundle)] + args, env=e,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.wheel
def test_rehearsal_on_cpu_runs_every_step(bundle, tmp_path):
    res = rehearse(bundle, tmp_path, {"PSDA_GPU_ALLOW_CPU": "1"})
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert sorted(os.listdir(tmp_path)) == ["accuracy_strip.png", "device.txt", "jobs.tar.gz", "records.jsonl",
                                           "run.log", "selected.jsonl", "tables.md"]
    device = (tmp_path / "device.txt").read_text()
    assert "psda from /" in device and device.split("psda from ")[1].split(",")[0].endswith("/site/psda")  # the wheel's
    assert "bundle: psda commit " in device
    recs = [json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert sorted(r["algorithm"] for r in recs) == ["ERM", "UDA_MMD", "UDA_MMD + Double-paired"]
    assert len({r["output_dir"] for r in recs}) == 3  # the queue gave each job to one worker
    assert "complete (test env, trial) units, every row and draw present: 1" in (tmp_path / "tables.md").read_text()
    with tarfile.open(tmp_path / "jobs.tar.gz") as t:
        names = t.getnames()
    assert sum(n.endswith("/done") for n in names) == 3 and "./worker-1.log" in names


@pytest.mark.wheel
def test_rehearsal_refuses_without_a_gpu_or_with_a_damaged_bundle(bundle, tmp_path):
    import torch

    if not torch.cuda.is_available():
        res = rehearse(bundle, tmp_path / "a")
        assert res.returncode == 2 and "torch sees no CUDA device" in res.stdout
    victim = bundle / "fashion-mnist" / "t10k-labels-idx1-ubyte.gz"
    good = victim.read_bytes()
    try:
        victim.write_bytes(good[:-1])
        res = rehearse(bundle, tmp_path / "b", {"PSDA_GPU_ALLOW_CPU": "1"})
        assert res.returncode == 2 and "does not match its SHA256SUMS" in res.stdout
    finally:
        victim.write_bytes(good)
