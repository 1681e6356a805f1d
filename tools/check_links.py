"""Check every relative link in README.md and docs/*.md.

A link [text](target) or image ![alt](target) whose target is not a URL must
name a file or directory that exists, relative to the Markdown file; a
#fragment must name a heading of the target file (GitHub's anchors: lower
case, punctuation dropped, spaces as hyphens, -1, -2 ... for repeats).
Links inside fenced code blocks and inline code are ignored.

    python tools/check_links.py          # prints each broken link, exits 1 if any
"""

from __future__ import annotations

import pathlib
import re
import sys
from typing import Dict, List, Set

ROOT = pathlib.Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _prose_lines(text: str) -> List[str]:
    """The lines outside fenced code blocks, with inline code blanked."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return out


def anchors(path: pathlib.Path, cache: Dict[pathlib.Path, Set[str]]) -> Set[str]:
    """GitHub's heading anchors of the Markdown file path."""
    if path not in cache:
        seen: Dict[str, int] = {}
        found: Set[str] = set()
        fenced = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if FENCE.match(line):
                fenced = not fenced
            m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = found
    return cache[path]


def broken_links(files: List[pathlib.Path]) -> List[str]:
    """A message per broken relative link in files."""
    cache: Dict[pathlib.Path, Set[str]] = {}
    bad = []
    for md in files:
        prose = "\n".join(_prose_lines(md.read_text(encoding="utf-8")))
        for m in LINK.finditer(prose):  # over the whole text: link text may wrap
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto: ...
                continue
            path, _, frag = target.partition("#")
            dest = (md.parent / path).resolve() if path else md
            where = f"{md.relative_to(ROOT)}:{prose.count(chr(10), 0, m.start()) + 1}: {target}"
            if not dest.exists():
                bad.append(f"{where}: no such file")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest, cache):
                bad.append(f"{where}: no heading with anchor #{frag}")
    return bad


def main() -> int:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = broken_links(files)
    for msg in bad:
        print(msg)
    n = sum(len(LINK.findall("\n".join(_prose_lines(f.read_text(encoding="utf-8"))))) for f in files)
    print(f"{len(files)} files, {n} links, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
