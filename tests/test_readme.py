"""The README's quickstart and docs/samplers.md's factory example run as written."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _first_python_block(path, after=""):
    text = path.read_text(encoding="utf-8")
    section = text.split(after, 1)[1] if after else text
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope: dict = {}
    exec(compile(code, f"{path.name} example", "exec"), scope)
    return scope


def test_quickstart_runs():
    pytest.importorskip("torch")
    scope = _first_python_block(README, "## Quickstart")
    assert scope["xs"].shape == scope["xt"].shape == (32, 16)


def test_samplers_factory_example_runs():
    # It used names it never defined (source_features, DataLoader, ...), so it failed as written.
    pytest.importorskip("torch")
    scope = _first_python_block(ROOT / "docs" / "samplers.md")
    batches = list(scope["loader"])
    assert len(batches) == len(scope["sampler"]) == 500 // 32
    assert all(x.shape == (64, 8) for (x,) in batches)
