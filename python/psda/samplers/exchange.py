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
             rng: np.random.Generator, on_pass: Optional[Callable[[int, float], None]] = None,
             engine: str = "auto") -> Tuple[np.ndarray, List[float]]:
    """Runs the exchange search; returns (group, history of F: the start and after each pass).

    ``engine="go"`` (the default "auto" when the compiled core has it) runs
    the Go core's psda/diverse.Exchange: the same search with the Go
    generator's visiting order, Ctrl-C and per-pass progress; "numpy" runs the
    reference implementation below.

    Args:
        X: (m, D) slot features. w: (m,) slot weights. group: (m,) initial
            group of each slot (not modified). cls: (m,) exchange class; slots
            swap only within a class. centre: (G, D) the c_g. omega: (G,).
        sign: +1 minimises F, -1 maximises it.
        passes: most passes over the slots.
        partners: candidates per slot: all of its class (None) or this many
            drawn at random from it per visit (the "fast" variant of
            Papenberg & Klau: fewer candidates, same moves).
        rng: the generator for the visiting order and the candidate draws.
        on_pass: called with (pass number, F) after each pass (progress).
    """
    if engine not in ("auto", "go", "numpy"):
        raise ValueError(f"engine = {engine!r}: want 'auto', 'go' or 'numpy'")
    if engine != "numpy":
        from . import _core

        if _core.available():
            return _core.exchange(X, w, group, cls, centre, omega, sign=sign, passes=passes, partners=partners,
                                  seed=int(rng.integers(1 << 63)), on_pass=on_pass)
        if engine == "go":
            raise RuntimeError("engine = 'go': the compiled psda core has no psda_exchange_f64; rebuild psda")
    X = np.ascontiguousarray(X, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    group = np.array(group, dtype=np.int64)
    omega = np.asarray(omega, dtype=np.float64)
    E = -np.asarray(centre, dtype=np.float64).copy()
    np.add.at(E, group, w[:, None] * X)
    members = {}
    for c in np.unique(cls):
        members[c] = np.flatnonzero(cls == c)
    wX = w[:, None] * X
    F = float(np.einsum("g,gd,gd->", omega, E, E))
    history = [F]
    scale = max(abs(F), float(np.einsum("i,id,id->", omega[group] * w * w, X, X)), 1e-300)
    for p in range(passes):
        swaps = 0
        for i in rng.permutation(len(X)):
            J = members[cls[i]]
            if partners is not None and len(J) > partners:
                J = J[rng.integers(len(J), size=partners)]
            a = group[i]
            J = J[group[J] != a]
            if len(J) == 0:
                continue
            b = group[J]
            delta = wX[J] - wX[i]
            dd = np.einsum("jd,jd->j", delta, delta)
            dF = omega[a] * (2.0 * (delta @ E[a]) + dd) + omega[b] * (dd - 2.0 * np.einsum("jd,jd->j", E[b], delta))
            best = int(np.argmin(sign * dF))
            if sign * dF[best] < -1e-12 * scale:
                j, bj = J[best], b[best]
                E[a] += delta[best]
                E[bj] -= delta[best]
                group[i], group[j] = bj, a
                swaps += 1
        # From scratch, so that rounding in the running updates cannot drift.
        E = -np.asarray(centre, dtype=np.float64).copy()
        np.add.at(E, group, wX)
        F = float(np.einsum("g,gd,gd->", omega, E, E))
        history.append(F)
        if on_pass is not None:
            on_pass(p + 1, F)
        if swaps == 0:
            break
    return group, history
