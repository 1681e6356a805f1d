"""Serving fixed batches without bias: the rows that do not fit rotate every epoch.

Anticlustering and ORDERED fix their batches at set-up. When k does not
divide a domain's n, or the domains differ in size, some rows do not fit the
fixed batches: N mod k rows sit out, or the smaller domain's rows fill the
batches' places with repeats. Left fixed, those rows would be served never
(or always twice), and the batch means biased. Every epoch these helpers
re-draw them, so that over epochs each row of a domain is served equally
often in expectation (the inclusion frequencies tests/test_samplers.py
measures):

- :func:`sit_out`: of the G k + r rows of a partition (G batches of k, r
  spare), a uniform random r-subset sits out; the spare rows that come in take
  the places of the batch rows that go out. Each row sits out with
  probability r / (G k + r) exactly; r swaps per epoch, the rest of the
  optimised batches unchanged.
- :func:`redraw_extras`: the places of a domain that holds fewer rows than the
  batches (each row once, plus "extra" places) get fresh rows every epoch
  (each row once before any twice), then duplicate rows within a batch are
  swapped apart among the extra places. Each row's expected count is G k / n.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from .base import stream

__all__ = ["sit_out", "redraw_extras", "check_partition"]


def sit_out(batches: np.ndarray, spare: np.ndarray, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
    """Returns (batches with this epoch's rows, the r rows that sit out); see the module docstring. O(G k)."""
    G, k = batches.shape
    r = len(spare)
    if r == 0:
        return batches, spare
    flat = np.concatenate([batches.ravel(), spare])
    out = rng.choice(len(flat), size=r, replace=False)  # positions whose rows sit out this epoch
    gone = out[out < G * k]  # batch places left empty
    mask = np.ones(r, bool)
    mask[out[out >= G * k] - G * k] = False
    coming = rng.permutation(G * k + np.flatnonzero(mask))  # spare rows that come in
    new = flat[: G * k].copy()
    new[gone] = flat[coming]
    return new.reshape(G, k), flat[out]


def redraw_extras(batches: np.ndarray, extra: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Returns batches with fresh rows in the extra places; see the module docstring. O(G k) plus the repairs."""
    e = int(extra.sum())
    if e == 0:
        return batches
    out = batches.copy()
    out[extra] = stream(rng, n, e)
    places = np.flatnonzero(extra.ravel())
    k = batches.shape[1]
    flat = out.ravel()
    for b in np.flatnonzero([len(set(row.tolist())) < k for row in out]):
        # Swap each repeated extra row of batch b with an extra place of
        # another batch where neither row is already present. Swaps keep the
        # multiset of rows, so the expected counts stay equal.
        seen = set()
        for p in range(b * k, b * k + k):
            if flat[p] not in seen:
                seen.add(int(flat[p]))
                continue
            if not extra.ravel()[p]:
                continue
            for q in rng.permutation(places)[:64]:
                c = q // k
                if c == b:
                    continue
                row_c = set(flat[c * k : c * k + k].tolist())
                if int(flat[q]) not in seen and int(flat[p]) not in row_c:
                    flat[p], flat[q] = flat[q], flat[p]
                    seen.add(int(flat[p]))
                    break
            # else: no partner found among 64 tries: the batch keeps a repeat
    return out


def check_partition(rows: np.ndarray, n: int, where: str, extra: np.ndarray = None) -> None:
    """Raises ValueError naming where unless rows (outside the extra places) use each of range(n) exactly once
    and every row is in [0, n)."""
    from .base import check_rows

    rows = np.asarray(rows).ravel()
    check_rows(rows, n, where)
    base = rows if extra is None else rows[~np.asarray(extra, bool).ravel()]
    c = np.bincount(base, minlength=n)
    if len(base) != n or (c != 1).any():
        i = int(np.flatnonzero(c != 1)[0]) if (c != 1).any() else 0
        raise ValueError(f"{where} serves row {i} {int(c[i])} time(s) where every one of the {n} rows must appear "
                         "exactly once: the plan was edited; pass an unmodified state_dict()")
