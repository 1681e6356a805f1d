#!/usr/bin/env python3
"""Make the folder a device machine needs to run tools/gpu_protocol.sh (issue 27, item 7).

A device machine (a CUDA GPU lent for one call) has Python 3.12 with torch, torchvision,
timm, SciPy, pandas and matplotlib, but no network, no Go and no DomainBed. This script
fills one ignored folder (default ``device/``, listed in .gitignore) with what the
protocol needs there and nothing else:

- ``wheels/``: psda's binary wheel for the device's Python (built from this tree's sdist
  by tools/build-wheels.sh, or ``--wheel``), and the pure-Python wheels of the packages
  the run imports that the device lacks (:data:`CARRY`, pinned, from PyPI with
  ``pip download --no-deps``);
- ``DomainBed/``: a copy of the DomainBed checkout's ``domainbed`` package and its
  LICENSE (unmodified; the folder is ignored, never committed);
- ``fashion-mnist/``: Fashion-MNIST's four IDX files;
- ``SHA256SUMS`` (gpu_protocol.sh checks it first) and ``MANIFEST.json`` (the tree's
  commit, the DomainBed source, the pins).

Before it copies anything it checks that :data:`CARRY` is complete: a subprocess runs
one tiny real job of every row of the protocol, and ``analyze``, under an import hook
(:func:`probe`), and every package reached from psda, DomainBed or the runner through
packages the device lacks must be carried (:func:`missing`). At the end it prints the
device call (command and carry list) and checks the 64 MiB that a call may send.

Example (the psda test venv has torch, pip and the tree's extension)::

    ~/.cache/psda-venv/bin/python tools/device_bundle.py            # device/ for Python 3.12
    ~/.cache/psda-venv/bin/python tools/device_bundle.py --python-version 3.11 --out /tmp/rehearsal
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The device image's Python packages (/work/.library/device/KINDS.md, "Python packages
#: already there", read on a machine on 2026-11-17): what the run may import without
#: carrying it. Names as pip lists them.
DEVICE_PACKAGES = frozenset("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx humanize
huggingface-hub hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib
jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml
markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict
multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas
nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile
nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13
nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript opencv-python-headless
optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip
pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core
scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson
six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl
tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision
tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug
wheel wrapt xarray xxhash yarl zipp
""".split())

#: Carried as wheels (pure Python, pinned): DomainBed's datasets.py imports wilds at the
#: top (Camelyon17, FMoW; DomainBed pins wilds 2.0.0), and wilds' fmow_dataset imports pytz.
CARRY = {"wilds": "2.0.0", "pytz": "2026.6"}

#: Reached only through wilds/version.py's ``try: from outdated import check_outdated /
#: except ImportError``: an online check of wilds' version, which the device (no network)
#: cannot make; without them wilds skips it. Not carried.
OPTIONAL = {"outdated": "wilds/version.py: try/except ImportError (an online version check)",
            "littleutils": "imported by outdated only"}

#: Our own code: psda comes as its wheel, DomainBed as its copied package, the runner from the tree.
OURS = {"psda", "domainbed", "__main__", "fashion_protocol"}

#: What a device call may send, the working tree included (/work/.library/device/README.md).
CALL_LIMIT = 64 * 2 ** 20


def norm(name: str) -> str:
    """A distribution name normalised as PEP 503 does (pip's ``Foo_Bar`` = ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------ the import check


def missing(edges, module_dists, stdlib, device=DEVICE_PACKAGES, carried=CARRY, optional=OPTIONAL):
    """missing returns (needed, uncovered): the distributions reached from :data:`OURS`
    through the import graph ``edges`` ((importer's top-level module, imported top-level
    module) pairs) without passing through a device package (a package the device has
    brings its own dependencies), and those of them neither on the device nor carried
    nor optional. ``module_dists`` maps a top-level module to its distributions
    (importlib.metadata.packages_distributions()); a module outside ``stdlib``, OURS and
    every distribution is reported as ``?module`` (unknown, so not covered).

    Example:
        >>> missing({("psda", "numpy"), ("domainbed", "wilds"), ("wilds", "pytz"), ("torch", "sympy")},
        ...         {"numpy": ["numpy"], "wilds": ["wilds"], "pytz": ["pytz"], "torch": ["torch"],
        ...          "sympy": ["sympy"]}, stdlib=set(), device={"numpy", "torch"}, carried={"wilds": "2"},
        ...         optional={})
        (['numpy', 'pytz', 'wilds'], ['pytz'])
    """
    device = {norm(d) for d in device}
    covered = device | {norm(d) for d in carried} | {norm(d) for d in optional}
    out = _adjacency(edges)
    seen, stack, needed = set(OURS), list(OURS), set()
    while stack:
        mod = stack.pop()
        for dep in out.get(mod, ()):
            if dep in seen or dep in stdlib:
                continue
            seen.add(dep)
            dists = [norm(d) for d in module_dists.get(dep, [])]
            if not dists:
                if dep not in OURS:
                    needed.add("?" + dep)
                continue
            needed.update(dists)
            if not any(d in device for d in dists):  # a device package's own imports are the device's
                stack.append(dep)
    return sorted(needed), sorted(d for d in needed if d not in covered)


def _adjacency(edges):
    out = {}
    for a, b in edges:
        out.setdefault(a, set()).add(b)
    return out


_PROBE = r"""
import builtins, json, os, sys
edges = set()
_orig = builtins.__import__
def _hook(name, globals=None, locals=None, fromlist=(), level=0):
    mod = _orig(name, globals, locals, fromlist, level)  # an import that fails (optional, caught) is no edge
    if level == 0 and name:
        importer = ((globals or {}).get("__name__") or "?").split(".")[0]
        edges.add((importer, name.split(".")[0]))
    return mod
builtins.__import__ = _hook
root, run_args = sys.argv[1], sys.argv[2:]
sys.path.insert(0, os.path.join(root, "tools"))
import fashion_protocol
fashion_protocol.main(run_args)
fashion_protocol.main(["analyze"] + run_args[1:])
import importlib.metadata as md
with open(os.environ["PROBE_OUT"], "w") as f:
    json.dump({"edges": sorted(edges), "dists": md.packages_distributions(),
               "stdlib": sorted(sys.stdlib_module_names | set(sys.builtin_module_names))}, f)
"""


def probe(python: str, domainbed: str, data_dir: str, work: str) -> dict:
    """probe runs, in ``python`` with this tree's psda and ``domainbed`` first on the
    path, one real job of every protocol row (RotatedFashionMNIST, the CNN, 1 step, 200
    images per environment, test env 0) and ``analyze``, recording every ``import``
    statement; returns {"edges", "dists", "stdlib"} for :func:`missing`."""
    out = os.path.join(work, "probe.json")
    args = ["run", "--output_dir", os.path.join(work, "probe-run"), "--dataset", "RotatedFashionMNIST",
            "--data_dir", data_dir, "--steps", "1", "--checkpoint_freq", "1", "--test_envs", "0",
            "--n_hparams", "2", "--n_trials", "1", "--fixed", json.dumps({"psda_env_size": 200})]
    env = dict(os.environ, PROBE_OUT=out, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), domainbed]))
    res = subprocess.run([python, "-c", _PROBE, ROOT] + args, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit("device_bundle: the import probe (a 1-step job of every row) failed in %s:\n%s"
                         % (python, (res.stdout + res.stderr)[-4000:]))
    with open(out) as f:
        return json.load(f)


def check_imports(python: str, domainbed: str, data_dir: str) -> list:
    """check_imports runs :func:`probe` and exits naming the packages the device lacks
    and :data:`CARRY` does not hold; returns the needed distributions."""
    with tempfile.TemporaryDirectory() as work:
        p = probe(python, domainbed, data_dir, work)
    needed, uncovered = missing({tuple(e) for e in p["edges"]}, p["dists"], set(p["stdlib"]))
    if uncovered:
        raise SystemExit("device_bundle: the run imports %s, which the device lacks (KINDS.md) and CARRY does not "
                         "hold: add each to CARRY in tools/device_bundle.py with its version"
                         % ", ".join(uncovered))
    return needed


# ------------------------------------------------------------------ the bundle


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def psda_wheel(version: str, given: str | None, work: str) -> str:
    """The psda wheel for CPython ``version``: ``given`` (checked for its tag), else one
    built from this tree by tools/build-wheels.sh (needs Go)."""
    tag = "cp" + version.replace(".", "")
    if given is None:
        env = dict(os.environ, WHEEL_DIR=work)
        res = subprocess.run(["bash", os.path.join(ROOT, "tools", "build-wheels.sh"), version], env=env,
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit("device_bundle: tools/build-wheels.sh %s failed (it needs Go and CPython %s; or pass "
                             "--wheel):\n%s" % (version, version, (res.stdout + res.stderr)[-3000:]))
        given = next((os.path.join(work, f) for f in os.listdir(work) if f.endswith(".whl")), None)
    if given is None or not re.fullmatch(r"psda-[\w.]+-%s-%s-\w+(\.\w+)*x86_64\.whl" % (tag, tag),
                                         os.path.basename(given)):
        raise SystemExit("device_bundle: --wheel %s is not a psda wheel for CPython %s on x86_64 (want "
                         "psda-*-%s-%s-*x86_64.whl): build one with tools/build-wheels.sh %s"
                         % (given, version, tag, tag, version))
    return given


def tree_bytes() -> int:
    """Bytes of the working tree a device call sends: tracked and untracked-not-ignored files."""
    res = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True)
    return sum(os.path.getsize(os.path.join(ROOT, p)) for p in res.stdout.decode().split("\0")
               if p and os.path.isfile(os.path.join(ROOT, p)))


def build(args) -> None:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from psda.domainbed.fashion import FILES, find_fashion_mnist

    data = find_fashion_mnist(args.data_dir or None)
    if not os.path.isdir(os.path.join(args.domainbed, "domainbed")):
        raise SystemExit("device_bundle: --domainbed %s holds no domainbed/ package: pass the DomainBed checkout"
                         % args.domainbed)
    needed = [] if args.no_check else check_imports(args.probe_python, args.domainbed, data)
    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "wheels"))
    with tempfile.TemporaryDirectory() as work:
        whl = psda_wheel(args.python_version, args.wheel, work)
        shutil.copy(whl, os.path.join(out, "wheels"))
        res = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                              "--python-version", args.python_version, "--implementation", "cp",
                              "--platform", "manylinux2014_x86_64", "-d", os.path.join(out, "wheels")]
                             + ["%s==%s" % kv for kv in sorted(CARRY.items())], capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit("device_bundle: pip download of %s failed:\n%s" % (CARRY, res.stderr[-3000:]))
    shutil.copytree(os.path.join(args.domainbed, "domainbed"), os.path.join(out, "DomainBed", "domainbed"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if os.path.exists(os.path.join(args.domainbed, "LICENSE")):
        shutil.copy(os.path.join(args.domainbed, "LICENSE"), os.path.join(out, "DomainBed"))
    os.makedirs(os.path.join(out, "fashion-mnist"))
    for f in FILES:
        shutil.copy(os.path.join(data, f), os.path.join(out, "fashion-mnist"))
    with open(os.path.join(out, "PYTHON_VERSION"), "w") as f:
        f.write(args.python_version + "\n")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip())
    files = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)
    with open(os.path.join(out, "MANIFEST.json"), "w") as f:
        json.dump({"python_version": args.python_version, "psda_commit": commit, "psda_tree_dirty": dirty,
                   "psda_wheel": os.path.basename(whl), "domainbed_from": os.path.abspath(args.domainbed),
                   "fashion_mnist_from": data, "carried": CARRY, "not_carried_optional": OPTIONAL,
                   "imports_checked": not args.no_check, "needed_distributions": needed}, f, indent=1)
        f.write("\n")
    files.append("MANIFEST.json")
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        for p in files:
            f.write("%s  %s\n" % (sha256(os.path.join(out, p)), p))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    tree = tree_bytes()
    rel = os.path.relpath(out, ROOT)
    print("device_bundle: %s: %d files, %.1f MiB (the tree sends %.1f MiB more; a call sends at most %d MiB)"
          % (out, len(files) + 1, size / 2 ** 20, tree / 2 ** 20, CALL_LIMIT // 2 ** 20))
    if size + tree > CALL_LIMIT:
        raise SystemExit("device_bundle: bundle + tree = %.1f MiB > %d MiB: a device call cannot send it"
                         % ((size + tree) / 2 ** 20, CALL_LIMIT // 2 ** 20))
    if rel.startswith(".."):
        print("device_bundle: %s is outside the repository: a device call sends only the repository; make the "
              "bundle inside it (default device/)" % out)
    else:
        print("The device call (one call; about 8 minutes of jobs, see docs/evidence.md):\n"
              "  run(command=\"bash tools/gpu_protocol.sh %s\", carry=[\"%s\"], timeout_s=600)" % (rel, rel))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(ROOT, "device"), help="the bundle folder (default device/)")
    p.add_argument("--python-version", default="3.12", help="the device's CPython X.Y (default 3.12)")
    p.add_argument("--wheel", default=None, help="a psda wheel for that Python (default: build one, needs Go)")
    p.add_argument("--domainbed", default=os.path.join(ROOT, "..", "shared", "DomainBed"),
                   help="the DomainBed checkout (default ../shared/DomainBed)")
    p.add_argument("--data_dir", default="", help="a directory with Fashion-MNIST's IDX files (default Debian's)")
    p.add_argument("--probe-python", default=sys.executable,
                   help="the interpreter (with torch) that runs the import check (default this one)")
    p.add_argument("--no-check", action="store_true", help="skip the import check (not recommended)")
    return p


if __name__ == "__main__":
    build(parser().parse_args())
