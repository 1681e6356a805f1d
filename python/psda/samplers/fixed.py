"""Serving fixed batches without bias: the rows that do not fit move every epoch.

Anticlustering and ORDERED fix their batches at set-up. When k does not
divide a domain's n, or the domains differ in size, some rows do not fit the
fixed batches: n mod k rows sit out, or the smaller domain's rows fill the
batches' places with repeats. Left fixed, those rows would be served never
(or always twice), and the batch means biased. Every epoch these helpers
re-draw them, so that over epochs each row of a domain is served equally
often in expectation (the inclusion frequencies tests/test_contract.py
measures), while disturbing the optimised batches as little as they can:

- the rows are drawn by *systematic sampling along a chain*: ``chain`` orders
  the domain's rows so that neighbours are similar (the leaves of balanced
  principal-direction cuts); m rows are taken at chain positions
  floor((j + U) n / m), j < m, U uniform in [0, 1). Each row is taken with
  probability m / n exactly, and the rows taken are spread over the whole
  domain, so that their mean is close to the domain's (a uniform random
  subset's is not: docs/samplers.md, "Unbiased over epochs", measures it);
- :func:`sit_out`: of the G k + r rows of a partition (G batches of k, r
  spare), r sit out as above; the spare rows that come in take the places of
  the batch rows that go out, each the place of the most similar leaving row
  (a minimum-cost assignment on squared distances in the plan's features).
  Each row sits out with probability r / (G k + r);
- :func:`redraw_extras`: the places of a domain that holds fewer rows than the
  batches (each row once, plus "extra" places) get every row floor(e / n)
  times plus e mod n rows drawn as above, each placed where the most similar
  old extra row was; repeated rows within a batch are then swapped apart
  among the extra places. Each row's expected count is G k / n.

Both keep the multiset of served rows' inclusion probabilities equal, whatever
the assignment and swaps do, since those only move rows between places.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from .base import stream

__all__ = ["systematic", "sit_out", "redraw_extras", "check_partition"]


def systematic(chain: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """m rows of chain at positions floor((j + U) n / m): each row with probability m / n exactly (m <= n)."""
    n = len(chain)
    if m == 0:
        return np.zeros(0, np.int64)
    u = rng.random()
    return np.asarray(chain, np.int64)[np.floor((np.arange(m) + u) * n / m).astype(np.int64)]


def _closest(old: np.ndarray, new: np.ndarray, x) -> np.ndarray:
    """new reordered so that new[i] is paired with old[i] at least total squared distance in x (x None: as is)."""
    if x is None or len(new) < 2 or len(new) > _ASSIGN_LIMIT:
        return new
    from .. import linear_sum_assignment

    c = ((x[old][:, None, :] - x[new][None, :, :]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(c)
    out = np.empty_like(new)
    out[rows] = new[cols]
    return out


# Above this many rows to place, the pairing is left as drawn: the assignment is O(m^3).
_ASSIGN_LIMIT = 2000


def sit_out(batches: np.ndarray, spare: np.ndarray, rng: np.random.Generator, chain: np.ndarray,
            x: np.ndarray = None) -> Tuple[np.ndarray, np.ndarray]:
    """Returns (batches with this epoch's rows, the r rows that sit out); see the module docstring.

    chain orders all G k + r rows; x (rows' features, optional) pairs each
    incoming spare row with the most similar leaving one. O(G k + r^3).
    """
    G, k = batches.shape
    r = len(spare)
    if r == 0:
        return batches, spare
    flat = np.concatenate([batches.ravel(), spare])
    where = np.empty(int(flat.max()) + 1, np.int64)
    where[flat] = np.arange(len(flat))
    out = where[systematic(chain, r, rng)]  # places whose rows sit out this epoch
    gone = out[out < G * k]  # batch places left empty
    mask = np.ones(r, bool)
    mask[out[out >= G * k] - G * k] = False
    coming = G * k + np.flatnonzero(mask)  # places of the spare rows that come in
    new = flat[: G * k].copy()
    new[gone] = _closest(flat[gone], flat[coming], x)
    return new.reshape(G, k), flat[out]


def redraw_extras(batches: np.ndarray, extra: np.ndarray, n: int, rng: np.random.Generator, chain: np.ndarray,
                  x: np.ndarray = None) -> np.ndarray:
    """Returns batches with fresh rows in the extra places; see the module docstring."""
    e = int(extra.sum())
    if e == 0:
        return batches
    out = batches.copy()
    full, part = divmod(e, n)
    fresh = np.concatenate([np.tile(np.arange(n), full), systematic(chain, part, rng)])
    out[extra] = _closest(batches[extra], rng.permutation(fresh), x)
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
