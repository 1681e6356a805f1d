"""The pairwise exchange search behind anticlustering, VaRDASS and ORDERED.

All three optimise a partition of "slots" (rows of a feature matrix X, each
with a weight w_i) into groups g with sizes held fixed, for an objective of
the form

    F = sum_g omega_g || sum_{i in g} w_i X_i - c_g ||^2          (1)

- anticlustering (Papenberg & Klau 2021, k-means criterion): X centred,
  w = 1, omega_g = 1/|g|^2, c = 0, minimise: F = sum_g ||mean_g - mean||^2,
  which for equal group sizes is the total sum of squares minus the
  within-group sum of squares over k, so minimising F maximises within-group
  diversity;
- VaRDASS strata: X centred, w = 1, omega_h = 1/|h|, c = 0, *maximise*:
  sum_h SSE_h = sum_i ||X_i||^2 - F, so maximising F minimises the
  within-stratum sum of squares;
- ORDERED: source slots w = +1/k, target slots w = -1/k, c = 0 on centred
  features of each domain, omega = 1 for batches and 0 for the spare group:
  F = sum_b ||(mean_s,b - mu_s) - (mean_t,b - mu_t)||^2, the summed linear
  MMD error of the epoch's batches in the feature space.

The search is Papenberg & Klau's exchange method: visit the slots in random
order; for slot i in group a, evaluate the swap of i with every candidate j of
the same exchange class in another group b, with
delta = w_j X_j - w_i X_i,

    dF = omega_a (2 E_a . delta + ||delta||^2) + omega_b (-2 E_b . delta + ||delta||^2)   (2)

where E_g = sum_{i in g} w_i X_i - c_g, and carry out the best swap if it
improves F. A pass visits every slot once; passes repeat until one makes no
swap or ``passes`` is reached. F is recomputed from scratch after each pass
(the history returned), so rounding in the running updates cannot drift.
Time O(m |J| D) per pass for m slots, |J| candidates and D features.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

__all__ = ["objective", "exchange"]


def objective(X: np.ndarray, w: np.ndarray, group: np.ndarray, centre: np.ndarray, omega: np.ndarray) -> float:
    """Evaluates (1) from scratch: O(m D)."""
    E = -np.asarray(centre, dtype=np.float64).copy()
    np.add.at(E, group, w[:, None] * X)
    return float(np.einsum("g,gd,gd->", omega, E, E))


def exchange(X: np.ndarray, w: np.ndarray, group: np.ndarray, cls: np.ndarray, centre: np.ndarray,
             omega: np.ndarray, *, sign: float = 1.0, passes: int = 10, partners: Optional[int] = None,
             rng: np.random.Generator, on_pass: Optional[Callable[[int, float], None]] = None
             ) -> Tuple[np.ndarray, List[float]]:
    """Runs the exchange search in the Go core (psda/diverse.Exchange); returns (group, history of F).

    The search runs with the GIL released; Ctrl-C cancels it
    (KeyboardInterrupt) and ``on_pass`` is called after every pass, as
    :func:`psda.match` reports progress. tests/oracles.py holds a NumPy
    transcription of the same search, the tests' reference.

    Args:
        X: (m, D) slot features. w: (m,) slot weights. group: (m,) initial
            group of each slot (not modified). cls: (m,) exchange class; slots
            swap only within a class. centre: (G, D) the c_g. omega: (G,).
        sign: +1 minimises F, -1 maximises it.
        passes: most passes over the slots.
        partners: candidates per slot: all of its class (None) or this many
            drawn at random from it per visit (the "fast" variant of
            Papenberg & Klau: fewer candidates, same moves).
        rng: seeds the core's generator (visiting order, candidate draws).
        on_pass: called with (pass number, NaN) after each pass (progress;
            the history holds the values).

    Example:
        >>> import numpy as np
        >>> X = np.array([[0.0], [0.0], [1.0], [1.0]])
        >>> g, h = exchange(X - 0.5, np.ones(4), np.array([0, 0, 1, 1]), np.zeros(4, np.int64),
        ...                 np.zeros((2, 1)), np.full(2, 0.25), rng=np.random.default_rng(0))
        >>> h[-1] < h[0]
        True
    """
    from .. import _native

    return _native.exchange(X, w, group, cls, centre, omega, sign=sign, passes=passes, partners=partners,
                            seed=int(rng.integers(1 << 63)), on_pass=on_pass)
