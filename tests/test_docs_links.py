"""Every relative link in README.md and docs/*.md resolves (tools/check_links.py)."""

import importlib.util
import pathlib

TOOL = pathlib.Path(__file__).resolve().parent.parent / "tools" / "check_links.py"


def _check_links():
    spec = importlib.util.spec_from_file_location("check_links", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_relative_links_resolve():
    mod = _check_links()
    files = [mod.ROOT / "README.md", *sorted((mod.ROOT / "docs").glob("*.md"))]
    assert mod.broken_links(files) == []


def test_broken_links_are_reported(tmp_path):
    mod = _check_links()
    mod.ROOT = tmp_path
    (tmp_path / "a.md").write_text("# Top\n\n## Next step\n", encoding="utf-8")
    md = tmp_path / "b.md"
    md.write_text("[ok](a.md#next-step) [gone](c.md) [bad](a.md#nope)\n"
                  "```\n[in code](d.md)\n```\n[wrapped\ntext](e.png)\n", encoding="utf-8")
    assert mod.broken_links([md]) == [
        "b.md:1: c.md: no such file",
        "b.md:1: a.md#nope: no heading with anchor #nope",
        "b.md:5: e.png: no such file",
    ]
