#!/usr/bin/env python3
"""Smoke test of an installed psda wheel: match, the sampler, a DataLoader.

Two ways to run it:

``smoke_wheel.py WHEEL [--python PY] [--torch-site DIR]``
    Creates a fresh venv of PY (default: this interpreter), installs WHEEL
    there with pip (NumPy, its one dependency, from the index or pip's cache),
    and runs the checks below in that venv with every directory holding a
    ``go`` command removed from PATH, from a temporary directory, so that
    neither a Go toolchain nor a source tree can stand in for the wheel.
    ``--torch-site`` adds a site-packages directory that holds a real torch
    to the venv's path, *after* the venv's own site-packages (a ``.pth``
    line: the ``.pth`` files in that directory, such as an editable psda's,
    are not run), so the DataLoader check runs against the installed
    wheel without downloading torch again.

``smoke_wheel.py --check [--require-torch]``
    Runs the checks in this interpreter (cibuildwheel's test-command). The
    DataLoader check runs when torch is importable and is skipped with a
    message otherwise, unless ``--require-torch``.

Every check compares against an independent answer (brute force, or the
matching the sampler reports), so a broken wheel fails rather than passes.

Example:
    tools/build-wheels.sh 3.12
    python3.12 tools/smoke_wheel.py dist/psda-*-cp312-*.whl
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from itertools import permutations
from pathlib import Path


def check_match_and_core() -> None:
    """psda.match and linear_sum_assignment against brute force."""
    import importlib.metadata

    import numpy as np

    import psda
    from psda import _native

    assert _native.version() == importlib.metadata.version("psda"), (_native.version(), importlib.metadata.version("psda"))

    rng = np.random.default_rng(0)
    c = np.round(rng.uniform(-5, 5, size=(6, 6)), 1)
    rows, cols = psda.linear_sum_assignment(c)
    best = min(sum(c[i, p[i]] for i in range(6)) for p in permutations(range(6)))
    assert abs(c[rows, cols].sum() - best) < 1e-9, (c[rows, cols].sum(), best)

    src, tgt = rng.normal(size=(40, 5)), rng.normal(0.5, 1.0, size=(30, 5))
    m = psda.match(src, tgt, batch_size=8)
    # Stage 1: every source example (the larger side) exactly once, every
    # target example floor or ceil of 40/30 times.
    assert sorted(m.pairs[:, 0].tolist()) == list(range(40)), m.pairs
    counts = np.bincount(m.pairs[:, 1], minlength=30)
    assert counts.min() == 1 and counts.max() == 2, counts
    # Stage 2: the quadruplets partition the 40 pairs.
    assert m.quads.shape == (20, 2) and sorted(m.quads.ravel().tolist()) == list(range(40))
    assert m.stage2_bound <= m.stage2_cost + 1e-9
    # The Go core is deterministic: the same input gives the same matching.
    assert psda.match(src, tgt, batch_size=8).fingerprint == m.fingerprint
    with_error = False
    try:
        psda.match(src, tgt, batch_size=8, kernel="cosine")
    except ValueError as e:
        with_error = "kernel" in str(e)
    assert with_error, "an invalid kernel did not raise a ValueError naming it"
    print("smoke: match and linear_sum_assignment ok (core %s)" % _native.version())


def check_sampler():
    """PairedBatchSampler's epoch against its own matching (no torch needed)."""
    import numpy as np

    import psda

    rng = np.random.default_rng(1)
    src, tgt = rng.normal(size=(50, 4)), rng.normal(0.5, 1.0, size=(36, 4))
    k = 8
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=k, seed=3)
    pairs = {tuple(p) for p in sampler.matching.pairs.tolist()}
    batches = list(sampler)
    assert len(batches) == len(sampler) == 50 // k, (len(batches), len(sampler))
    seen = []
    for b in batches:
        assert len(b) == 2 * k, b
        s, t = b[:k], [i - 50 for i in b[k:]]
        assert all(0 <= i < 50 for i in s) and all(0 <= j < 36 for j in t), b
        assert all((i, j) in pairs for i, j in zip(s, t)), b
        seen += s
    assert len(seen) == len(set(seen)) == len(batches) * k  # no source twice in an epoch
    assert list(sampler) != batches  # the next epoch is shuffled anew
    print("smoke: PairedBatchSampler ok (%d batches of %d + %d)" % (len(batches), k, k))
    return src, tgt, sampler


def check_dataloader(src, tgt) -> None:
    """A torch DataLoader, with and without a worker process, over the sampler."""
    import numpy as np
    import torch
    from torch.utils.data import ConcatDataset, DataLoader, TensorDataset

    import psda

    k = 8
    ds = ConcatDataset([TensorDataset(torch.tensor(src)), TensorDataset(torch.tensor(tgt))])
    sampler = psda.PairedBatchSampler(src, tgt, batch_size=k, seed=5)
    assert isinstance(sampler, torch.utils.data.Sampler)
    pairs = {tuple(p) for p in sampler.matching.pairs.tolist()}
    for workers in (0, 1):
        loader = DataLoader(ds, batch_sampler=sampler, num_workers=workers)
        n = 0
        for (x,) in loader:
            assert x.shape == (2 * k, src.shape[1]), x.shape
            # Recover the indices from the rows: row m of the source half is
            # matched with row m of the target half.
            s = [int(np.flatnonzero((src == r).all(1))[0]) for r in x[:k].numpy()]
            t = [int(np.flatnonzero((tgt == r).all(1))[0]) for r in x[k:].numpy()]
            assert all((i, j) in pairs for i, j in zip(s, t)), (s, t)
            n += 1
        assert n == len(loader) == len(sampler), (n, len(loader))
    print("smoke: DataLoader ok (torch %s, 0 and 1 workers)" % torch.__version__)


def run_checks(require_torch: bool) -> None:
    import psda

    print("smoke: psda %s from %s, Python %s" % (psda.__version__, psda.__file__, sys.version.split()[0]))
    start = time.perf_counter()
    check_match_and_core()
    src, tgt, _ = check_sampler()
    try:
        import torch  # noqa: F401
    except ImportError:
        if require_torch:
            raise SystemExit("smoke: torch is not importable and --require-torch was given: pass --torch-site DIR or pip install torch")
        print("smoke: DataLoader skipped (torch is not installed)")
    else:
        check_dataloader(src, tgt)
    print("smoke: all checks passed in %.1f s" % (time.perf_counter() - start))


def without_go(path: str) -> str:
    """Return PATH without the directories that hold a go command."""
    return os.pathsep.join(d for d in path.split(os.pathsep) if d and not os.access(os.path.join(d, "go"), os.X_OK))


def smoke_wheel(wheel: Path, python: str, torch_site: str | None, require_torch: bool) -> None:
    """Install wheel into a fresh venv of python and run the checks there."""
    with tempfile.TemporaryDirectory(prefix="psda-smoke-") as tmp:
        venv = Path(tmp) / "venv"
        t0 = time.perf_counter()
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        py = str(venv / "bin" / "python")
        env = {k: v for k, v in os.environ.items() if k not in ("GO", "GOROOT", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        env["PATH"] = without_go(os.environ.get("PATH", ""))
        assert shutil.which("go", path=env["PATH"]) is None
        # --only-binary: NumPy must come as a wheel too, nothing is compiled.
        subprocess.run([py, "-m", "pip", "install", "-q", "--only-binary=:all:", str(wheel)], check=True, env=env, cwd=tmp)
        t1 = time.perf_counter()
        if torch_site:
            site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
            Path(site, "psda_smoke_torch.pth").write_text(os.path.abspath(torch_site) + "\n")
        args = [py, os.path.abspath(__file__), "--check", "--venv", str(venv)] + (["--require-torch"] if require_torch else [])
        subprocess.run(args, check=True, env=env, cwd=tmp)
        print("smoke: %s: venv + install %.1f s, checks %.1f s" % (wheel.name, t1 - t0, time.perf_counter() - t1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", nargs="?", type=Path, help="the wheel to install into a fresh venv")
    ap.add_argument("--python", default=sys.executable, help="the interpreter for the fresh venv (default: this one)")
    ap.add_argument("--torch-site", help="a site-packages directory with torch, for the DataLoader check")
    ap.add_argument("--check", action="store_true", help="run the checks in this interpreter")
    ap.add_argument("--require-torch", action="store_true", help="fail instead of skipping the DataLoader check")
    ap.add_argument("--venv", help=argparse.SUPPRESS)  # set by the driver: psda must come from there
    a = ap.parse_args(argv)
    if a.check:
        if a.venv:
            import psda

            where = Path(psda.__file__).resolve()
            assert Path(a.venv).resolve() in where.parents, "psda came from %s, not the fresh venv %s" % (where, a.venv)
            assert shutil.which("go") is None, "go is on PATH: %s" % shutil.which("go")
        run_checks(a.require_torch)
        return
    if a.wheel is None:
        ap.error("give a wheel to install, or --check to test the psda installed here")
    if not a.wheel.is_file():
        ap.error("wheel %s does not exist: build it with tools/build-wheels.sh" % a.wheel)
    smoke_wheel(a.wheel, a.python, a.torch_site, a.require_torch or bool(a.torch_site))


if __name__ == "__main__":
    main()
