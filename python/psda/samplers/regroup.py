"""Re-grouping the rest of an epoch: what ``update(..., effective="batch")`` serves.

When a refresh takes effect at the next batch (psda.samplers.base.BatchSampler.update),
the batches of the running epoch not yet handed out on this rank keep exactly the
rows they would have served (per domain the same multiset), re-grouped by a fresh
sampler of the same kind and options built on those rows' new features (balanced,
one replica, ``drop_last=False``, seeded by (seed, epoch, batch, REST_TAG)). This
module is that re-grouping, a pure function of the sampler's settings and the rows;
the base class decides when it runs and installs its result under its lock.
See docs/method.md, "A refresh at the next batch".
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["REST_TAG", "regroup"]

logger = logging.getLogger("psda")

#: Tags the seed of the fresh sampler that re-groups a rest: (seed, epoch, batch, REST_TAG).
REST_TAG = 0x2E57


def regroup(sampler: Any, s: np.ndarray, t: np.ndarray, src: np.ndarray, tgt: np.ndarray, lens: np.ndarray,
            epoch: int, b: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """Returns the rows src, tgt (this rank's batches b.. of epoch, of sizes lens) re-grouped.

    A fresh sampler of ``sampler``'s kind and options on the features
    s[src], t[tgt] lays out the same rows in new batches; its short batch (if
    any) goes where the old schedule had it. Returns None, saying why on the
    ``psda`` logger (INFO), where the re-grouping cannot keep exactly the rows
    served: kinds whose batches are independent draws (``sampler.regroups``
    False), a rest the kind refuses, batch sizes that do not fit, or copies of
    a row in one batch that cannot be swapped apart for kinds of distinct rows
    (a WARNING the first time for a sampler, INFO after).

    Args:
        sampler: the psda.samplers.BatchSampler whose epoch is re-formed.
        s, t: the new (n_source, d) and (n_target, d) features.
        src, tgt: the rest's source and target rows, flat, un-offset, batch after batch.
        lens: the rest's batch sizes (rows per domain).
        epoch, b: the epoch and its first re-formed batch (they seed the fresh sampler).

    Example:
        >>> import numpy as np, psda
        >>> from psda.samplers.regroup import regroup
        >>> x = np.random.default_rng(0).normal(size=(32, 2))
        >>> smp = psda.batch_sampler("paired", x, x, 8, num_replicas=1, rank=0)
        >>> src, tgt = smp.epoch_batches(0)
        >>> rest = regroup(smp, x, x + 1, src[2:].ravel(), tgt[2:].ravel(), np.array([8, 8]), 0, 2)
        >>> sorted(rest[0].tolist()) == sorted(src[2:].ravel().tolist())
        True
    """

    def keep(why: str) -> None:
        # A warning the first time for this sampler (the update then takes effect at the next epoch
        # only, which the caller asked otherwise), INFO after that.
        first = not getattr(sampler, "_warned_keep", False)
        sampler._warned_keep = True
        logger.log(logging.WARNING if first else logging.INFO,
                   "%s: the rest of epoch %d (from batch %d) keeps its batches: %s", sampler.name, epoch, b, why)

    if not sampler.regroups:
        keep("its batches are independent draws from the whole domain, not a set of rows to re-group")
        return None
    seed = int(np.random.SeedSequence([sampler.seed, int(epoch), int(b), REST_TAG]).generate_state(1, np.uint64)[0])
    try:
        fresh = type(sampler)(s[src], t[tgt], sampler.batch_size, **sampler._options(), seed=seed, drop_last=False,
                          num_replicas=1, rank=0)
    except ValueError as e:
        keep(f"a {sampler.name} sampler refuses its {len(src)} rows per domain ({e})")
        return None
    fs, ft = fresh._epoch_rows(fresh._plan, 0, 0)
    flens = fresh._lens(fresh._plan)
    if sorted(flens.tolist()) != sorted(lens.tolist()):
        keep(f"the re-grouped batch sizes {sorted(set(flens.tolist()))} do not fit the rest's")
        return None
    # The fresh batches in order, each at the next place of its size: the
    # short one (drop_last=False) where the old schedule had it.
    fo = np.concatenate([[0], np.cumsum(flens)])
    queue: Dict[int, List[int]] = {}
    for i, n in enumerate(flens.tolist()):
        queue.setdefault(n, []).append(i)
    order = [queue[n].pop(0) for n in lens.tolist()]
    pick = np.concatenate([np.arange(fo[i], fo[i + 1]) for i in order]) if order else np.zeros(0, np.int64)
    new_s, new_t = src[fs[pick]], tgt[ft[pick]]
    from .registry import REGISTRY

    distinct = REGISTRY[sampler.name].distinct_rows if sampler.name in REGISTRY else False
    for old, new, side in ((src, new_s, "source"), (tgt, new_t, "target")):
        if not np.array_equal(np.sort(old), np.sort(new)):
            keep(f"the re-grouped batches would not serve the same {side} rows")
            return None
    # The kinds that promise k distinct rows per batch keep that promise: the
    # fresh sampler saw a row the rest serves twice as two rows, and may have
    # put both in one batch; such copies are swapped apart (rows only move
    # between batches, so the rows served stay the same).
    if distinct:
        for side in ("source", "target"):
            old, new = (src, new_s) if side == "source" else (tgt, new_t)
            if _repeats(new, lens) and not _repeats(old, lens):
                fixed = _separate_repeats(new, lens)
                if fixed is None:
                    keep(f"the re-grouped batches would repeat a {side} row within a batch")
                    return None
                new[:] = fixed
    return new_s, new_t


def _repeats(rows: np.ndarray, lens: np.ndarray) -> bool:
    """Whether some batch (consecutive runs of lens rows) holds a row twice."""
    if len(rows) < 2:
        return False
    batch = np.repeat(np.arange(len(lens)), lens)
    o = np.lexsort((rows, batch))
    return bool(((rows[o][1:] == rows[o][:-1]) & (batch[o][1:] == batch[o][:-1])).any())


def _separate_repeats(rows: np.ndarray, lens: np.ndarray) -> Optional[np.ndarray]:
    """rows (batches of lens, consecutive) with every repeat within a batch swapped with a row of a later
    (else earlier) batch that holds neither; None if one cannot be. Deterministic; O(repeats * rows)."""
    from collections import Counter

    batches = [list(b) for b in np.split(np.asarray(rows), np.cumsum(lens)[:-1])] if len(lens) else []
    held = [Counter(b) for b in batches]
    for i, b in enumerate(batches):
        seen: set = set()
        for p, r in enumerate(b):
            if r not in seen:  # the first copy stays
                seen.add(r)
                continue
            for j in list(range(i + 1, len(batches))) + list(range(i)):
                if held[j][r]:
                    continue
                q = next((q for q, x in enumerate(batches[j]) if not held[i][x]), None)
                if q is not None:
                    x = batches[j][q]
                    b[p], batches[j][q] = x, r
                    held[i][r] -= 1
                    held[i][x] += 1
                    held[j][x] -= 1
                    held[j][r] += 1
                    seen.add(x)
                    break
            else:
                return None
    return np.asarray([r for b in batches for r in b], dtype=np.int64)
