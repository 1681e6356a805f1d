"""PairedBatchSampler: the PSDA matching served as DataLoader batches.

The sampler is a *batch* sampler: pass it as ``batch_sampler=`` of a
``DataLoader`` over ``ConcatDataset([source_ds, target_ds])``. A DataLoader
iterates its batch sampler in the main process, also with worker processes, so
``update()`` and ``set_epoch()`` act on the next epoch wherever the data is
loaded.

The epoch's batches come from the Go core's schedule (``psda/schedule.go``):
the matching's units (quadruplets, then single pairs) shuffled by a PCG seeded
with (seed, epoch), cut into batches and interleaved over the ranks. Python
only slices the filled index buffer into lists.

One file of about 600 lines on purpose: it holds one object whose parts
(construction, epochs and ranks, ``update``, ``state_dict``) share one lock
and the same fields, and ``_SideView``, its view of one domain.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ._inputs import _as_pair, _check_batch_fits, _check_bool, _check_config, _check_int
from ._matching import DEFAULT_GAMMAS, Matching, _match_arrays

try:  # torch is optional: subclass its Sampler when it is there.
    from torch.utils.data import Sampler as _TorchSampler

    _Base: Any = _TorchSampler[List[int]]
except ImportError:  # pragma: no cover - exercised only without torch
    _Base = object

__all__ = ["PairedBatchSampler"]

logger = logging.getLogger("psda")

_STATE_FORMAT = "psda.PairedBatchSampler/1"
_STATE_KEYS = ("format", "epoch", "batches", "seed", "batch_size", "drop_last", "num_replicas", "rank",
               "n_source", "n_target", "matching", "pending_matching")

# The most passes one view may run ahead of the other (views()) before the
# oldest kept for the other view is dropped.
_MAX_VIEW_LAG = 64

# Who iterates a pass: the sampler itself (offset target indices), or one of
# the two views (un-offset indices).
_BOTH, _SOURCE, _TARGET = "both", "source", "target"



def _check_ranks(num_replicas: Any, rank: Any) -> Tuple[int, int]:
    """Returns (num_replicas, rank), each taken from torch.distributed when None,
    checked: 1 <= num_replicas < 2**63 and 0 <= rank < num_replicas. Every
    batch sampler's constructor uses it."""
    if num_replicas is None or rank is None:
        from .distributed import world

        world_size, world_rank = world()
        num_replicas = world_size if num_replicas is None else num_replicas
        rank = world_rank if rank is None else rank
    num_replicas = _check_int(num_replicas, "num_replicas", "2")
    if not 1 <= num_replicas < 1 << 63:
        raise ValueError(f"num_replicas = {num_replicas}: must be >= 1 (the number of ranks) and < 2**63")
    rank = _check_int(rank, "rank", "0")
    if not 0 <= rank < num_replicas:
        raise ValueError(f"rank = {rank}: want 0 <= rank < num_replicas = {num_replicas}")
    return num_replicas, rank

class _Pass:
    """One walk through an epoch's batches, shared by the two views.

    The pass fixes its epoch, matching and schedule when it begins (at the
    first batch request), so nothing that happens to the sampler afterwards
    (update, set_epoch) changes its batches. The index buffer (2·P int64) is
    filled from them when a side starts walking and released when no side
    walks it, so that a pass kept for a view that has not started it yet
    (see PairedBatchSampler._view_pass) costs O(batches), not O(P).
    """

    def __init__(self, epoch: int, matching: Matching, schedule: Any, rank: int, start: int, sides: Tuple[str, ...], generation: int):
        self.epoch = epoch
        self.matching = matching
        self.schedule = schedule
        self.rank = rank
        self.start = start
        self.lens = np.asarray(schedule.batch_lens(rank), dtype=np.int64)
        self.num_batches = len(self.lens)
        self.progress = {side: start for side in sides}
        self.generation = generation
        self.walkers = 0
        self._arrays: Optional[Tuple[np.ndarray, np.ndarray]] = None

    def acquire(self) -> Tuple[np.ndarray, np.ndarray]:
        """Returns (flat, offsets), filling them if no side holds them; pair with release()."""
        self.walkers += 1
        if self._arrays is None:
            flat = np.asarray(self.schedule.fill(self.epoch, self.rank, self.start), dtype=np.int64)
            # offsets[b - start] is where batch b begins in flat (2·len values each).
            offsets = np.concatenate([[0], np.cumsum(2 * self.lens[self.start :])])
            self._arrays = (flat, offsets)
        return self._arrays

    def release(self) -> None:
        self.walkers -= 1
        if self.walkers == 0:
            self._arrays = None

    @property
    def done(self) -> int:
        """Batches handed out on every side."""
        return min(self.progress.values())


def _check_same_examples(sampler: Any, n_source: int, n_target: int) -> None:
    """update()'s check, for every psda batch sampler: new features must describe the same examples."""
    if (n_source, n_target) != (sampler.n_source, sampler.n_target):
        raise ValueError(
            f"update() got {n_source} source and {n_target} target examples, but the sampler indexes "
            f"{sampler.n_source} and {sampler.n_target}: pass features of the same datasets, or build a new sampler"
        )


def _check_state_settings(sampler: Any, state_dict: Dict[str, Any]) -> None:
    """load_state_dict()'s check, for every psda batch sampler: the state's settings and datasets are the sampler's."""
    for key in ("batch_size", "drop_last", "num_replicas", "rank", "n_source", "n_target"):
        if state_dict.get(key) != getattr(sampler, key):
            raise ValueError(
                f"state_dict has {key} = {state_dict.get(key)!r} but this sampler has {key} = "
                f"{getattr(sampler, key)!r}: construct the sampler with the settings and datasets "
                "of the one whose state was saved"
            )


class PairedBatchSampler(_Base):
    """Yields PSDA batches over ``ConcatDataset([source_ds, target_ds])``.

    Computes the PSDA matching of the source and target features (see
    :func:`psda.match`) and serves each epoch's batches: a list of
    ``2 * batch_size`` indices, first ``batch_size`` source indices in
    ``[0, n_source)``, then the ``batch_size`` target indices of the same pairs,
    offset by ``n_source`` (the index space of the ConcatDataset). Source
    position m is paired with target position m; with ``stages=2`` the two
    pairs of a quadruplet sit at positions 2m and 2m+1. Over an epoch every
    pair appears at most once (exactly once with ``drop_last=False`` and one
    replica).

    The shuffle uses the sampler's own generator, seeded by ``seed`` and the
    epoch; it never touches NumPy's or torch's global random state. The epoch
    advances by itself after a complete pass (modulo 2**64); :meth:`set_epoch`
    sets it.

    Threads: the sampler's own state is guarded by a lock, so :meth:`update`
    and :meth:`state_dict` may run in other threads while it is iterated. It
    is meant to be iterated by one loop at a time (as a DataLoader does, in
    its main process): iterators running concurrently in several threads
    each serve the epoch that was current when they began, so they serve the
    same epoch instead of consecutive ones. Give each thread its own sampler
    (``num_replicas``/``rank`` split an epoch) if they must not overlap.

    Args:
        source_features: source features, shape (n_source, d), in the order of
            the source dataset: a NumPy array of any real dtype and layout, or
            a torch tensor. C-contiguous float32/float64 input is not copied;
            float16 becomes float32, integers and other floats float64 (both
            become float64 if the two sides differ).
        target_features: target features, shape (n_target, d), same d.
        batch_size: examples per domain in a batch (k): even with
            ``stages=2``, >= 2 with CORAL, at most max(n_source, n_target).
        stages: 1 (Paired) or 2 (Double-paired, quadruplets).
        discrepancy: ``"mmd"`` or ``"coral"``: the loss the matching serves.
        kernel: ``"rbf"`` (the paper's mixture) or ``"linear"``; MMD only.
        gammas: the RBF mixture's bandwidths; None means the paper's mixture,
            DEFAULT_GAMMAS.
        seed: seeds the shuffle together with the epoch; any int, taken
            modulo 2**64. Every rank must use the same seed.
        drop_last: drop the final short batch, and the batches that cannot be
            shared evenly over replicas. With False, the final batch may be
            short and ranks short of a batch repeat one from the start of the
            epoch (like ``DistributedSampler``).
        num_replicas: number of ranks sharing each epoch (distributed
            training); every rank gets ``len(sampler)`` batches. None means
            ``torch.distributed``'s world size when it is initialised, else 1.
        rank: this process's rank, ``0 <= rank < num_replicas``. None means
            ``torch.distributed``'s rank when it is initialised, else 0.
        solver: how the matching is computed, at construction and by
            :meth:`update`: ``"auto"`` (default), ``"dense"`` or ``"sparse"``,
            as for :func:`psda.match`.

    Raises:
        TypeError, ValueError: for invalid features or settings, naming the
            argument, the value and the fix.

    Example:
        >>> import numpy as np, torch, psda
        >>> from torch.utils.data import ConcatDataset, DataLoader, TensorDataset
        >>> rng = np.random.default_rng(0)
        >>> src, tgt = rng.normal(size=(100, 4)), rng.normal(0.5, 1, size=(60, 4))
        >>> ds = ConcatDataset([TensorDataset(torch.tensor(src)), TensorDataset(torch.tensor(tgt))])
        >>> sampler = psda.PairedBatchSampler(src, tgt, batch_size=16)
        >>> loader = DataLoader(ds, batch_sampler=sampler)
        >>> len(loader)
        6
        >>> (x,) = next(iter(loader))
        >>> xs, xt = x[:16], x[16:]      # row m of xs is matched with row m of xt
        >>> xs.shape, xt.shape
        (torch.Size([16, 4]), torch.Size([16, 4]))
    """

    def __init__(
        self,
        source_features: Any,
        target_features: Any,
        batch_size: int,
        *,
        stages: int = 2,
        discrepancy: str = "mmd",
        kernel: str = "rbf",
        gammas: Optional[Sequence[float]] = DEFAULT_GAMMAS,
        seed: int = 0,
        drop_last: bool = True,
        num_replicas: Optional[int] = None,
        rank: Optional[int] = None,
        solver: str = "auto",
    ) -> None:
        # torch's Sampler.__init__ does nothing we need (and its signature
        # changed across versions), so it is not called.
        cfg = _check_config(batch_size, stages, discrepancy, kernel, gammas, solver)
        self.batch_size, self.stages, self.discrepancy, self.kernel, self.gammas, self.solver = cfg
        self.seed = _check_int(seed, "seed", "0") % (1 << 64)
        self.drop_last = _check_bool(drop_last, "drop_last")
        self.num_replicas, self.rank = _check_ranks(num_replicas, rank)
        s, t = _as_pair(source_features, target_features, ("source_features", "target_features"), check_finite=False)
        self.n_source, self.n_target = int(s.shape[0]), int(t.shape[0])
        _check_batch_fits(cfg, self.n_source, self.n_target)
        from . import _native

        _native.check_schedule(max(self.n_source, self.n_target), batch_size=self.batch_size, num_replicas=self.num_replicas,
                               drop_last=self.drop_last, stages=self.stages, discrepancy=self.discrepancy)  # fmt: skip
        self._reset(self._compute(s, t))

    # -- set-up ----------------------------------------------------------

    def _batches_per_rank(self) -> Tuple[int, int]:
        """(batches per epoch over all ranks, batches per rank), as the Go core's schedule counts them."""
        from . import _native

        return _native.batches_per_rank(max(self.n_source, self.n_target), self.batch_size, self.num_replicas, self.drop_last)

    def _compute(self, s: np.ndarray, t: np.ndarray) -> Matching:
        return _match_arrays(s, t, self.batch_size, self.stages, self.discrepancy, self.kernel, self.gammas,
                             solver=self.solver, names=("source_features", "target_features"))

    def _reset(self, matching: Matching) -> None:
        """Sets the state of a sampler that has not started: epoch 0, no pass."""
        self._lock = threading.Lock()
        self._matching = matching  # in force: used by the current or last pass
        self._pending: Optional[Matching] = None  # from update(), used from the next epoch
        self._schedule_cache: Optional[Tuple[Matching, int, Any]] = None
        self._epoch = 0  # epoch of the next pass
        self._resume = 0  # batch at which the next pass starts (load_state_dict)
        # Bumped by set_epoch and load_state_dict: stops passes already under
        # way from advancing the epoch afterwards.
        self._generation = getattr(self, "_generation", 0) + 1
        self._current: Optional[_Pass] = None  # the pass begun last
        self._view_passes = {_SOURCE: 0, _TARGET: 0}  # passes started by each view
        self._view_plans: Dict[int, _Pass] = {}
        self._warned_lag = False

    def _schedule(self, matching: Matching) -> Any:
        # Built in Go from the matching held there (Matching._go): the pairs
        # are not sent back.
        c = self._schedule_cache
        if c is None or c[0] is not matching or c[1] != self.seed:
            sched = matching._go().schedule(
                batch_size=self.batch_size, seed=self.seed, drop_last=self.drop_last, num_replicas=self.num_replicas
            )
            c = self._schedule_cache = (matching, self.seed, sched)
        return c[2]

    # -- public API ---------------------------------------------------------

    @property
    def matching(self) -> Matching:
        """The :class:`psda.Matching` in force: the one the current (or last) epoch uses."""
        return self._matching

    @property
    def pending_matching(self) -> Optional[Matching]:
        """The matching computed by :meth:`update` that the next epoch will use, or None."""
        return self._pending

    @property
    def epoch(self) -> int:
        """The epoch the next pass will serve (advanced after every complete pass)."""
        return self._epoch

    def __len__(self) -> int:
        """Returns the exact number of batches per epoch on this rank."""
        return int(self._schedule(self._matching).num_batches)

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch of the next pass; the shuffle depends on (seed, epoch).

        Optional: the epoch also advances by itself after every complete pass,
        so calling ``set_epoch(e)`` at the start of epoch e (the
        ``DistributedSampler`` habit) is harmless. Setting the epoch a resumed
        state is in keeps the resume position.
        """
        epoch = _check_int(epoch, "epoch", "0")
        if not 0 <= epoch < 1 << 64:
            raise ValueError(f"epoch = {epoch}: want 0 <= epoch < 2**64 (the shuffle's epoch counter is 64 bits)")
        with self._lock:
            if epoch != self._epoch:
                self._resume = 0
            self._epoch = epoch
            self._generation += 1

    def update(self, source_features: Any, target_features: Any) -> None:
        """Recomputes the matching from new features of the same examples.

        The new matching is used from the next epoch (the next pass of
        ``__iter__`` that starts an epoch at its first batch), never inside a
        running epoch, nor for the rest of an epoch resumed by
        :meth:`load_state_dict`; until then ``.matching`` stays the one in force and the new one is
        ``.pending_matching``. May be called from another thread: the Go core
        releases the GIL, so training continues while it runs.

        Args:
            source_features: shape (n_source, d'), the same examples in the same
                order as at construction (d' may differ).
            target_features: shape (n_target, d').

        Raises:
            TypeError, ValueError: as for the constructor, and if the numbers of
                examples changed (the dataset's index space is fixed).
        """
        s, t = _as_pair(source_features, target_features, ("source_features", "target_features"), check_finite=False)
        _check_same_examples(self, s.shape[0], t.shape[0])
        m = self._compute(s, t)
        with self._lock:
            self._pending = m

    def state_dict(self) -> Dict[str, Any]:
        """Returns the state needed to resume mid-epoch.

        A fresh sampler (same batch_size, drop_last, num_replicas, rank and
        dataset sizes) given this state by :meth:`load_state_dict` yields
        exactly the batches that this one has not yet handed out in the
        current epoch, then continues with the following epochs. The state
        holds the epoch, the number of batches handed out, the seed, and the
        matching in force (plus a pending one from :meth:`update`), so resume
        is exact even if the fresh sampler was built from other features.
        Plain Python types and bytes: ``torch.save``/``torch.load
        (weights_only=True)`` round-trip it. Size O(P). It also records the
        ``solver``, for reference only: :meth:`load_state_dict` keeps the
        loading sampler's own (both solvers are exact, and which one fits
        depends on the machine).

        It counts the batches this sampler has handed to the DataLoader. With
        ``num_workers > 0`` the DataLoader fetches a few batches ahead of the
        training loop; take the state where the loop and sampler agree (at an
        epoch boundary) or use torchdata's ``StatefulDataLoader``.
        """
        with self._lock:
            pending = self._pending
            p = self._current
            if p is not None and p.done < p.num_batches:
                epoch, batches, matching = p.epoch, p.done, p.matching
            else:
                epoch, batches, matching = self._epoch, self._resume, self._matching
        return {
            "format": _STATE_FORMAT,
            "epoch": int(epoch),
            "batches": int(batches),
            "seed": int(self.seed),
            "batch_size": self.batch_size,
            "drop_last": self.drop_last,
            "num_replicas": self.num_replicas,
            "rank": self.rank,
            "n_source": self.n_source,
            "n_target": self.n_target,
            "solver": self.solver,
            "matching": matching._to_state(),
            "pending_matching": None if pending is None else pending._to_state(),
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`; the next pass resumes it.

        Adopts the state's seed, epoch, position and matchings (replacing the
        matching this sampler computed at construction).

        Raises:
            ValueError: if the state is not a sampler state, lacks one of its
                keys, or was taken with a different batch_size, drop_last,
                num_replicas, rank, dataset size, stages, discrepancy or kernel
                (the error names the setting to construct the sampler with).
        """
        if not isinstance(state_dict, dict) or state_dict.get("format") != _STATE_FORMAT:
            raise ValueError(
                f"state_dict is not a {_STATE_FORMAT} state (format = "
                f"{state_dict.get('format') if isinstance(state_dict, dict) else type(state_dict).__name__!r}): "
                "pass the dict returned by PairedBatchSampler.state_dict()"
            )
        missing = [k for k in _STATE_KEYS if k not in state_dict]
        if missing:
            raise ValueError(
                f"state_dict lacks the key(s) {', '.join(map(repr, missing))}: it is not a complete "
                f"{_STATE_FORMAT} state; pass an unmodified PairedBatchSampler.state_dict()"
            )
        _check_state_settings(self, state_dict)
        matching = Matching._from_state(state_dict["matching"], "matching")
        pst = state_dict.get("pending_matching")
        pending = None if pst is None else Matching._from_state(pst, "pending_matching")
        for where, m in (("matching", matching), ("pending_matching", pending)):
            if m is None:
                continue
            if (m.n_source, m.n_target) != (self.n_source, self.n_target):
                raise ValueError(f"state_dict[{where!r}] matches {m.n_source} source and {m.n_target} target examples, "
                                 f"not this sampler's {self.n_source} and {self.n_target}")
            # The matching becomes .matching: its settings must be this
            # sampler's, or .stages and .matching would disagree (and update()
            # would switch to other units at the next epoch).
            for key in ("stages", "discrepancy", "kernel"):
                if key == "kernel" and self.discrepancy != "mmd":
                    continue
                if getattr(m, key) != getattr(self, key):
                    raise ValueError(
                        f"state_dict[{where!r}] was computed with {key} = {getattr(m, key)!r} but this sampler has "
                        f"{key} = {getattr(self, key)!r}: construct the sampler with {key}={getattr(m, key)!r}, "
                        "the settings of the one whose state was saved"
                    )
        seed = _check_int(state_dict.get("seed"), "state_dict['seed']", "0") % (1 << 64)
        epoch = _check_int(state_dict.get("epoch"), "state_dict['epoch']", "0")
        batches = _check_int(state_dict.get("batches"), "state_dict['batches']", "0")
        nb = self._batches_per_rank()[1]
        if not (0 <= batches <= nb and 0 <= epoch < 1 << 64):
            raise ValueError(
                f"state_dict has epoch = {epoch}, batches = {batches}: want epoch >= 0 and 0 <= batches <= {nb} "
                "(batches per epoch): pass an unmodified PairedBatchSampler.state_dict()"
            )
        # Everything checked: only now change this sampler.
        self._reset(matching)
        self.seed = seed
        self._pending = pending
        self._epoch, self._resume = ((epoch + 1) % (1 << 64), 0) if batches == nb else (epoch, batches)

    def views(self) -> Tuple["_SideView", "_SideView"]:
        """Returns (source_batches, target_batches) for two DataLoaders.

        Two batch samplers over this sampler's schedule with *un-offset*
        indices: ``source_batches`` yields lists of source indices in
        ``[0, n_source)``, ``target_batches`` the matched target indices in
        ``[0, n_target)``. The n-th pass of one view and the n-th pass of the
        other walk the same epoch, so iterating them in lockstep (``zip``) or
        one fully and then the other gives aligned batches. They share the
        sampler's epoch, updates and state.

        Example:
            >>> import numpy as np, torch, psda
            >>> from torch.utils.data import DataLoader, TensorDataset
            >>> src, tgt = np.random.default_rng(0).normal(size=(2, 40, 3))
            >>> sampler = psda.PairedBatchSampler(src, tgt, batch_size=8)
            >>> sb, tb = sampler.views()
            >>> src_loader = DataLoader(TensorDataset(torch.tensor(src)), batch_sampler=sb)
            >>> tgt_loader = DataLoader(TensorDataset(torch.tensor(tgt)), batch_sampler=tb)
            >>> for (xs,), (xt,) in zip(src_loader, tgt_loader):
            ...     pass   # row m of xs is matched with row m of xt
        """
        return _SideView(self, _SOURCE), _SideView(self, _TARGET)

    # -- iteration ----------------------------------------------------------

    def _begin(self, sides: Tuple[str, ...]) -> _Pass:
        """Starts a pass: applies a pending update if a new epoch starts, fixes the batches.

        The caller holds self._lock.
        """
        if self._resume == 0 and self._pending is not None:
            self._matching, self._pending = self._pending, None
            logger.debug("epoch %d uses the updated matching %s", self._epoch, self._matching.fingerprint)
        matching = self._matching
        p = _Pass(self._epoch, matching, self._schedule(matching), self.rank, self._resume, sides, self._generation)
        self._resume = 0
        self._current = p
        return p

    def _handed(self, p: _Pass, side: str) -> None:
        """Records that one more batch of p went out on side; ends the pass when all are out."""
        with self._lock:
            p.progress[side] += 1
            if p.progress[side] == p.num_batches and p.generation == self._generation and self._epoch == p.epoch:
                # The first side to finish an epoch advances it, unless set_epoch
                # or load_state_dict intervened; after epoch 2**64 - 1 the
                # counter wraps to 0, as the 64-bit shuffle seed would.
                self._epoch = (p.epoch + 1) % (1 << 64)

    def _generate(self, p: _Pass, side: str) -> Iterator[List[int]]:
        with self._lock:
            flat, offsets = p.acquire()
        try:
            lens = p.lens
            n_source = self.n_source
            for b in range(p.start, p.num_batches):
                o, n = int(offsets[b - p.start]), int(lens[b])
                if side == _BOTH:
                    batch = flat[o : o + n].tolist() + (flat[o + n : o + 2 * n] + n_source).tolist()
                elif side == _SOURCE:
                    batch = flat[o : o + n].tolist()
                else:
                    batch = flat[o + n : o + 2 * n].tolist()
                # Counted before the yield, so that the state taken right after
                # receiving batch b says b batches, and the epoch advances as soon
                # as its last batch is out.
                self._handed(p, side)
                yield batch
        finally:
            del flat, offsets
            with self._lock:
                p.release()

    def __iter__(self) -> Iterator[List[int]]:
        """Yields this epoch's batches (the rest of the epoch after a resume).

        The epoch, its matching and its batches are fixed when the first batch
        is requested; nothing done to the sampler afterwards changes them. (A
        DataLoader with workers calls ``iter()`` twice per epoch, so nothing
        may happen at ``iter()`` itself.)
        """
        with self._lock:
            p = self._begin((_BOTH,))
        yield from self._generate(p, _BOTH)

    def _view_pass(self, side: str) -> _Pass:
        """Returns the pass a view starts: the other view's n-th pass, or a new one.

        Called at a view's first batch request (see _SideView.__iter__). A
        pass kept for the other view holds no index buffer (see _Pass); at
        most _MAX_VIEW_LAG are kept, so iterating one view alone does not
        grow memory without bound.
        """
        with self._lock:
            self._view_passes[side] += 1
            n = self._view_passes[side]
            p = self._view_plans.pop(n, None)
            if p is None:
                p = self._begin((_SOURCE, _TARGET))
                self._view_plans[n] = p
                if len(self._view_plans) > _MAX_VIEW_LAG:
                    oldest = min(self._view_plans)
                    del self._view_plans[oldest]
                    other = _TARGET if side == _SOURCE else _SOURCE
                    self._view_passes[other] = max(self._view_passes[other], oldest)
                    if not self._warned_lag:
                        self._warned_lag = True
                        logger.warning(
                            "PairedBatchSampler.views(): the %s view is %d passes ahead of the %s view; the oldest "
                            "pass kept for it was dropped, so the two views are no longer aligned pass by pass: "
                            "iterate both views (zip them), or iterate the sampler itself",
                            side, _MAX_VIEW_LAG, other,
                        )
            return p

    # -- pickling (copy.deepcopy, spawn): the Go schedule is rebuilt --------

    def __getstate__(self) -> Dict[str, Any]:
        keep = ("batch_size", "stages", "discrepancy", "kernel", "gammas", "seed", "drop_last",
                "num_replicas", "rank", "n_source", "n_target", "solver")
        return {"config": {k: getattr(self, k) for k in keep}, "state": self.state_dict()}

    def __setstate__(self, st: Dict[str, Any]) -> None:
        self.__dict__.update({"solver": "auto", **st["config"]})  # pickles from before solver existed
        self._reset(Matching._from_state(st["state"]["matching"], "matching"))
        self.load_state_dict(st["state"])

    def __repr__(self) -> str:
        return (
            f"PairedBatchSampler(n_source={self.n_source}, n_target={self.n_target}, batch_size={self.batch_size}, "
            f"stages={self.stages}, discrepancy={self.discrepancy!r}, kernel={self.kernel!r}, solver={self.solver!r}, seed={self.seed}, "
            f"drop_last={self.drop_last}, num_replicas={self.num_replicas}, rank={self.rank}, epoch={self._epoch}, "
            f"batches_per_epoch={len(self)})"
        )


class _SideView(_Base):
    """One side of a PairedBatchSampler: un-offset source or target index batches.

    Returned by :meth:`PairedBatchSampler.views`; not constructed directly.
    """

    def __init__(self, sampler: PairedBatchSampler, side: str) -> None:
        self.sampler = sampler
        self.side = side

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self) -> Iterator[List[int]]:
        # The pass is claimed at the first batch request, not at iter(): a
        # DataLoader with workers calls iter() twice per epoch, and only
        # iterators that actually run may count towards the pairing of the
        # two views' passes.
        yield from self.sampler._generate(self.sampler._view_pass(self.side), self.side)

    def __repr__(self) -> str:
        return f"<{self.side} batches of {self.sampler!r}>"
