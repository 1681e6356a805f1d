"""psda.match and the Matching it returns (the inputs' checks are in _inputs.py).

The rules about the settings and the features (validation, defaults, the
solver choice) live in the Go core (psda/config.go); this module and
_inputs.py convert the inputs to what the core reads (types, dtypes,
layout), pass the settings through, and raise Go's messages, which name the
argument, the value received and the fix. The settings are checked by the core before
the features are converted, so that a mistake fails fast.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._inputs import (DEFAULT_GAMMAS, _as_pair, _check_batch_fits, _check_config, _check_int64, _check_scale,
                      _tiny_exponent)

__all__ = ["Matching", "match", "DEFAULT_GAMMAS"]

logger = logging.getLogger("psda")



# ---------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class Matching:
    """The PSDA matching of a source and a target feature set.

    Returned by :func:`psda.match` and held by :class:`psda.PairedBatchSampler`
    as ``.matching``. All arrays are read-only.

    Attributes:
        pairs: int64 array of shape (P, 2), P = max(n_source, n_target): row r
            is the Stage 1 pair (source index, target index). Every example of
            the larger side appears exactly once; every example of the smaller
            side appears floor(P / n) or ceil(P / n) times.
        quads: int64 array of shape (Q, 2): Stage 2 quadruplets as indices into
            ``pairs`` (empty with ``stages=1``).
        singles: int64 array of indices into ``pairs`` that have no partner: at
            most one with ``stages=2`` (when P is odd), all P with ``stages=1``.
        stage1_cost: sum of the paper's cost C^st over ``pairs``; globally
            optimal.
        stage2_cost: sum of C^MM over ``quads`` plus the cost of a single pair
            grouped with nothing; 0.0 with ``stages=1``.
        stage2_bound: the certified dual objective of Stage 2's matching LP
            (vertex and blossom duals checked against every pair of pairs),
            a lower bound on every possible ``stage2_cost``; Stage 2 is an
            exact minimum-weight perfect matching, so the two are equal up
            to rounding (docs/method.md, "Stage 2").
        n_source, n_target: numbers of source and target examples matched.
        batch_size, stages, discrepancy, kernel, gammas: the settings the
            matching was computed with (the costs depend on them).
        imbalance: who chose the smaller domain's extra uses when the sizes
            differ: ``"cost"`` (the paper's Stage 1, psda.match) or a draw,
            ``"random"`` / ``"systematic"`` (psda.samplers.imbalance).

    Example:
        >>> import numpy as np, psda
        >>> rng = np.random.default_rng(0)
        >>> m = psda.match(rng.normal(size=(10, 3)), rng.normal(size=(6, 3)), batch_size=4)
        >>> m.pairs.shape, m.quads.shape, m.singles.shape
        ((10, 2), (5, 2), (0,))
    """

    pairs: np.ndarray
    quads: np.ndarray
    singles: np.ndarray
    stage1_cost: float
    stage2_cost: float
    stage2_bound: float
    n_source: int
    n_target: int
    batch_size: int
    stages: int
    discrepancy: str
    kernel: str
    gammas: Tuple[float, ...] = field(default=DEFAULT_GAMMAS)
    imbalance: str = "cost"

    def __post_init__(self) -> None:
        # Freeze the arrays: a sampler and its state rely on them not changing.
        for name in ("pairs", "quads", "singles"):
            a = np.ascontiguousarray(getattr(self, name), dtype=np.int64)
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    def _go(self) -> Any:
        """The matching held in the Go core (_native.Core) that schedules are
        built from: the one psda.match computed, or a copy of the arrays made
        once, and checked there, for a matching built or restored in Python."""
        core = self.__dict__.get("_core")
        if core is None:
            from . import _native

            core = _native.Core.from_arrays(self.pairs, self.quads, self.singles, self.n_source, self.n_target)
            object.__setattr__(self, "_core", core)
        return core

    def __getstate__(self) -> Dict[str, Any]:
        # The Go object belongs to this process; a copy makes its own.
        return {k: v for k, v in self.__dict__.items() if k != "_core"}

    @property
    def stage2_gap(self) -> float:
        """(stage2_cost - stage2_bound) / stage2_bound: 0 up to rounding (Stage 2 is exact).

        Returns 0.0 when cost and bound are equal (including both 0, and always
        with ``stages=1``), ``inf`` when only the bound is 0.
        """
        if self.stage2_cost == self.stage2_bound:
            return 0.0
        if self.stage2_bound == 0:
            return math.inf
        return (self.stage2_cost - self.stage2_bound) / self.stage2_bound

    @property
    def fingerprint(self) -> str:
        """A short hex digest of the sizes, pairs, quadruplets and singles.

        Two matchings with the same fingerprint produce the same batches for
        the same seed and epoch. Computed in O(P).
        """
        fp = self.__dict__.get("_fingerprint")
        if fp is None:
            h = hashlib.sha256()
            h.update(np.array([self.n_source, self.n_target, self.stages], dtype="<i8").tobytes())
            for a in (self.pairs, self.quads, self.singles):
                h.update(np.array(a.shape, dtype="<i8").tobytes())
                h.update(a.astype("<i8", copy=False).tobytes())
            fp = h.hexdigest()[:32]
            object.__setattr__(self, "_fingerprint", fp)
        return fp

    def __repr__(self) -> str:
        return (
            f"Matching(n_source={self.n_source}, n_target={self.n_target}, "
            f"pairs={len(self.pairs)}, quads={len(self.quads)}, singles={len(self.singles)}, "
            f"discrepancy={self.discrepancy!r}, kernel={self.kernel!r}, batch_size={self.batch_size}, "
            f"stages={self.stages}, stage1_cost={self.stage1_cost:.6g}, "
            f"stage2_cost={self.stage2_cost:.6g}, stage2_bound={self.stage2_bound:.6g}, "
            f"stage2_gap={self.stage2_gap:.3g})"
        )

    # Serialisation for PairedBatchSampler.state_dict: plain Python types and
    # bytes only, so that torch.load(weights_only=True) accepts it.
    def _to_state(self) -> Dict[str, Any]:
        st = self.__dict__.get("_state")
        if st is None:
            # One int64 blob [P, Q, S, pairs, quads, singles]: never empty
            # (torch.load(weights_only=True) rejects an empty bytes object).
            blob = np.concatenate(
                [[len(self.pairs), len(self.quads), len(self.singles)], self.pairs.ravel(), self.quads.ravel(), self.singles]
            ).astype("<i8")
            st = {
                "arrays": blob.tobytes(),
                "stage1_cost": float(self.stage1_cost),
                "stage2_cost": float(self.stage2_cost),
                "stage2_bound": float(self.stage2_bound),
                "n_source": int(self.n_source),
                "n_target": int(self.n_target),
                "batch_size": int(self.batch_size),
                "stages": int(self.stages),
                "discrepancy": str(self.discrepancy),
                "kernel": str(self.kernel),
                "gammas": tuple(float(g) for g in self.gammas),
                "imbalance": str(self.imbalance),
                "fingerprint": self.fingerprint,
            }
            object.__setattr__(self, "_state", st)
        return dict(st)

    @classmethod
    def _from_state(cls, st: Dict[str, Any], where: str) -> "Matching":
        try:
            blob = np.frombuffer(st["arrays"], dtype="<i8")
            p, q, s = (int(v) for v in blob[:3])
            if min(p, q, s) < 0 or len(blob) != 3 + 2 * p + 2 * q + s:
                raise ValueError(f"array blob of {len(blob)} values does not hold P={p}, Q={q}, S={s}")
            m = cls(
                pairs=blob[3 : 3 + 2 * p].reshape(p, 2),
                quads=blob[3 + 2 * p : 3 + 2 * p + 2 * q].reshape(q, 2),
                singles=blob[3 + 2 * p + 2 * q :],
                stage1_cost=float(st["stage1_cost"]),
                stage2_cost=float(st["stage2_cost"]),
                stage2_bound=float(st["stage2_bound"]),
                n_source=int(st["n_source"]),
                n_target=int(st["n_target"]),
                batch_size=int(st["batch_size"]),
                stages=int(st["stages"]),
                discrepancy=str(st["discrepancy"]),
                kernel=str(st["kernel"]),
                gammas=tuple(float(g) for g in st["gammas"]),
                # States written before the option hold the paper's matchings.
                imbalance=str(st.get("imbalance", "cost")),
            )
            for name in ("n_source", "n_target", "batch_size", "stages"):
                _check_int64(getattr(m, name), name)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise ValueError(
                f"state_dict[{where!r}] is not a psda matching ({type(e).__name__}: {e}): "
                "pass a dict returned by PairedBatchSampler.state_dict()"
            ) from None
        if m.fingerprint != st.get("fingerprint"):
            raise ValueError(
                f"state_dict[{where!r}] is corrupt: its arrays have fingerprint {m.fingerprint}, "
                f"but it records {st.get('fingerprint')!r}: pass an unmodified PairedBatchSampler.state_dict()"
            )
        try:
            m._go()
        except ValueError as e:
            raise ValueError(
                f"state_dict[{where!r}] does not hold a valid matching ({e}): "
                "pass an unmodified PairedBatchSampler.state_dict()"
            ) from None
        return m


# ---------------------------------------------------------------------------
# match
# ---------------------------------------------------------------------------


#: Seconds a matching runs before progress=None shows a bar (on a terminal).
_AUTO_BAR_AFTER = 2.0

ProgressArg = Union[None, bool, Callable[[int, int, str], Any]]


def _check_progress(progress: Any) -> ProgressArg:
    if progress is None or isinstance(progress, (bool, np.bool_)) or callable(progress):
        return bool(progress) if isinstance(progress, np.bool_) else progress
    raise TypeError(
        f"progress = {progress!r} ({type(progress).__name__}): want None (a bar on a terminal for long "
        "matchings), False, True (always a bar on stderr) or a callable progress(done, total, phase)"
    )


class _Bar:
    """_Bar turns the core's progress reports into psda._progress.Progress on stderr.

    With always=False the bar appears only once the matching has run for
    _AUTO_BAR_AFTER seconds, and only on a terminal.
    """

    def __init__(self, always: bool) -> None:
        self.always = always
        self.start = time.monotonic()
        self.bar = None

    def __call__(self, done: int, total: int, phase: str) -> None:
        from ._progress import Progress

        if self.bar is None:
            if not self.always and time.monotonic() - self.start < _AUTO_BAR_AFTER:
                return
            self.bar = Progress(100, "psda.match", force=self.always)
            self.bar._start = self.start
        self.bar.label = "psda.match: " + phase
        pct = done * 100 // max(total, 1)
        if pct > self.bar.done:
            self.bar.advance(pct - self.bar.done)
        else:
            self.bar.advance(0)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _input_digest(s: np.ndarray, t: np.ndarray) -> Tuple[bytes, bytes]:
    """BLAKE2 digests of the bytes of two C-contiguous arrays, read in place (no copy)."""
    return tuple(hashlib.blake2b(memoryview(a).cast("B"), digest_size=16).digest() for a in (s, t))  # type: ignore[return-value]


def _match_arrays(
    s: np.ndarray,
    t: np.ndarray,
    batch_size: int,
    stages: int,
    discrepancy: str,
    kernel: str,
    gammas: Tuple[float, ...],
    progress: ProgressArg = None,
    solver: str = "auto",
    names: Tuple[str, str] = ("source", "target"),
) -> Matching:
    """Runs the Go core on checked, converted inputs; logs time and sizes.

    The core reads s and t in place with the GIL released, so another thread
    could write to them meanwhile and the result, reported optimal, would be
    of no consistent input. A digest of both before and after the run
    detects that (at about 1 GB/s of input, small beside the matching) and
    raises RuntimeError naming the array, instead of returning the result.
    """
    from . import _native

    _check_scale(s, t, names, discrepancy)
    before = _input_digest(s, t)

    logger.debug(
        "matching n_source=%d n_target=%d d=%d %s %s/%s batch_size=%d stages=%d solver=%s",
        s.shape[0], t.shape[0], s.shape[1], s.dtype, discrepancy, kernel, batch_size, stages, solver,
    )
    t0 = time.perf_counter()
    rbf = discrepancy == "mmd" and kernel == "rbf"
    p = _tiny_exponent(s, t, discrepancy, kernel)
    cs, ct = (np.ldexp(s, p), np.ldexp(t, p)) if p else (s, t)  # exact; the costs are scaled back below
    bar = _Bar(always=True) if progress is True else _Bar(always=False) if progress is None else None
    callback: Optional[Callable[[int, int, str], Any]] = bar if bar is not None else (progress or None)
    try:
        core = _native.match(
            cs, ct, batch_size=batch_size, stages=stages, discrepancy=discrepancy, kernel=kernel,
            gammas=gammas if rbf else None, progress=callback, solver=solver, names=names,
        )  # fmt: skip
    finally:
        if bar is not None:
            bar.close()
    if _input_digest(s, t) != before:
        changed = [n for n, a, b in zip(names, before, _input_digest(s, t)) if a != b] or list(names)
        raise RuntimeError(
            f"{' and '.join(changed)} changed while psda.match read it (another thread wrote to the array): the "
            "matching would be of no consistent input; pass a copy (np.array(x)) or do not modify the features "
            "until the call returns")
    pairs, quads, singles = core.arrays()
    c1, c2, b2 = (math.ldexp(float(c), -(4 if discrepancy == "coral" else 2) * p) for c in core.objectives())
    m = Matching(
        pairs=pairs,
        quads=np.asarray(quads).reshape(-1, 2),
        singles=singles,
        stage1_cost=float(c1),
        stage2_cost=float(c2),
        stage2_bound=float(b2),
        n_source=int(s.shape[0]),
        n_target=int(t.shape[0]),
        batch_size=batch_size,
        stages=stages,
        discrepancy=discrepancy,
        kernel=kernel,
        gammas=gammas,
    )
    object.__setattr__(m, "_core", core)  # the schedule is built from it, in Go
    logger.info(
        "matched %d source and %d target examples (d=%d, %s, stages=%d) in %.3f s: "
        "%d pairs, %d quadruplets, %d single; stage 2 gap %.3g",
        m.n_source, m.n_target, s.shape[1], discrepancy, stages, time.perf_counter() - t0,
        len(m.pairs), len(m.quads), len(m.singles), m.stage2_gap,
    )
    return m


def match(
    source: Any,
    target: Any,
    *,
    batch_size: int,
    stages: int = 2,
    discrepancy: str = "mmd",
    kernel: str = "rbf",
    gammas: Optional[Sequence[float]] = DEFAULT_GAMMAS,
    progress: ProgressArg = None,
    solver: str = "auto",
) -> Matching:
    """Computes the PSDA matching of source and target features.

    Stage 1 pairs every example of the larger domain with one of the smaller
    (each of the smaller used floor or ceil of P/n times, P = max(n_source,
    n_target)) by an exact linear assignment under the paper's cost C^st.
    With ``stages=2``, Stage 2 groups the pairs into quadruplets by a minimum-
    weight perfect matching under C^MM. The costs are those of the minibatch
    discrepancy estimate the matching stabilises: the MMD with a linear kernel
    or the paper's RBF mixture, or CORAL; they depend on ``batch_size``.

    The call releases the GIL while the Go core works, so other Python threads
    keep running. Ctrl-C (KeyboardInterrupt) stops the Go work within a few
    milliseconds and propagates; nothing is left running. Time O(n_s·n_t·d)
    for the costs plus O(P³) worst case for the assignments; memory one
    n_s×n_t and one P×P float64 matrix with the dense solver, O(P·(d + K))
    with the sparse one (see ``solver``).

    Args:
        source: source features, shape (n_source, d): a NumPy array of any real
            dtype and layout or a torch tensor. C-contiguous float32/float64
            input is used without copying (but for the linear MMD's and
            CORAL's features below 2**-100 in magnitude, scaled up by an
            exact power of two: docs/method.md); float16 is converted to float32,
            integers and other floats to float64; if the two sides end up with
            different dtypes both are converted to float64.
        target: target features, shape (n_target, d), same d.
        batch_size: examples per domain in a minibatch (k in the paper); even
            when ``stages=2``, at least 2 for CORAL, at most max(n_source,
            n_target).
        stages: 1 (Paired: pairs only) or 2 (Double-paired: quadruplets).
        discrepancy: ``"mmd"`` or ``"coral"``.
        kernel: ``"rbf"`` (sum of exp(-gamma·||x-y||²) over ``gammas``) or
            ``"linear"``; MMD only.
        gammas: the RBF mixture's bandwidths, each finite and > 0; None means
            the paper's mixture, DEFAULT_GAMMAS.
        progress: ``None`` (default) draws a progress bar on stderr when
            stderr is a terminal and the matching has run for more than 2 s;
            ``False`` never draws one; ``True`` always does (also into logs
            and pipes); a callable is called as ``progress(done, total,
            phase)`` from the calling thread about every 0.05 s while the
            progress changes and once with ``done == total`` at the end
            (``phase`` is ``"stage 1 costs"``, ``"stage 1 assignment"``,
            ``"stage 2 costs"``, ``"stage 2 matching"`` or ``"done"``;
            ``done/total`` is an estimate that never decreases). An exception
            raised by the callable cancels the matching and propagates.
        solver: how each stage is solved, ``"auto"`` (default), ``"dense"``
            (the full cost matrices, memory O(n_source·n_target + P²)) or
            ``"sparse"`` (candidate edges and pricing passes, memory
            O(P·(d + K)), so that 50,000 per domain fit; Stage 1's graph
            repeats each edge n_large/n_small times, so very imbalanced
            sizes need less memory dense, which ``"auto"`` then takes; with
            two stages, the RBF kernel and one domain at least 4 times the
            other, also kernel tables of 16·n_large·n_small + 8·n_small²
            bytes where they take at most 3 GiB, chosen by the sizes alone
            so that results do not depend on the memory free). Both are
            exact and certified: ``stage1_cost`` and the certified
            ``stage2_bound`` are the dense solver's up to rounding (the
            sparse path computes some edges' costs by another summation
            order, a few ulps apart), and the pairs may differ only between
            optima tied to that rounding. Which one ``"auto"`` picks for
            each stage, and why, is docs/design.md, "Solver choice".

    Returns:
        A :class:`Matching`.

    Raises:
        TypeError: non-numeric, bool or complex features; non-int batch_size
            or stages; gammas not a sequence of numbers; progress not None,
            a bool or a callable.
        ValueError: features not 2-D, empty, non-finite or with different
            numbers of columns; any setting out of range; solver not
            ``"auto"``, ``"dense"`` or ``"sparse"``; the cost matrices (or
            the sparse path's kernel tables) do not fit in the memory
            available, or the sparse Stage 1's pricing rounds grow its
            candidate graph past it (the message gives the bytes needed
            and what to change).

    Example:
        >>> import numpy as np, psda
        >>> rng = np.random.default_rng(0)
        >>> src, tgt = rng.normal(size=(100, 8)), rng.normal(0.5, 1, size=(80, 8))
        >>> m = psda.match(src, tgt, batch_size=16, discrepancy="mmd", kernel="rbf")
        >>> m.pairs.shape, m.quads.shape
        ((100, 2), (50, 2))
        >>> m.stage2_cost >= m.stage2_bound
        True
    """
    cfg = _check_config(batch_size, stages, discrepancy, kernel, gammas, solver)
    progress = _check_progress(progress)
    s, t = _as_pair(source, target, ("source", "target"), check_finite=False)
    _check_batch_fits(cfg, s.shape[0], t.shape[0])
    batch_size, stages, discrepancy, kernel, gammas, solver = cfg
    return _match_arrays(s, t, batch_size, stages, discrepancy, kernel, gammas, progress, solver)
