"""The batch-sampler contract shared by every sampler in psda.

:class:`DABatchSampler` holds the machinery; a sampler adds two methods:

- ``_build(source, target)``: the set-up (strata, partitions, eigenvectors),
  returned as a *plan*: a dict of NumPy arrays and plain values. It runs at
  construction and in :meth:`DABatchSampler.update`.
- ``_draw(plan, rng, num_batches)``: one epoch's batches over all ranks, as
  two int64 arrays of shape (num_batches, k) (source rows, target rows, both
  un-offset), drawn with ``rng`` only.

The contract is :class:`psda.PairedBatchSampler`'s: every batch is a list of
``2 * batch_size`` ints, ``batch_size`` source indices in ``[0, n_source)``
then ``batch_size`` target indices offset by ``n_source`` (the index space of
``ConcatDataset([source_ds, target_ds])``); ``len()`` is exact; each sampler
has its own generator seeded by (seed, epoch) and never touches global random
state; the epoch advances after a complete pass and :meth:`set_epoch` sets it;
:meth:`state_dict` / :meth:`load_state_dict` resume mid-epoch exactly; batches
are interleaved over ranks as ``psda/schedule.go`` does
(rank r gets global batches r, r + R, ...); :meth:`update` recomputes the
plan from new features, in force from the next epoch (what
:class:`psda.refresh.FeatureRefresher` calls).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .._inputs import _as_pair, _check_bool, _check_int
from ..sampler import PairedBatchSampler, _Base, _check_ranks, _check_same_examples, _check_state_settings

__all__ = ["DABatchSampler"]

logger = logging.getLogger("psda")

_STATE_FORMAT = "psda.DABatchSampler/1"


class _Pass:
    """One walk through an epoch: the batches of this rank, fixed at its first batch."""

    def __init__(self, epoch: int, src: np.ndarray, tgt: np.ndarray, start: int, generation: int, plan: Dict[str, Any]):
        self.epoch, self.src, self.tgt, self.start, self.generation, self.plan = epoch, src, tgt, start, generation, plan
        self.num_batches = len(src)
        self.done = start


class DABatchSampler(_Base):
    """DABatchSampler is the base of psda's comparison samplers (see the module docstring).

    Args:
        source_features: (n_source, d) array or tensor.
        target_features: (n_target, d) array or tensor, same d.
        batch_size: k, examples per domain in a batch.
        seed: seeds the sampler's generator together with the epoch (any int,
            taken modulo 2**64); every rank must use the same seed.
        drop_last: with ``num_replicas > 1``, drop the batches that cannot be
            shared evenly (True) or let short ranks repeat batches from the
            start of the epoch (False, like ``DistributedSampler``). Every
            batch holds exactly k + k indices either way.
        num_replicas, rank: sharding over ranks; None means
            ``torch.distributed``'s world when initialised, else 1 and 0.
        discrepancy, kernel, gammas: the loss; samplers that use no kernel
            (uniform, k-means++) accept and ignore them, so that one set of
            options serves every name of :func:`psda.batch_sampler`.
    """

    #: Name in :data:`psda.SAMPLERS`; set by subclasses.
    name = "base"

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *, seed: int = 0,
                 drop_last: bool = True, num_replicas: Optional[int] = None, rank: Optional[int] = None,
                 discrepancy: Optional[str] = None, kernel: Optional[str] = None, gammas: Any = None) -> None:
        # discrepancy, kernel and gammas reach here only for samplers that use
        # no kernel (uniform, k-means++): accepted so that one set of options
        # serves every name of psda.batch_sampler, and checked all the same.
        if discrepancy is not None and discrepancy not in ("mmd", "coral"):
            raise ValueError(f"discrepancy = {discrepancy!r}: want 'mmd' or 'coral'")
        if kernel is not None and kernel not in ("linear", "rbf"):
            raise ValueError(f"kernel = {kernel!r}: want 'linear' or 'rbf'")
        self.batch_size = _check_int(batch_size, "batch_size", "32")
        if self.batch_size < 1:
            raise ValueError(f"batch_size = {self.batch_size}: must be >= 1 (examples per domain in a batch)")
        self.seed = _check_int(seed, "seed", "0") % (1 << 64)
        self.drop_last = _check_bool(drop_last, "drop_last")
        self.num_replicas, self.rank = _check_ranks(num_replicas, rank)
        s, t = self._features(source_features, target_features)
        self.n_source, self.n_target = len(s), len(t)
        self._check_sizes()
        if self._batches_per_rank()[1] < 1:
            total = self._batches_per_rank()[0]
            raise ValueError(
                f"batch_size = {self.batch_size} with num_replicas = {self.num_replicas} and drop_last=True: "
                f"{total} batch(es) per epoch, fewer than one per rank: use a smaller batch_size, "
                "fewer replicas, or drop_last=False")
        self._generation = 0
        self._reset(self._build(s, t))

    # -- what subclasses provide ------------------------------------------

    def _build(self, s: np.ndarray, t: np.ndarray) -> Dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _draw(self, plan: Dict[str, Any], rng: np.random.Generator, num_batches: int) -> Tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover - abstract

    def _config(self) -> Dict[str, Any]:
        """The sampler's own settings (for repr, pickling and the state's check)."""
        return {}

    def _min_rows(self) -> int:
        """The fewest rows per domain the sampler needs (k for samplers of distinct rows)."""
        return self.batch_size

    # -- set-up -------------------------------------------------------------

    @staticmethod
    def _features(source_features: Any, target_features: Any) -> Tuple[np.ndarray, np.ndarray]:
        s, t = _as_pair(source_features, target_features, ("source_features", "target_features"))
        return np.ascontiguousarray(s, dtype=np.float64), np.ascontiguousarray(t, dtype=np.float64)

    def _check_sizes(self) -> None:
        need = self._min_rows()
        if min(self.n_source, self.n_target) < need:
            raise ValueError(
                f"batch_size = {self.batch_size}: {self.name} draws {need} distinct rows per domain, but there are "
                f"{self.n_source} source and {self.n_target} target rows: use batch_size <= "
                f"{min(self.n_source, self.n_target)}")

    def _batches_per_rank(self) -> Tuple[int, int]:
        """(batches per epoch over all ranks, batches per rank)."""
        total = max(self.n_source, self.n_target) // self.batch_size
        r = self.num_replicas
        return total, (total // r if self.drop_last else -(-total // r))

    def _reset(self, plan: Dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._plan = plan
        self._pending: Optional[Dict[str, Any]] = None
        self._epoch = 0
        self._resume = 0
        self._generation += 1
        self._current: Optional[_Pass] = None

    # -- public API -----------------------------------------------------------

    # PairedBatchSampler's own: the same epoch counter, lock and resume rules.
    epoch = PairedBatchSampler.epoch
    set_epoch = PairedBatchSampler.set_epoch

    @property
    def plan(self) -> Dict[str, Any]:
        """The set-up in force (strata, partition, ...): a dict of arrays."""
        return self._plan

    def __len__(self) -> int:
        """Returns the exact number of batches per epoch on this rank."""
        return self._batches_per_rank()[1]

    def update(self, source_features: Any, target_features: Any) -> None:
        """Recomputes the set-up from new features of the same examples; used from the next epoch.

        Args:
            source_features: (n_source, d') features of the same source examples.
            target_features: (n_target, d') features of the same target examples.

        Raises:
            ValueError: if the numbers of examples changed.
        """
        s, t = self._features(source_features, target_features)
        _check_same_examples(self, len(s), len(t))
        plan = self._build(s, t)
        with self._lock:
            self._pending = plan

    def state_dict(self) -> Dict[str, Any]:
        """Returns the state needed to resume mid-epoch.

        A fresh sampler of the same class and settings given this state by
        :meth:`load_state_dict` yields exactly the batches this one has not yet
        handed out in the current epoch, then the following epochs. The state
        carries the plan in force (and a pending one from :meth:`update`), its
        arrays as bytes: plain Python types and bytes only, so
        ``torch.save``/``torch.load(weights_only=True)`` round-trip it.
        """
        with self._lock:
            pending = self._pending
        p = self._current
        if p is not None and p.done < p.num_batches:
            epoch, batches, plan = p.epoch, p.done, p.plan
        else:
            epoch, batches, plan = self._epoch, self._resume, self._plan
        return {
            "format": _STATE_FORMAT, "sampler": self.name, "epoch": int(epoch), "batches": int(batches),
            "seed": int(self.seed), "batch_size": self.batch_size, "drop_last": self.drop_last,
            "num_replicas": self.num_replicas, "rank": self.rank, "n_source": self.n_source,
            "n_target": self.n_target, "plan": _encode(plan), "pending_plan": None if pending is None else _encode(pending),
        }

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`; the next pass resumes it.

        Raises:
            ValueError: if the state is not from a sampler of this class, or was
                taken with other batch_size, drop_last, num_replicas, rank or
                dataset sizes (the error names the setting).
        """
        if not isinstance(state_dict, dict) or state_dict.get("format") != _STATE_FORMAT:
            raise ValueError(f"state_dict is not a {_STATE_FORMAT} state: pass the dict returned by state_dict()")
        if state_dict.get("sampler") != self.name:
            raise ValueError(f"state_dict is from a {state_dict.get('sampler')!r} sampler, this one is {self.name!r}: "
                             "load it into a sampler built by psda.batch_sampler with that name")
        _check_state_settings(self, state_dict)
        seed = _check_int(state_dict.get("seed"), "state_dict['seed']", "0") % (1 << 64)
        epoch = _check_int(state_dict.get("epoch"), "state_dict['epoch']", "0")
        batches = _check_int(state_dict.get("batches"), "state_dict['batches']", "0")
        nb = len(self)
        if not (0 <= batches <= nb and 0 <= epoch < 1 << 64):
            raise ValueError(f"state_dict has epoch = {epoch}, batches = {batches}: want epoch >= 0 and "
                             f"0 <= batches <= {nb} (batches per epoch): pass an unmodified state_dict()")
        plan = state_dict.get("plan")
        if not isinstance(plan, dict):
            raise ValueError("state_dict['plan'] is missing: pass an unmodified state_dict()")
        plan = _decode(plan)
        pending = state_dict.get("pending_plan")
        pending = None if pending is None else _decode(pending)
        self._reset(plan)
        self.seed = seed
        self._pending = pending
        self._epoch, self._resume = (epoch + 1, 0) if batches == nb else (epoch, batches)

    # -- iteration --------------------------------------------------------------

    def epoch_batches(self, epoch: int, plan: Optional[Dict[str, Any]] = None) -> Tuple[np.ndarray, np.ndarray]:
        """Returns epoch's batches over all ranks: (source, target) int64 arrays (batches, k), un-offset.

        A pure function of (seed, epoch, plan): the sampler's state is unchanged.
        """
        total = self._batches_per_rank()[0]
        rng = np.random.default_rng([self.seed, int(epoch)])
        src, tgt = self._draw(self._plan if plan is None else plan, rng, total)
        return np.asarray(src, dtype=np.int64), np.asarray(tgt, dtype=np.int64)

    def _begin(self) -> _Pass:
        with self._lock:
            if self._resume == 0 and self._pending is not None:
                self._plan, self._pending = self._pending, None
                logger.debug("epoch %d uses the updated %s plan", self._epoch, self.name)
            plan = self._plan
        src, tgt = self.epoch_batches(self._epoch, plan)
        total, per_rank = self._batches_per_rank()
        # Ranks interleave like psda/schedule.go and DistributedSampler.
        mine = (np.arange(per_rank) * self.num_replicas + self.rank) % total
        p = _Pass(self._epoch, src[mine], tgt[mine], self._resume, self._generation, plan)
        self._resume = 0
        self._current = p
        return p

    def __iter__(self) -> Iterator[List[int]]:
        """Yields this epoch's batches (the rest of the epoch after a resume).

        The epoch and its batches are fixed at the first batch request (a
        DataLoader with workers calls ``iter()`` twice per epoch).
        """
        p = self._begin()
        n_source = self.n_source
        for b in range(p.start, p.num_batches):
            batch = p.src[b].tolist() + (p.tgt[b] + n_source).tolist()
            p.done += 1
            if p.done == p.num_batches and p.generation == self._generation and self._epoch == p.epoch:
                self._epoch = p.epoch + 1
            yield batch

    # -- pickling (copy.deepcopy, spawn): the lock is rebuilt ------------------

    def __getstate__(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d.pop("_lock", None)
        d["_current"] = None
        st = self.state_dict()
        d["_plan"], d["_pending"] = _decode(st["plan"]), None if st["pending_plan"] is None else _decode(st["pending_plan"])
        d["_epoch"], d["_resume"] = (st["epoch"], st["batches"]) if st["batches"] < len(self) else (st["epoch"] + 1, 0)
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self._config().items())
        return (f"{type(self).__name__}(n_source={self.n_source}, n_target={self.n_target}, "
                f"batch_size={self.batch_size}{extra}, seed={self.seed}, drop_last={self.drop_last}, "
                f"num_replicas={self.num_replicas}, rank={self.rank}, epoch={self._epoch}, "
                f"batches_per_epoch={len(self)})")


def _encode(plan: Dict[str, Any]) -> Dict[str, Any]:
    """A plan (nested dicts of arrays and plain values) with every array as {dtype, shape, bytes}."""
    out: Dict[str, Any] = {}
    for key, v in plan.items():
        if isinstance(v, dict):
            out[key] = {"dict": _encode(v)}
        elif isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            out[key] = {"dtype": a.dtype.str, "shape": list(a.shape), "data": a.tobytes()}
        else:
            out[key] = {"value": v}
    return out


def _decode(enc: Dict[str, Any]) -> Dict[str, Any]:
    """The inverse of _encode."""
    out: Dict[str, Any] = {}
    try:
        for key, v in enc.items():
            if "dict" in v:
                out[key] = _decode(v["dict"])
            elif "data" in v:
                out[key] = np.frombuffer(v["data"], dtype=np.dtype(v["dtype"])).reshape(v["shape"]).copy()
            else:
                out[key] = v["value"]
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise ValueError(f"state_dict's plan is malformed ({e}): pass an unmodified state_dict()") from None
    return out


def stream(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    """count indices from back-to-back random permutations of range(n)."""
    reps = -(-count // n)
    return np.concatenate([rng.permutation(n) for _ in range(reps)])[:count]


def groups_to_batches(groups: List[np.ndarray], k: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Serves count batches of k rows from fixed groups of k or k + 1 rows.

    Groups are served in back-to-back random orders (each group once before
    any twice); a group of k + 1 rows leaves a random row out each time, so
    over epochs every row is used.
    """
    order = stream(rng, len(groups), count)
    out = np.empty((count, k), np.int64)
    for b, g in enumerate(order):
        rows = groups[g]
        out[b] = rows if len(rows) == k else rng.choice(rows, size=k, replace=False)
    return out


def strata_to_batches(strata: List[np.ndarray], count: int, rng: np.random.Generator) -> np.ndarray:
    """count batches with one row from each stratum: column h walks back-to-back permutations of stratum h."""
    cols = [st[stream(rng, len(st), count)] for st in strata]
    return np.stack(cols, 1).astype(np.int64)
