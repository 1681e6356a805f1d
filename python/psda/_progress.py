"""A tiny progress bar on stderr (no dependency beyond the standard library)."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

__all__ = ["Progress"]


class Progress:
    """Progress draws ``label [#####.....] done/total elapsed`` on one line of a stream.

    It redraws at most every ``interval`` seconds so that tight loops stay cheap,
    and draws nothing when ``enabled`` is False (``--no-progress``) or when the
    stream is not a terminal and ``force`` is False, so logs and pipes stay clean.

    Args:
        total: number of steps in the whole run (>= 0).
        label: text shown before the bar.
        enabled: False disables all output.
        stream: where to draw; defaults to ``sys.stderr``.
        force: draw even when ``stream`` is not a terminal.
        interval: minimum seconds between redraws.

    Example:
        >>> p = Progress(3, "demo", enabled=False)
        >>> for _ in range(3):
        ...     p.advance()
        >>> p.close()
    """

    def __init__(
        self,
        total: int,
        label: str = "",
        *,
        enabled: bool = True,
        stream: Optional[TextIO] = None,
        force: bool = False,
        interval: float = 0.1,
        width: int = 30,
    ) -> None:
        self.total = max(int(total), 0)
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", lambda: False)()
        self.enabled = bool(enabled) and (force or isatty)
        self.interval = interval
        self.width = width
        self.done = 0
        self._start = time.monotonic()
        self._last = -1.0
        self._drawn = False

    def set_label(self, label: str) -> None:
        """set_label changes the text shown before the bar and redraws."""
        self.label = label
        self._draw(force=True)

    def advance(self, steps: int = 1) -> None:
        """advance records ``steps`` more completed steps and redraws if due."""
        self.done = min(self.done + steps, self.total) if self.total else self.done + steps
        self._draw()

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval and self.done < self.total:
            return
        self._last = now
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = now - self._start
        self.stream.write(
            f"\r{self.label[:40]:<40} [{bar}] {self.done}/{self.total} {elapsed:6.1f}s"
        )
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """close draws the final state and ends the line (only if anything was drawn)."""
        if not self.enabled:
            return
        self._draw(force=True)
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
