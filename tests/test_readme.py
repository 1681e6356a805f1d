"""The README's quickstart runs as written."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_quickstart_runs():
    pytest.importorskip("torch")
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README quickstart", "exec"), scope)
    assert scope["xs"].shape == scope["xt"].shape == (32, 16)
