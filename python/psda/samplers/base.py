"""BatchSampler: the one contract every psda batch sampler keeps.

A sampler is a subclass that supplies its *plan* and one epoch's batches;
this class owns everything else, once:

- the lock, the epoch (taken modulo 2**64 everywhere, so that
  ``set_epoch(2**64 - 1)`` followed by a pass stands at epoch 0 and its
  ``state_dict`` loads), the generation that stops stale passes from
  advancing it;
- the pending update (:meth:`update`), applied when a pass starts an epoch
  at its first batch (never inside an epoch, nor in the rest of an epoch
  resumed by :meth:`load_state_dict`); with ``effective="batch"`` also the
  rest of the running epoch, re-grouped by a fresh sampler of the same kind
  on the same rows (``_regroup``, one rule for every subclass);
- sharding over ranks and the exact ``len`` (one rule for every sampler:
  psda.BatchesPerRank in the Go core, see :meth:`BatchSampler.batch_lens`);
- :meth:`state_dict` / :meth:`load_state_dict`, which validate everything
  they load (format, settings, sizes, the plan's indices, coverage and
  finite numbers, through the subclass's :meth:`_check_plan`);
- pickling and deepcopy; the two un-offset :meth:`views`.

A subclass provides (as torch's samplers subclass ``Sampler``):

- ``name``: its name in :data:`psda.SAMPLERS` (the registry, psda.samplers.registry);
- ``_build(s, t) -> plan``: the set-up from features, at construction and in
  :meth:`update`;
- either ``_draw(plan, rng, count) -> (src, tgt)``: ``count`` full batches
  over all ranks as two (count, k) int64 arrays of un-offset rows, drawn with
  ``rng`` only (the base shards them and shortens the last one), or
  ``_epoch_rows(plan, epoch, start)`` for samplers that shard themselves
  (PSDA's Go schedule);
- ``_plan_state(plan)`` / ``_plan_from_state(d, where)`` when its plan is not a
  dict of arrays, and ``_check_plan(plan, where)``, which raises ValueError
  naming ``where`` when a plan's rows are out of range or break its coverage.
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any, Callable, ClassVar, Dict, Iterator, List, NamedTuple, Optional, Tuple

import numpy as np

from .._inputs import _as_pair, _check_bool, _check_int, _check_scale

try:  # torch is optional: subclass its Sampler when it is there.
    from torch.utils.data import Sampler as _TorchSampler

    _Base: Any = _TorchSampler[List[int]]
except ImportError:  # pragma: no cover - exercised only without torch
    _Base = object

__all__ = ["BatchSampler", "stream", "check_rows", "STATE_FORMAT"]

logger = logging.getLogger("psda")

#: The format every sampler's state_dict carries; load_state_dict refuses others.
STATE_FORMAT = "psda.BatchSampler/2"
_STATE_KEYS = ("format", "sampler", "epoch", "batches", "seed", "batch_size", "drop_last", "num_replicas", "rank",
               "n_source", "n_target", "plan", "pending_plan")
_SETTINGS = ("batch_size", "drop_last", "num_replicas", "rank", "n_source", "n_target")
_EPOCHS = 1 << 64

# The most passes one view may run ahead of the other (views()) before the
# oldest kept for the other view is dropped.
_MAX_VIEW_LAG = 64

# update(effective="batch"): how often a rest re-formed in another thread is
# re-done when the epoch moved on meanwhile.
_REFORM_TRIES = 6
_EFFECTIVE = ("epoch", "batch")

# Who iterates a pass: the sampler itself (offset target indices), or one of
# the two views (un-offset indices).
_BOTH, _SOURCE, _TARGET = "both", "source", "target"


def check_ranks(num_replicas: Any, rank: Any) -> Tuple[int, int]:
    """Returns (num_replicas, rank), each taken from torch.distributed when None,
    checked: 1 <= num_replicas < 2**63 and 0 <= rank < num_replicas."""
    if num_replicas is None or rank is None:
        from ..distributed import world

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


def check_rows(a: np.ndarray, n: int, where: str) -> None:
    """Raises ValueError naming where unless every entry of a is a row index in [0, n)."""
    if a.size and (int(a.min()) < 0 or int(a.max()) >= n):
        bad = int(a.min()) if int(a.min()) < 0 else int(a.max())
        raise ValueError(f"{where} holds row {bad}, outside [0, {n}): the state is not from this sampler's "
                         "datasets; pass an unmodified state_dict() of a sampler over the same datasets")


def _check_effective(effective: Any) -> str:
    if not isinstance(effective, str) or effective not in _EFFECTIVE:
        raise ValueError(f"effective = {effective!r}: want 'epoch' (the new set-up from the next epoch) or 'batch' "
                         "(also the rest of the epoch under way, from its next batch)")
    return effective


def _splice(lens: np.ndarray, start: int, rest: "_Rest",
            rows: Callable[[], Tuple[np.ndarray, np.ndarray]]) -> Tuple[np.ndarray, np.ndarray]:
    """Rows (source, target; flat) of batches start.. of lens: those of rows() (batches start..) up to
    rest.start, then rest's. rows() is called only when it contributes (rest.start > start)."""
    if rest.start <= start:
        cut = int(lens[rest.start:start].sum())
        return rest.source[cut:], rest.target[cut:]
    src, tgt = rows()
    cut = int(lens[start:rest.start].sum())
    return np.concatenate([src[:cut], rest.source]), np.concatenate([tgt[:cut], rest.target])


class _Pass:
    """One walk through an epoch's batches on this rank, shared by the two views.

    Fixed when it begins (at the first batch request): nothing done to the
    sampler afterwards (update, set_epoch) changes its batches, except an
    ``update(..., effective="batch")``, which may replace the batches no side
    has handed out yet by ``rest`` (the same rows, re-grouped). The rows are
    produced when a side starts walking and released when no side walks, so
    a pass kept for a view that has not started costs O(batches) (plus its
    explicit rest, if any).
    """

    def __init__(self, sampler: "BatchSampler", epoch: int, plan: Any, start: int, sides: Tuple[str, ...],
                 generation: int, rest: Optional["_Rest"] = None):
        self.sampler, self.epoch, self.plan, self.start, self.generation = sampler, epoch, plan, start, generation
        self.lens = sampler._lens(plan)
        self.num_batches = len(self.lens)
        self.progress = {side: start for side in sides}
        self.walkers = 0
        self.rest = rest  # batches rest.start.. as explicit rows, after a switch
        self._arrays: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None

    def rows(self) -> Tuple[np.ndarray, np.ndarray]:
        """(source rows, target rows) of batches start.., flat and un-offset: the plan's, then the rest's."""
        if self._arrays is not None:
            return self._arrays[0], self._arrays[1]
        return self.sampler._rows_from(self.epoch, self.plan, self.start, self.rest)

    def acquire(self) -> None:
        """Produces the rows of batches start.. if no side holds them; pair with release()."""
        self.walkers += 1
        if self._arrays is None:
            src, tgt = self.rows()
            offsets = np.concatenate([[0], np.cumsum(self.lens[self.start:])])
            self._arrays = (src, tgt, offsets)

    def batch(self, b: int) -> Tuple[np.ndarray, np.ndarray]:
        """Batch b's (source rows, target rows); between acquire() and release()."""
        src, tgt, offsets = self._arrays  # one read: a switch replaces the tuple whole
        lo, hi = int(offsets[b - self.start]), int(offsets[b - self.start + 1])
        return src[lo:hi], tgt[lo:hi]

    def switch(self, rest: "_Rest") -> None:
        """Serves rest from batch rest.start on; the caller holds the lock and checked that no side got it."""
        self.rest = rest
        if self._arrays is not None:  # (a rest resumed from a state may begin before this pass)
            src, tgt, offsets = self._arrays
            self._arrays = (*_splice(self.lens, self.start, rest, lambda: (src, tgt)), offsets)

    def release(self) -> None:
        self.walkers -= 1
        if self.walkers == 0:
            self._arrays = None

    @property
    def done(self) -> int:
        """Batches handed out on every side."""
        return min(self.progress.values())

    @property
    def ahead(self) -> int:
        """Batches handed out on the side furthest on: where a switch can start."""
        return max(self.progress.values())


class _Rest(NamedTuple):
    """Explicit rows of an epoch's batches start.. on this rank (flat, un-offset), left by a switch."""

    start: int
    source: np.ndarray
    target: np.ndarray


class _Reform(NamedTuple):
    """A re-formed rest prepared by BatchSampler._prepare_rest, installed by _install_rest if still valid."""

    pass_: Optional[_Pass]  # the running pass, or None for the resume point of the epoch
    epoch: int
    plan: Any
    at: int  # the first batch re-formed
    old: Optional[_Rest]  # the rest in force when prepared (install checks it is still)
    new: Optional[_Rest]  # None: the remainder cannot be re-formed, the old batches stay
    generation: int


class BatchSampler(_Base):
    """BatchSampler is the base of every psda batch sampler (see the module docstring).

    Every sampler yields lists of indices over ``ConcatDataset([source_ds,
    target_ds])``: the batch's source rows in ``[0, n_source)``, then the
    same number of target rows offset by ``n_source``. Position m of the
    source half goes with position m of the target half.

    Args:
        source_features: (n_source, d) array or tensor, in the source dataset's order.
        target_features: (n_target, d) array or tensor, same d.
        batch_size: k, examples per domain in a batch.
        seed: seeds the sampler's generator together with the epoch (any
            int, taken modulo 2**64); every rank must use the same seed.
        drop_last: the one rule of every sampler. An epoch has
            N = max(n_source, n_target) rows per domain to serve: with True,
            N // k batches of k; with False, ceil(N / k), the last holding
            N mod k rows per domain when k does not divide N. Over ranks,
            True drops the batches that cannot be shared evenly, False lets
            ranks short of a batch repeat one from the start of the epoch
            (like ``DistributedSampler``). For n = 70, k = 8 that is 8
            batches with True and 9 with False, for every sampler.
        num_replicas, rank: sharding over ranks; None means
            ``torch.distributed``'s world when initialised, else 1 and 0.

    Raises:
        TypeError, ValueError: naming the argument, the value and the fix.

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(70, 2))
        >>> s = psda.batch_sampler("uniform", x, x, 8, drop_last=False, num_replicas=1, rank=0)
        >>> len(s), [len(b) // 2 for b in s][-2:]
        (9, [8, 6])
    """

    #: Name in :data:`psda.SAMPLERS`; set by subclasses.
    name: ClassVar[str] = "base"
    #: Whether the sampler reads the features (uniform does not: no scale check).
    uses_features: ClassVar[bool] = True
    #: Whether ``update(..., effective="batch")`` can re-group the rest of an
    #: epoch (False where each batch is an independent draw from the whole
    #: domain: the rest of an epoch is then no set of rows to re-group).
    regroups: ClassVar[bool] = True

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *, seed: int = 0,
                 drop_last: bool = True, num_replicas: Optional[int] = None, rank: Optional[int] = None) -> None:
        # torch's Sampler.__init__ does nothing we need (and its signature
        # changed across versions), so it is not called.
        self.batch_size = self._check_batch_size(batch_size)
        self.seed = _check_int(seed, "seed", "0") % _EPOCHS
        self.drop_last = _check_bool(drop_last, "drop_last")
        self.num_replicas, self.rank = check_ranks(num_replicas, rank)
        s, t = self._features(source_features, target_features)
        self.n_source, self.n_target = int(s.shape[0]), int(t.shape[0])
        self._check_sizes()
        from .. import _native

        _native.check_schedule(max(self.n_source, self.n_target), batch_size=self.batch_size,
                               num_replicas=self.num_replicas, drop_last=self.drop_last, stages=1,
                               discrepancy="mmd")
        self._generation = 0
        self._reset(self._built(s, t, "the set-up"))

    # -- what subclasses provide --------------------------------------------

    def _build(self, s: np.ndarray, t: np.ndarray) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _draw(self, plan: Any, rng: np.random.Generator, count: int) -> Tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover - abstract

    def _check_plan(self, plan: Any, where: str) -> None:
        """Raises ValueError naming where when plan cannot be this sampler's (rows, coverage, sizes)."""

    def _config(self) -> Dict[str, Any]:
        """The sampler's own settings (for repr and pickling)."""
        return {}

    def _options(self) -> Dict[str, Any]:
        """The keyword arguments (besides seed, drop_last, ranks) that build a sampler of the same kind
        (update(..., effective="batch") builds one on the rest of an epoch)."""
        return self._config()

    def _min_rows(self) -> int:
        """The fewest rows per domain the sampler needs (k for samplers of distinct rows)."""
        return self.batch_size

    def _check_batch_size(self, batch_size: Any) -> int:
        k = _check_int(batch_size, "batch_size", "32")
        if k < 1:
            raise ValueError(f"batch_size = {k}: must be >= 1 (examples per domain in a batch)")
        return k

    def _features(self, source_features: Any, target_features: Any) -> Tuple[np.ndarray, np.ndarray]:
        s, t = _as_pair(source_features, target_features, ("source_features", "target_features"))
        if self.uses_features:
            # Squared distances and outer products of such rows overflow
            # float64: refuse, naming the argument, rather than serve the
            # batches of NaN weights.
            _check_scale(s, t, ("source_features", "target_features"),
                         getattr(self, "discrepancy", None) or "mmd")
        return np.ascontiguousarray(s, dtype=np.float64), np.ascontiguousarray(t, dtype=np.float64)

    def _check_sizes(self) -> None:
        need = self._min_rows()
        if min(self.n_source, self.n_target) < need:
            raise ValueError(
                f"batch_size = {self.batch_size}: {self.name} draws {need} distinct rows per domain, but there are "
                f"{self.n_source} source and {self.n_target} target rows: use batch_size <= "
                f"{min(self.n_source, self.n_target)}")

    # -- the one batch count --------------------------------------------------

    def _batches_per_rank(self) -> Tuple[int, int]:
        """(batches per epoch over all ranks, batches per rank): psda.BatchesPerRank, the rule of every sampler."""
        from .. import _native

        return _native.batches_per_rank(max(self.n_source, self.n_target), self.batch_size, self.num_replicas,
                                        self.drop_last)

    def _global_batches(self) -> np.ndarray:
        """The epoch's global batch numbers this rank serves: r, r + R, ... (wrapping with drop_last=False)."""
        total, per_rank = self._batches_per_rank()
        return (np.arange(per_rank, dtype=np.int64) * self.num_replicas + self.rank) % total

    def _lens(self, plan: Any) -> np.ndarray:
        """Rows per domain in each of this rank's batches: k, and N mod k for the epoch's last with drop_last=False."""
        total, _ = self._batches_per_rank()
        lens = np.full(len(self._global_batches()), self.batch_size, np.int64)
        short = max(self.n_source, self.n_target) % self.batch_size
        if not self.drop_last and short:
            lens[self._global_batches() == total - 1] = short
        return lens

    def _epoch_rows(self, plan: Any, epoch: int, start: int) -> Tuple[np.ndarray, np.ndarray]:
        """This rank's batches start.. of epoch, as flat (source rows, target rows), un-offset."""
        src, tgt = self.epoch_batches(epoch, plan)
        lens = self._lens(plan)
        mine = self._global_batches()[start:]
        keep = np.arange(src.shape[1])[None, :] < lens[start:, None]
        return src[mine][keep], tgt[mine][keep]

    def epoch_batches(self, epoch: int, plan: Any = None) -> Tuple[np.ndarray, np.ndarray]:
        """Returns epoch's full batches over all ranks: (source, target) int64 arrays (batches, k), un-offset.

        With drop_last=False and k not dividing N, only the first N mod k
        columns of the last batch are served. A pure function of (seed,
        epoch, plan): the sampler's state is unchanged.
        """
        total = self._batches_per_rank()[0]
        rng = np.random.default_rng([self.seed, int(epoch) % _EPOCHS])
        src, tgt = self._draw(self._plan if plan is None else plan, rng, total)
        return np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64)

    # -- state ------------------------------------------------------------------

    def _built(self, s: np.ndarray, t: np.ndarray, where: str) -> Any:
        plan = self._build(s, t)
        self._check_plan(plan, where)  # a plan that breaks the contract is a bug: say so now
        return plan

    def _reset(self, plan: Any) -> None:
        """Sets the state of a sampler that has not started: epoch 0, no pass."""
        self._lock = threading.Lock()
        self._plan = plan  # in force: used by the current or last pass
        self._pending: Any = None  # from update(), used from the next epoch
        self._epoch = 0  # epoch of the next pass
        self._resume = 0  # batch at which the next pass starts (load_state_dict)
        self._resume_rest: Optional[_Rest] = None  # the resumed epoch's re-formed rows (update effective="batch")
        # Bumped by set_epoch and load_state_dict: stops passes already under
        # way from advancing the epoch afterwards.
        self._generation = getattr(self, "_generation", 0) + 1
        self._current: Optional[_Pass] = None  # the pass begun last
        self._view_passes = {_SOURCE: 0, _TARGET: 0}  # passes started by each view
        self._view_plans: Dict[int, _Pass] = {}
        self._warned_lag = False

    @property
    def plan(self) -> Any:
        """The set-up in force: the one the current (or last) epoch uses."""
        return self._plan

    @property
    def pending_plan(self) -> Any:
        """The set-up computed by :meth:`update` that the next epoch will use, or None."""
        return self._pending

    @property
    def epoch(self) -> int:
        """The epoch the next pass will serve (advanced after every complete pass, modulo 2**64)."""
        return self._epoch

    def __len__(self) -> int:
        """Returns the exact number of batches per epoch on this rank."""
        return self._batches_per_rank()[1]

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch of the next pass; the shuffle depends on (seed, epoch).

        Optional: the epoch also advances by itself after every complete pass
        (modulo 2**64: after 2**64 - 1 comes 0), so calling ``set_epoch(e)`` at
        the start of epoch e (the ``DistributedSampler`` idiom) gives the same
        batches as not calling it; setting the epoch a resumed state is in
        keeps the resume position. A pass already under way keeps its batches.

        Args:
            epoch: 0 <= epoch < 2**64 (the shuffle's epoch counter is 64 bits).
        """
        epoch = _check_int(epoch, "epoch", "0")
        if not 0 <= epoch < _EPOCHS:
            raise ValueError(f"epoch = {epoch}: want 0 <= epoch < 2**64 (the shuffle's epoch counter is 64 bits)")
        with self._lock:
            if epoch != self._epoch:
                self._resume, self._resume_rest = 0, None
            self._epoch = epoch
            self._generation += 1

    def update(self, source_features: Any, target_features: Any, *, effective: str = "epoch") -> None:
        """Recomputes the set-up from new features of the same examples.

        The new plan is used from the next pass that starts an epoch at its
        first batch, never for the rest of an epoch resumed by
        :meth:`load_state_dict`; until then it is :attr:`pending_plan`. May
        run in another thread while the sampler is iterated (what
        :class:`psda.refresh.FeatureRefresher` does).

        With ``effective="batch"`` the epoch under way changes too, from its
        next batch: the batches not yet handed out on this rank keep exactly
        the rows they would have served (per domain the same multiset, so
        every row is served as often in the epoch as without the update), re-
        grouped by a sampler of the same kind and options built on those rows'
        *new* features (balanced, one replica, ``drop_last=False``, seeded by
        (seed, epoch, batch)); its batches take the places of the old ones,
        the short batch (``drop_last=False``) where the old one was. "Next
        batch" is the first batch that no side has handed out: with
        :meth:`views` the view that is behind still gets the old batches up to
        there, so the views stay aligned. A pass running when the sampler is
        iterated in another thread is re-formed from where it stands once the
        new set-up is ready (retried if it moved meanwhile); without a running
        pass, the rest of a resumed epoch is re-formed, and otherwise there is
        nothing to re-form (the next epoch uses the new plan anyway).
        :meth:`state_dict` carries the re-formed rows, so a resume is exact.

        Where the rest cannot be re-formed, it keeps its batches and the
        ``psda`` logger says why (a WARNING the first time, then INFO): the kinds whose batches are
        independent draws from the whole domain (``kmeans++``, ``dpp``:
        :attr:`regroups` is False), a rest the kind refuses (fewer rows than
        it needs, an odd last batch with ``stages=2``, options that do not fit
        the rest's size), or a re-grouping that would not serve exactly the
        same rows (VaRDASS when k does not divide the rest). For the kinds
        whose batches hold distinct rows, copies of a row the rest serves
        twice that the fresh sampler put in one batch are swapped apart with
        rows of other batches (the rows served stay the same); where that is
        impossible the rest keeps its batches. Never an exception, never a
        change of which rows are served.

        Args:
            source_features: (n_source, d') features of the same source examples, same order.
            target_features: (n_target, d') features of the same target examples.
            effective: ``"epoch"`` (default): the new plan from the next
                epoch; ``"batch"``: also the rest of the epoch under way, from
                its next batch, as above. Costs a second set-up on the rest's
                rows (at most N per domain).

        Raises:
            TypeError, ValueError: as the constructor, if the numbers of
                examples changed, or for an ``effective`` other than the two.

        Example:
            >>> import numpy as np, psda
            >>> x = np.random.default_rng(0).normal(size=(64, 2))
            >>> s = psda.batch_sampler("paired", x, x + 1, 8, num_replicas=1, rank=0)
            >>> it = iter(s)
            >>> first = [next(it) for _ in range(3)]
            >>> s.update(x ** 2, x, effective="batch")   # batches 3..7 re-grouped now
            >>> served = sum(first + list(it), [])
            >>> sorted(i for i in served if i < 64) == list(range(64))   # each source row once
            True
        """
        effective = _check_effective(effective)
        s, t, plan = self._update_plan(source_features, target_features)
        if effective == "batch":
            self._reform(s, t, plan)

    def _update_plan(self, source_features: Any, target_features: Any,
                     install: bool = True) -> Tuple[np.ndarray, np.ndarray, Any]:
        """update()'s first half: checks the features, builds the plan and (install) makes it pending;
        returns (s, t, plan). psda.refresh.FeatureRefresher builds in its thread with install=False and
        installs (:meth:`_install_plan`) at its join, a point fixed by the training loop, not the thread."""
        s, t = self._features(source_features, target_features)
        if (len(s), len(t)) != (self.n_source, self.n_target):
            raise ValueError(
                f"update() got {len(s)} source and {len(t)} target examples, but the sampler indexes "
                f"{self.n_source} and {self.n_target}: pass features of the same datasets, or build a new sampler")
        plan = self._built(s, t, "the updated set-up")
        if install:
            self._install_plan(plan)
        return s, t, plan

    def _install_plan(self, plan: Any) -> None:
        """Makes plan pending: in force from the next pass that starts an epoch at its first batch."""
        with self._lock:
            self._pending = plan

    # -- the rest of an epoch re-formed (update effective="batch") ----------------

    def _rows_from(self, epoch: int, plan: Any, start: int, rest: Optional[_Rest]) -> Tuple[np.ndarray, np.ndarray]:
        """Rows (flat, un-offset) of this rank's batches start.. of epoch: the plan's, and rest's from rest.start."""
        if rest is None:
            return self._epoch_rows(plan, epoch, start)
        return _splice(self._lens(plan), start, rest, lambda: self._epoch_rows(plan, epoch, start))

    def _position(self) -> Optional[int]:
        """The first batch of the epoch under way that no side has handed out, or None between epochs."""
        with self._lock:
            where = self._under_way()
        return None if where is None else where[3]

    def _under_way(self) -> Optional[Tuple[Optional[_Pass], int, Any, int, int, Optional[_Rest]]]:
        """(pass or None, epoch, plan, first batch not handed out, start, rest) of the epoch under way: the
        running pass of this generation, else a resume point; None between epochs. Caller holds the lock."""
        p = self._current
        if p is not None and p.generation == self._generation and p.ahead < p.num_batches:
            return p, p.epoch, p.plan, p.ahead, p.start, p.rest
        if self._resume > 0 or self._resume_rest is not None:
            # A resume point, or a state resumed at its epoch's first batch that holds a re-formed rest
            # (views(): one view ahead of the other when the state was taken): an epoch under way.
            return None, self._epoch, self._plan, self._resume, self._resume, self._resume_rest
        return None

    def _prepare_rest(self, s: np.ndarray, t: np.ndarray, new_plan: Any = None,
                      at: Optional[int] = None) -> Optional[_Reform]:
        """Re-forms the rest of the epoch under way from batch max(at, position) on, without installing it.

        None when no epoch is under way, or when it already uses new_plan.
        """
        with self._lock:
            where = self._under_way()
            generation = self._generation
        if where is None:
            return None
        p, epoch, plan, b, start, old = where
        if plan is new_plan:
            return None
        lens = self._lens(plan)
        if at is not None and at > b:
            b = min(at, len(lens))
        new = None
        if b == len(lens):
            logger.debug("%s: no batch of epoch %d left to re-form; the update is in force from the next epoch",
                         self.name, epoch)
        if b < len(lens):
            src, tgt = self._rows_from(epoch, plan, start, old)
            cut = int(lens[start:b].sum())
            got = self._regroup(s, t, src[cut:], tgt[cut:], lens[b:], epoch, b)
            if got is not None:
                new = _Rest(b, got[0], got[1])
                if old is not None and old.start < b:  # the old rest up to b, then the new one
                    new = _Rest(old.start, *_splice(lens, old.start, new, lambda: (old.source, old.target)))
        return _Reform(p, epoch, plan, b, old, new, generation)

    def _install_rest(self, r: _Reform) -> bool:
        """Installs r's rows if no side has handed out batch r.at yet and nothing else changed the epoch
        since r was prepared; returns False otherwise."""
        with self._lock:
            if r.generation != self._generation:
                return False
            if r.pass_ is not None:
                p = r.pass_
                if self._current is not p or p.ahead > r.at or p.rest is not r.old:
                    return False
                if r.new is not None:
                    p.switch(r.new)
            else:
                # A resume point stays until a pass begins (which zeroes it) or the generation changes.
                resumed = self._resume > 0 or self._resume_rest is not None
                if (not resumed or self._resume > r.at or self._epoch != r.epoch or self._plan is not r.plan
                        or self._resume_rest is not r.old):
                    return False
                if r.new is not None:
                    self._resume_rest = r.new
        if r.new is not None:
            logger.debug("%s: epoch %d re-formed from batch %d on from the updated features", self.name, r.epoch, r.at)
        return True

    def _reform(self, s: np.ndarray, t: np.ndarray, new_plan: Any, prepared: Optional[_Reform] = None,
                foreground: bool = False) -> bool:
        """Re-forms and installs the rest of the epoch under way; True if it changed.

        prepared (from _prepare_rest) is installed if the sampler has not
        passed its first batch; otherwise, and without it, the rest is
        re-formed from the next batch the sampler hands out. foreground: the
        caller is the thread that iterates the sampler, so nothing moves
        meanwhile; else, when the sampler moved while the rest was re-formed,
        the next try aims a little further on (where the sampler is expected
        to stand by the time it is ready).
        """
        r, at = prepared, None
        for _ in range(_REFORM_TRIES):
            if r is None:
                r = self._prepare_rest(s, t, new_plan, at=at)
                if r is None:
                    logger.debug("%s: no epoch under way on the old set-up, nothing to re-form; the update is in "
                                 "force from the next epoch", self.name)
                    return False
            if self._install_rest(r):
                return r.new is not None
            now = self._position()
            if now is None:
                return False
            at = None if foreground else now + 2 * max(now - r.at, 0) + 1
            r = None
        logger.info("%s: the epoch moved on while its rest was re-formed, %d times; it keeps its batches and the "
                    "update is in force from the next epoch", self.name, _REFORM_TRIES)
        return False

    def _regroup(self, s: np.ndarray, t: np.ndarray, src: np.ndarray, tgt: np.ndarray, lens: np.ndarray,
                 epoch: int, b: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """The rows src, tgt (batches of lens) re-grouped by a fresh sampler of this kind on their features
        s[src], t[tgt]; None (logged) where that cannot keep the rows served (psda.samplers.regroup)."""
        from .regroup import regroup

        return regroup(self, s, t, src, tgt, lens, epoch, b)

    def _plan_state(self, plan: Any) -> Dict[str, Any]:
        """The plan as plain types and bytes (torch.load(weights_only=True) accepts it)."""
        return _encode(plan)

    def _plan_from_state(self, d: Any, where: str) -> Any:
        if not isinstance(d, dict):
            raise ValueError(f"state_dict[{where!r}] is {type(d).__name__}, not a plan: pass an unmodified state_dict()")
        return _decode(d, where)

    def digest(self) -> str:
        """A 32-hex-digit digest of the plan in force: equal digests mean the same batches for the same
        seed and epoch. The one digest of psda: distributed.check_identical compares it over ranks."""
        import hashlib

        h = hashlib.blake2b(digest_size=16)
        h.update(repr(_digest_items(self._plan_state(self._plan))).encode())
        return h.hexdigest()

    def state_dict(self) -> Dict[str, Any]:
        """Returns the state needed to resume mid-epoch.

        A fresh sampler of the same class and settings given this state by
        :meth:`load_state_dict` yields exactly the batches this one has not yet
        handed out in the current epoch, then the following epochs. The state
        carries the plan in force (and a pending one from :meth:`update`),
        and ``rest``: None, or after ``update(..., effective="batch")`` the
        epoch's re-formed batches from batch ``rest["from"]`` on (their rows
        as int64 arrays): plain Python types and bytes only, so ``torch.save`` /
        ``torch.load(weights_only=True)`` round-trip it.

        It counts the batches this sampler has handed to the DataLoader. With
        ``num_workers > 0`` the DataLoader fetches a few batches ahead of the
        training loop; take the state where the loop and sampler agree (at an
        epoch boundary) or use torchdata's ``StatefulDataLoader``.
        """
        with self._lock:
            pending = self._pending
            p = self._current
            if p is not None and p.done < p.num_batches:
                epoch, batches, plan, rest = p.epoch, p.done, p.plan, p.rest
            else:
                epoch, batches, plan, rest = self._epoch, self._resume, self._plan, self._resume_rest
        return {
            "format": STATE_FORMAT, "sampler": self.name, "epoch": int(epoch), "batches": int(batches),
            "seed": int(self.seed), "batch_size": self.batch_size, "drop_last": self.drop_last,
            "num_replicas": self.num_replicas, "rank": self.rank, "n_source": self.n_source,
            "n_target": self.n_target, "options": _plain(self._config()),
            "plan": self._plan_state(plan), "pending_plan": None if pending is None else self._plan_state(pending),
            "rest": None if rest is None else {"from": int(rest.start),
                                               **_encode({"source": rest.source, "target": rest.target})},
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`; the next pass resumes it.

        Adopts the state's seed, epoch, position and plans. Everything is
        checked before anything changes: the format, the sampler's name, the
        settings, the epoch and position, and the plans (rows in range,
        coverage, sizes, finite numbers).

        Raises:
            ValueError: naming the key and the fix, if any check fails.
        """
        if not isinstance(state_dict, dict) or state_dict.get("format") != STATE_FORMAT:
            got = state_dict.get("format") if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"state_dict is not a {STATE_FORMAT} state (format = {got!r}): pass the dict returned "
                             "by this kind of sampler's state_dict()")
        missing = [k for k in _STATE_KEYS if k not in state_dict]
        if missing:
            raise ValueError(f"state_dict lacks the key(s) {', '.join(map(repr, missing))}: pass an unmodified "
                             "state_dict()")
        if state_dict["sampler"] != self.name:
            raise ValueError(f"state_dict is from a {state_dict['sampler']!r} sampler, this one is {self.name!r}: "
                             "load it into a sampler built by psda.batch_sampler with that name")
        for key in _SETTINGS:
            if state_dict[key] != getattr(self, key):
                raise ValueError(
                    f"state_dict has {key} = {state_dict[key]!r} but this sampler has {key} = "
                    f"{getattr(self, key)!r}: construct the sampler with the settings and datasets of the one "
                    "whose state was saved")
        seed = _check_int(state_dict["seed"], "state_dict['seed']", "0") % _EPOCHS
        epoch = _check_int(state_dict["epoch"], "state_dict['epoch']", "0")
        batches = _check_int(state_dict["batches"], "state_dict['batches']", "0")
        nb = len(self)
        if not (0 <= batches <= nb and 0 <= epoch < _EPOCHS):
            raise ValueError(f"state_dict has epoch = {epoch}, batches = {batches}: want 0 <= epoch < 2**64 and "
                             f"0 <= batches <= {nb} (batches per epoch): pass an unmodified state_dict()")
        plan = self._plan_from_state(state_dict["plan"], "plan")
        self._check_plan(plan, "state_dict['plan']")
        pending = state_dict["pending_plan"]
        if pending is not None:
            pending = self._plan_from_state(pending, "pending_plan")
            self._check_plan(pending, "state_dict['pending_plan']")
        # States before update(effective="batch") have no "rest". One that lacks it where
        # FeatureRefresher's state has it (a DataLoader with workers snapshots the sampler
        # ahead of the loop, before a refresh) takes the refresher's (_expect_rest).
        rest = state_dict.get("rest")
        expected, self._expected_rest = getattr(self, "_expected_rest", None), None
        if rest is None and expected is not None and expected[0] == epoch and expected[1]["from"] >= batches:
            rest = expected[1]
        if rest is not None and batches < nb:
            rest = self._rest_from_state(rest, plan, seed, epoch)
        else:
            rest = None
        # Everything checked: only now change this sampler.
        self._reset(plan)
        self.seed = seed
        self._pending = pending
        self._epoch, self._resume = ((epoch + 1) % _EPOCHS, 0) if batches == nb else (epoch, batches)
        self._resume_rest = rest

    def _expect_rest(self, epoch: int, rest: Dict[str, Any]) -> None:
        """Keeps the ``rest`` of a state taken after a re-forming, for the next load_state_dict of epoch
        whose state lacks it (called by FeatureRefresher.load_state_dict; checked as any state's)."""
        self._expected_rest = (int(epoch), rest)

    def _rest_from_state(self, d: Any, plan: Any, seed: int, epoch: int) -> _Rest:
        """The state's re-formed rows, checked: lengths, rows in range, and the same rows per domain as the
        plan serves from batch d["from"] on (what every re-forming keeps)."""
        if not isinstance(d, dict) or not {"from", "source", "target"} <= set(d):
            raise ValueError("state_dict['rest'] is not None nor a dict with 'from', 'source', 'target': pass an "
                             "unmodified state_dict()")
        lens = self._lens(plan)
        f = _check_int(d["from"], "state_dict['rest']['from']", "0")
        if not 0 <= f < len(lens):
            raise ValueError(f"state_dict['rest']['from'] = {f}: want 0 <= from < {len(lens)} (batches per epoch): "
                             "pass an unmodified state_dict()")
        rows = _decode({"source": d["source"], "target": d["target"]}, "rest")
        want = int(lens[f:].sum())
        for side, n in (("source", self.n_source), ("target", self.n_target)):
            a = rows[side]
            if a.dtype != np.int64 or a.shape != (want,):
                raise ValueError(f"state_dict['rest'][{side!r}] has dtype {a.dtype} and shape {a.shape}, not int64 "
                                 f"({want},) (the rows of batches {f}..{len(lens) - 1}): pass an unmodified "
                                 "state_dict()")
            check_rows(a, n, f"state_dict['rest'][{side!r}]")
        # The plan's rows of that epoch under the state's seed; under the lock, so that no pass (which
        # produces its rows under it) sees the swapped seed.
        with self._lock:
            seed0, self.seed = self.seed, seed
            try:
                ps, pt = self._epoch_rows(plan, epoch, f)
            finally:
                self.seed = seed0
        for side, a, b in (("source", rows["source"], ps), ("target", rows["target"], pt)):
            if not np.array_equal(np.sort(a), np.sort(b)):
                raise ValueError(f"state_dict['rest'][{side!r}] does not serve the rows the plan serves from batch "
                                 f"{f} on (a re-forming keeps them): the state was edited; pass an unmodified "
                                 "state_dict()")
        return _Rest(f, rows["source"], rows["target"])

    # -- iteration ----------------------------------------------------------------

    def _begin(self, sides: Tuple[str, ...]) -> _Pass:
        """Starts a pass: applies a pending update if a new epoch starts, fixes the batches.

        The caller holds self._lock.
        """
        # A rest kept for the next load_state_dict (_expect_rest) is for a resume before this pass only.
        self._expected_rest = None
        if self._resume == 0 and self._resume_rest is None and self._pending is not None:
            self._plan, self._pending = self._pending, None
            logger.debug("epoch %d of %s uses the updated set-up", self._epoch, self.name)
        p = _Pass(self, self._epoch, self._plan, self._resume, sides, self._generation, self._resume_rest)
        self._resume, self._resume_rest = 0, None
        self._current = p
        return p

    def _hand_out(self, p: _Pass, side: str, b: int) -> Tuple[np.ndarray, np.ndarray]:
        """Returns batch b of p and records that it went out on side; ends the pass when all are out.

        Under the lock, so that a switch (update effective="batch") lands
        either before batch b is read or after it is counted, never between.
        """
        with self._lock:
            rows = p.batch(b)
            p.progress[side] += 1
            if p.progress[side] == p.num_batches and p.generation == self._generation and self._epoch == p.epoch:
                # The first side to finish an epoch advances it, unless
                # set_epoch or load_state_dict intervened; after 2**64 - 1 the
                # counter wraps to 0, as the 64-bit shuffle seed does.
                self._epoch = (p.epoch + 1) % _EPOCHS
        return rows

    def _generate(self, p: _Pass, side: str) -> Iterator[List[int]]:
        with self._lock:
            p.acquire()
        try:
            n_source = self.n_source
            for b in range(p.start, p.num_batches):
                # Counted before the yield, so that the state taken right after
                # receiving batch b says b batches, and the epoch advances as
                # soon as its last batch is out.
                src, tgt = self._hand_out(p, side, b)
                if side == _BOTH:
                    batch = src.tolist() + (tgt + n_source).tolist()
                elif side == _SOURCE:
                    batch = src.tolist()
                else:
                    batch = tgt.tolist()
                yield batch
        finally:
            with self._lock:
                p.release()

    def __iter__(self) -> Iterator[List[int]]:
        """Yields this epoch's batches (the rest of the epoch after a resume).

        The epoch, its plan and its batches are fixed when the first batch is
        requested; nothing done to the sampler afterwards changes them. (A
        DataLoader with workers calls ``iter()`` twice per epoch, so nothing
        may happen at ``iter()`` itself.)
        """
        with self._lock:
            p = self._begin((_BOTH,))
        yield from self._generate(p, _BOTH)

    def views(self) -> Tuple["_SideView", "_SideView"]:
        """Returns (source_batches, target_batches) for two DataLoaders.

        Two batch samplers over this sampler's epochs with *un-offset*
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

    def _view_pass(self, side: str) -> _Pass:
        """Returns the pass a view starts: the other view's n-th pass, or a new one.

        Called at a view's first batch request. At most _MAX_VIEW_LAG passes
        are kept for the other view, so iterating one view alone does not grow
        memory without bound.
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
                            "%s.views(): the %s view is %d passes ahead of the %s view; the oldest pass kept for "
                            "it was dropped, so the two views are no longer aligned pass by pass: iterate both "
                            "views (zip them), or iterate the sampler itself",
                            type(self).__name__, side, _MAX_VIEW_LAG, other,
                        )
            return p

    # -- pickling (copy.deepcopy, spawn): through the validated state -----------

    def __getstate__(self) -> Dict[str, Any]:
        keep = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        return {"attributes": keep, "state": self.state_dict()}

    def __setstate__(self, st: Dict[str, Any]) -> None:
        self.__dict__.update(st["attributes"])
        self._generation = 0
        self._reset(None)  # load_state_dict decodes and checks the plan, then replaces it
        self.load_state_dict(st["state"])

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self._config().items())
        return (f"{type(self).__name__}(n_source={self.n_source}, n_target={self.n_target}, "
                f"batch_size={self.batch_size}{extra}, seed={self.seed}, drop_last={self.drop_last}, "
                f"num_replicas={self.num_replicas}, rank={self.rank}, epoch={self._epoch}, "
                f"batches_per_epoch={len(self)})")


class _SideView(_Base):
    """One side of a batch sampler: un-offset source or target index batches.

    Returned by :meth:`BatchSampler.views`; not constructed directly.
    """

    def __init__(self, sampler: BatchSampler, side: str) -> None:
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


def _digest_items(v: Any) -> Any:
    """A plan state as nested sorted tuples (bytes kept), for digest()."""
    if isinstance(v, dict):
        return tuple((k, _digest_items(v[k])) for k in sorted(v))
    if isinstance(v, (tuple, list)):
        return tuple(_digest_items(x) for x in v)
    return v


def _plain(v: Any) -> Any:
    """Settings as plain types (tuples as lists) for the state."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v


def _encode(plan: Dict[str, Any]) -> Dict[str, Any]:
    """A plan (nested dicts of arrays and plain values) with every array as {dtype, shape, data}."""
    out: Dict[str, Any] = {}
    for key, v in plan.items():
        if isinstance(v, dict):
            out[key] = {"dict": _encode(v)}
        elif isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            # torch.load(weights_only=True) rejects an empty bytes object.
            out[key] = {"dtype": a.dtype.str, "shape": list(a.shape), "data": a.tobytes() or None}
        else:
            out[key] = {"value": v}
    return out


def _decode(enc: Dict[str, Any], where: str) -> Dict[str, Any]:
    """The inverse of _encode; ValueError naming where for anything malformed or not finite."""
    out: Dict[str, Any] = {}
    try:
        for key, v in enc.items():
            if "dict" in v:
                out[key] = _decode(v["dict"], f"{where}/{key}")
            elif "data" in v:
                dt = np.dtype(v["dtype"])
                if dt.kind not in "biuf":
                    raise ValueError(f"dtype {dt} is not a number type")
                a = np.frombuffer(v["data"] or b"", dtype=dt).reshape(v["shape"]).copy()
                if dt.kind == "f" and not np.isfinite(a).all():
                    raise ValueError(f"{key} holds NaN or Inf")
                out[key] = a
            else:
                x = v["value"]
                if isinstance(x, float) and not math.isfinite(x):
                    raise ValueError(f"{key} = {x}")
                out[key] = x
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise ValueError(f"state_dict[{where!r}] is malformed ({e}): pass an unmodified state_dict()") from None
    return out


def stream(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    """count indices from back-to-back random permutations of range(n): each once before any twice."""
    reps = -(-count // n)
    return np.concatenate([rng.permutation(n) for _ in range(reps)])[:count] if count else np.zeros(0, np.int64)
