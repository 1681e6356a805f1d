"""A tiny progress bar on stderr (no dependency beyond the standard library)."""

from __future__ import annotations

import os
import sys
import time
from typing import Optional, TextIO

__all__ = ["Progress", "process_rank"]

#: Least seconds between two plain lines when the stream is not a terminal.
LINE_INTERVAL = 5.0


def process_rank() -> int:
    """process_rank returns this process's rank: torch.distributed's when it is
    initialised, else the ``RANK`` environment variable that launchers (torchrun,
    Lightning, Accelerate) set, else 0. Never imports torch itself."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except (AttributeError, RuntimeError):  # a half-initialised or exotic build
        pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


class Progress:
    """Progress draws ``label [#####.....] done/total elapsed`` on one line of a stream.

    On a terminal it redraws one line in place (``\\r``) at most every
    ``interval`` seconds so that tight loops stay cheap. Elsewhere (a log file, a
    pipe, a batch job's output) it writes plain lines ``label: done/total (pct%)
    elapsed``, at most one per ``max(interval, LINE_INTERVAL)`` seconds, the
    first one interval after the start (at once when ``force``), and a last
    one at the end if it wrote any: a long run is never silent in a log, and
    work shorter than the interval writes nothing there unless forced. Logs hold no carriage returns. It draws nothing when
    ``enabled`` is False (``--no-progress``), and by default only on rank 0 of a
    distributed run (see :func:`process_rank`), so that N processes do not
    print N bars.

    Args:
        total: number of steps in the whole run (>= 0).
        label: text shown before the bar.
        enabled: False disables all output.
        stream: where to draw; defaults to ``sys.stderr``.
        force: when not on a terminal, write the first line at once and the
            last one always (a caller that asked for progress explicitly).
        interval: minimum seconds between redraws.
        all_ranks: draw on every rank of a distributed run, not only rank 0.

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
        all_ranks: bool = False,
    ) -> None:
        self.total = max(int(total), 0)
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        try:
            isatty = bool(getattr(self.stream, "isatty", lambda: False)())
        except (OSError, ValueError):  # a closed or detached stream
            isatty = False
        self.tty = isatty
        self.enabled = bool(enabled) and (all_ranks or process_rank() == 0)
        self.interval = interval if isatty else max(interval, LINE_INTERVAL)
        self.width = width
        self.done = 0
        self._start = time.monotonic()
        # Plain lines wait one interval from the start unless forced: short work writes none.
        self._last = -1.0 if isatty or force else self._start
        self._force = bool(force)
        self._drawn = False
        self._closed = False
        self._last_key: object = None

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
        if not self.tty:
            # Plain lines: never two alike, at most one per interval (a new
            # label or the end does not force one; close() writes the last).
            key = (self.label, self.done)
            if key == self._last_key or (now - self._last < self.interval and not (force and self._closed)):
                return
            self._last, self._last_key = now, key
            frac = self.done / self.total if self.total else 1.0
            self.stream.write(f"{self.label}: {self.done}/{self.total} ({100 * frac:.0f}%) {now - self._start:.1f}s\n")
            self.stream.flush()
            self._drawn = True
            return
        if not force and now - self._last < self.interval and self.done < self.total:
            return
        self._last = now
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        elapsed = now - self._start
        self.stream.write(f"\r{self.label[:40]:<40} [{bar}] {self.done}/{self.total} {elapsed:6.1f}s")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """close draws the final state and ends the line (only if anything was drawn)."""
        if not self.enabled or self._closed:
            return
        self._closed = True
        if self.tty:
            self._draw(force=True)
            if self._drawn:
                self.stream.write("\n")
                self.stream.flush()
        elif self._drawn or self._force:
            self._draw(force=True)
