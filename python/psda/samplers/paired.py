"""PairedBatchSampler: the PSDA matching served as DataLoader batches.

Its plan is a :class:`psda.Matching`, computed by the Go core; one epoch's
batches come from the Go schedule (``psda/schedule.go``): the matching's
units (quadruplets, then single pairs) shuffled by a PCG seeded with (seed,
epoch), cut into batches and interleaved over the ranks. Everything else
(epochs, updates, state, views, pickling) is :class:`BatchSampler`'s.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .._inputs import _as_pair, _check_batch_fits, _check_config
from .._matching import DEFAULT_GAMMAS, Matching, _match_arrays
from .base import STATE_FORMAT, BatchSampler
from .imbalance import check_imbalance, match_with_uses, rotation

# The state format of PairedBatchSampler before every sampler shared one (read by load_state_dict).
_OLD_FORMAT = "psda.PairedBatchSampler/1"

__all__ = ["PairedBatchSampler", "check_matching"]


def check_matching(m: Matching, n_source: int, n_target: int, where: str) -> None:
    """Raises ValueError naming where unless m serves every example as PSDA's matchings do.

    The coverage rule (psda.match's output): P = max(n_source, n_target)
    pairs; each domain's rows appear floor(P / n) or ceil(P / n) times (so
    the larger domain's exactly once); with stages=2 the quadruplets and
    singles use every pair exactly once. O(P).
    """
    if (m.n_source, m.n_target) != (n_source, n_target):
        raise ValueError(f"{where} matches {m.n_source} source and {m.n_target} target examples, not this "
                         f"sampler's {n_source} and {n_target}")
    P = max(n_source, n_target)
    if m.pairs.shape != (P, 2):
        raise ValueError(f"{where} has {len(m.pairs)} pairs, not max(n_source, n_target) = {P}: pass an "
                         "unmodified state_dict()")
    for col, n, side in ((0, n_source, "source"), (1, n_target, "target")):
        rows = m.pairs[:, col]
        if rows.min() < 0 or rows.max() >= n:
            raise ValueError(f"{where} pairs a {side} row outside [0, {n}): pass an unmodified state_dict()")
        c = np.bincount(rows, minlength=n)
        lo, hi = P // n, -(-P // n)
        bad = np.flatnonzero((c < lo) | (c > hi))
        if len(bad):
            i = int(bad[0])
            raise ValueError(f"{where} serves {side} example {i} {int(c[i])} time(s) per epoch, where PSDA serves "
                             f"every {side} example {lo}{'' if lo == hi else f' or {hi}'} time(s): the matching was "
                             "edited; pass an unmodified state_dict()")
    if m.stages == 2:
        used = np.concatenate([m.quads.ravel(), m.singles.ravel()])
        if len(used) != P or (P and (used.min() < 0 or used.max() >= P or len(np.unique(used)) != P)):
            raise ValueError(f"{where}: its quadruplets and singles do not use each of its {P} pairs exactly once: "
                             "pass an unmodified state_dict()")


# Tags the generator of the extra uses' draws (psda.samplers.imbalance).
_DRAW_TAG = 0x1AB_A1


class PairedBatchSampler(BatchSampler):
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
    sets it. The contract (epochs, :meth:`update`, :meth:`state_dict`,
    :meth:`views`, ranks, threads) is :class:`psda.samplers.BatchSampler`'s,
    the same for every sampler of :data:`psda.SAMPLERS`.

    Threads: the sampler's own state is guarded by a lock, so :meth:`update`
    and :meth:`state_dict` may run in other threads while it is iterated. It
    is meant to be iterated by one loop at a time (as a DataLoader does, in
    its main process): iterators running concurrently in several threads
    each serve the epoch that was current when they began.

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
        drop_last: see :class:`psda.samplers.BatchSampler`: N // k batches
            (True) or ceil(N / k) with a short last one (False), N = P pairs.
        num_replicas: number of ranks sharing each epoch (distributed
            training); every rank gets ``len(sampler)`` batches. None means
            ``torch.distributed``'s world size when it is initialised, else 1.
        rank: this process's rank, ``0 <= rank < num_replicas``. None means
            ``torch.distributed``'s rank when it is initialised, else 0.
        solver: how the matching is computed, at construction and by
            :meth:`update`: ``"auto"`` (default), ``"dense"`` or ``"sparse"``,
            as for :func:`psda.match`.
        imbalance: when n_source != n_target, who chooses which rows of the
            smaller domain are used once more than the others: ``"cost"``
            (default, the paper's Stage 1; the epoch's batch means are then
            biased), ``"random"`` (drawn uniformly) or ``"systematic"``
            (drawn along a chain of its features, lower error); the drawn
            variants are unbiased over draws and re-drawn for every plan
            (construction and each :meth:`update`). See
            :mod:`psda.samplers.imbalance`. Balanced sizes ignore it.

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


    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *, stages: int = 2,
                 discrepancy: str = "mmd", kernel: str = "rbf", gammas: Optional[Sequence[float]] = DEFAULT_GAMMAS,
                 seed: int = 0, drop_last: bool = True, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, solver: str = "auto", imbalance: str = "cost") -> None:
        cfg = _check_config(batch_size, stages, discrepancy, kernel, gammas, solver)
        self._cfg = cfg
        self.imbalance = check_imbalance(imbalance)
        self._draws = 0  # plans drawn so far: the draw of the extra uses is seeded by (seed, draws)
        _, self.stages, self.discrepancy, self.kernel, self.gammas, self.solver = cfg
        self._schedule_cache: Optional[Tuple[Matching, int, Any]] = None
        super().__init__(source_features, target_features, cfg[0], seed=seed, drop_last=drop_last,
                         num_replicas=num_replicas, rank=rank)

    @property
    def name(self) -> str:  # type: ignore[override]
        """'paired' (stages=1) or 'double-paired' (stages=2), its name in psda.SAMPLERS."""
        return "paired" if self.stages == 1 else "double-paired"

    # The settings a plan records that must be this sampler's (_check_plan).
    _plan_keys: Tuple[str, ...] = ("stages", "discrepancy", "kernel", "batch_size", "imbalance")

    def _config(self) -> Dict[str, Any]:
        return {"stages": self.stages, "discrepancy": self.discrepancy, "kernel": self.kernel,
                "gammas": self.gammas, "solver": self.solver, "imbalance": self.imbalance}

    # -- set-up: the matching -------------------------------------------------

    def _check_batch_size(self, batch_size: Any) -> int:
        return int(batch_size)  # checked by _check_config, with the core's rules

    def _features(self, source_features: Any, target_features: Any) -> Tuple[np.ndarray, np.ndarray]:
        # The core converts nothing it need not and checks finiteness and
        # scale itself (psda.match's rules and messages).
        return _as_pair(source_features, target_features, ("source_features", "target_features"), check_finite=False)

    def _check_sizes(self) -> None:
        _check_batch_fits(self._cfg, self.n_source, self.n_target)
        from .. import _native

        _native.check_schedule(max(self.n_source, self.n_target), batch_size=self.batch_size,
                               num_replicas=self.num_replicas, drop_last=self.drop_last, stages=self.stages,
                               discrepancy=self.discrepancy)

    def _build(self, s: np.ndarray, t: np.ndarray) -> Matching:
        names = ("source_features", "target_features")
        if self.imbalance == "cost" or len(s) == len(t):
            return _match_arrays(s, t, self.batch_size, self.stages, self.discrepancy, self.kernel, self.gammas,
                                 solver=self.solver, names=names)
        # Its own generator: every rank, and a resumed run, draws the same uses for the same plan.
        rng = np.random.default_rng([self.seed, _DRAW_TAG, self._draws])
        u = rotation(self.seed, self._draws) if self.imbalance == "systematic" else None
        self._draws += 1
        m = match_with_uses(s, t, self.batch_size, self.stages, self.discrepancy, self.kernel, self.gammas,
                            imbalance=self.imbalance, rng=rng, u=u, solver=self.solver, names=names)
        return m

    def _check_plan(self, plan: Any, where: str) -> None:
        check_matching(plan, self.n_source, self.n_target, where)
        # The matching becomes .matching: its settings must be this sampler's,
        # or .stages and .matching would disagree.
        for key in self._plan_keys:
            if key == "kernel" and self.discrepancy != "mmd" or key == "imbalance" and self.n_source == self.n_target:
                continue
            if getattr(plan, key) != getattr(self, key):
                raise ValueError(
                    f"{where} was computed with {key} = {getattr(plan, key)!r} but this sampler has {key} = "
                    f"{getattr(self, key)!r}: construct the sampler with {key}={getattr(plan, key)!r}, the settings "
                    "of the one whose state was saved")

    def _plan_state(self, plan: Matching) -> Dict[str, Any]:
        return plan._to_state()

    def _plan_from_state(self, d: Any, where: str) -> Matching:
        if not isinstance(d, dict):
            raise ValueError(f"state_dict[{where!r}] is {type(d).__name__}, not a matching: pass an unmodified "
                             "state_dict()")
        return Matching._from_state(d, where)

    def state_dict(self) -> Dict[str, Any]:
        """As :meth:`BatchSampler.state_dict`, with ``draws``: the plans drawn so far (``imbalance`` other
        than ``"cost"``), so that a resumed run's updates draw what the original's would."""
        return {**super().state_dict(), "draws": int(self._draws)}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """As :meth:`BatchSampler.load_state_dict`; also reads the states of psda before the common
        format (``"psda.PairedBatchSampler/1"``: ``matching``/``pending_matching`` for the plans)."""
        if isinstance(state_dict, dict) and state_dict.get("format") == _OLD_FORMAT:
            old = dict(state_dict)
            m = old.pop("matching", None)
            state_dict = {**old, "format": STATE_FORMAT, "plan": m, "pending_plan": old.pop("pending_matching", None),
                          "sampler": "paired" if isinstance(m, dict) and m.get("stages") == 1 else "double-paired"}
        draws = state_dict.get("draws", 0) if isinstance(state_dict, dict) else 0
        if not isinstance(draws, int) or isinstance(draws, bool) or draws < 0:
            raise ValueError(f"state_dict['draws'] = {draws!r}: want an int >= 0 (plans drawn so far); pass an "
                             "unmodified state_dict()")
        super().load_state_dict(state_dict)
        self._draws = draws

    def digest(self) -> str:
        """The matching's fingerprint (see :meth:`BatchSampler.digest`)."""
        return self._plan.fingerprint

    # -- one epoch: the Go schedule ---------------------------------------------

    def _schedule(self, matching: Matching) -> Any:
        # Built in Go from the matching held there (Matching._go): the pairs
        # are not sent back.
        c = self._schedule_cache
        if c is None or c[0] is not matching or c[1] != self.seed:
            sched = matching._go().schedule(batch_size=self.batch_size, seed=self.seed, drop_last=self.drop_last,
                                            num_replicas=self.num_replicas)
            c = self._schedule_cache = (matching, self.seed, sched)
        return c[2]

    def _lens(self, plan: Matching) -> np.ndarray:
        return np.asarray(self._schedule(plan).batch_lens(self.rank), dtype=np.int64)

    def _epoch_rows(self, plan: Matching, epoch: int, start: int) -> Tuple[np.ndarray, np.ndarray]:
        flat = np.asarray(self._schedule(plan).fill(epoch, self.rank, start), dtype=np.int64)
        # fill lays each batch out as its L source rows, then its L target rows.
        lens = self._lens(plan)[start:]
        pos = np.arange(len(flat)) - np.repeat(np.concatenate([[0], np.cumsum(2 * lens)[:-1]]), 2 * lens)
        is_src = pos < np.repeat(lens, 2 * lens)
        return flat[is_src], flat[~is_src]

    def epoch_batches(self, epoch: int, plan: Any = None) -> Tuple[np.ndarray, np.ndarray]:
        """As :meth:`BatchSampler.epoch_batches`, from the Go schedule: global batch g is
        the (g // R)-th batch of rank g mod R. With drop_last=False and k not dividing P,
        the columns of the short last batch beyond its P mod k rows hold -1 (not served).
        O(P + batches · k)."""
        plan = self._plan if plan is None else plan
        total = self._batches_per_rank()[0]
        k, R = self.batch_size, self.num_replicas
        src, tgt = np.full((total, k), -1, np.int64), np.full((total, k), -1, np.int64)
        sched = self._schedule(plan)
        # Ranks at or past `total` serve only batches that wrap round to the
        # epoch's start (drop_last=False), which lower ranks serve too.
        for r in range(min(R, total)):
            flat = np.asarray(sched.fill(int(epoch) % (1 << 64), r, 0), dtype=np.int64)
            lens = np.asarray(sched.batch_lens(r), dtype=np.int64)
            at = 0
            for j, n in enumerate(lens.tolist()):
                g = j * R + r
                if g < total:
                    src[g, :n], tgt[g, :n] = flat[at:at + n], flat[at + n:at + 2 * n]
                at += 2 * n
        return src, tgt

    # -- PSDA's names for the plan ----------------------------------------------

    @property
    def matching(self) -> Matching:
        """The :class:`psda.Matching` in force: the one the current (or last) epoch uses."""
        return self._plan

    @property
    def pending_matching(self) -> Optional[Matching]:
        """The matching computed by :meth:`update` that the next epoch will use, or None."""
        return self._pending

    def __getstate__(self) -> Dict[str, Any]:
        st = super().__getstate__()
        st["attributes"]["_cfg"] = self._cfg
        return st

    def __setstate__(self, st: Dict[str, Any]) -> None:
        self._cfg = st["attributes"].pop("_cfg")
        self._schedule_cache = None
        super().__setstate__(st)


class RandomPairsSampler(PairedBatchSampler):
    """RandomPairsSampler: PSDA's batch structure with random units, the control for PSDA's optimisation.

    Its plan is a matching of the same shape as PSDA's (P = max(n_source,
    n_target) pairs, each row of the larger domain once and of the smaller
    floor(P / n) or ceil(P / n) times; with ``stages=2`` the pairs grouped
    into quadruplets), but drawn at random from ``seed`` instead of computed:
    the source-target pairs by two random permutations, the quadruplets by a
    random pairing of the pairs. The plan stays fixed for the run, as PSDA's
    matching does (:meth:`update` draws the same one again: it depends only on
    the seed and the sizes), and is served by the same Go schedule, so any
    difference from ``paired``/``double-paired`` is the optimisation's.
    Its matching's costs are NaN (not computed).

    Args:
        as :class:`PairedBatchSampler`; ``discrepancy``, ``kernel``,
        ``gammas`` and ``imbalance`` are checked and ignored (its extra uses
        are always drawn uniformly: its matching records ``"random"``),
        ``solver`` is not used.

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(20, 2))
        >>> s = psda.batch_sampler("random-pairs", x, x[:13], 4, num_replicas=1, rank=0)
        >>> len(s), s.matching.pairs.shape, s.matching.quads.shape
        (5, (20, 2), (10, 2))
    """

    uses_features = False  # only their number: the pairs are drawn from the seed
    _plan_keys = ("stages", "discrepancy", "kernel", "batch_size")

    @property
    def name(self) -> str:  # type: ignore[override]
        """'random-pairs', its name in psda.SAMPLERS."""
        return "random-pairs"

    def _build(self, s: np.ndarray, t: np.ndarray) -> Matching:
        from .base import stream

        rng = np.random.default_rng([self.seed, 0xC0_47_01])
        ns, nt = len(s), len(t)
        P = max(ns, nt)
        # Each row of a domain once before any twice: the counts PSDA's pairs have.
        pairs = np.stack([stream(rng, ns, P), stream(rng, nt, P)], axis=1)
        if self.stages == 2:
            order = rng.permutation(P)
            quads, singles = order[: P - P % 2].reshape(-1, 2), order[P - P % 2:]
        else:
            quads, singles = np.zeros((0, 2), np.int64), np.arange(P)
        nan = float("nan")
        return Matching(pairs=pairs, quads=quads, singles=singles, stage1_cost=nan, stage2_cost=nan,
                        stage2_bound=nan, n_source=ns, n_target=nt, batch_size=self.batch_size, stages=self.stages,
                        discrepancy=self.discrepancy, kernel=self.kernel, gammas=self.gammas, imbalance="random")
