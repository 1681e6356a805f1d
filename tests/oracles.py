"""NumPy transcriptions of the Go core's searches (psda/diverse): the tests' oracles.

Each follows the docstring of the psda.samplers function it mirrors, with
NumPy's generator for the visiting order, so it agrees with the Go search in
objective (not visit by visit). They were the ``engine="numpy"`` paths of
psda.samplers; they live here, where only tests use them.

Example:
    >>> import numpy as np
    >>> g, h = weighted_kmeans(np.array([[0.0], [0.1], [5.0], [5.1]]), np.ones(4), np.array([0, 1, 0, 1]), 2, 1,
    ...                        rng=np.random.default_rng(0))
    >>> g.tolist()
    [0, 0, 1, 1]
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

from psda.samplers.kmeans import _check, sse


def exchange(X: np.ndarray, w: np.ndarray, group: np.ndarray, cls: np.ndarray, centre: np.ndarray,
             omega: np.ndarray, *, sign: float = 1.0, passes: int = 10, partners: Optional[int] = None,
             rng: np.random.Generator, on_pass: Optional[Callable[[int, float], None]] = None) -> Tuple[np.ndarray, List[float]]:
    """psda.samplers.exchange.exchange in NumPy: returns (group, history of F: the start and after each pass).

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


def weighted_kmeans(X: np.ndarray, w: np.ndarray, group: np.ndarray, k: int, min_size: int, *, passes: int = 20,
                    rng: np.random.Generator, on_pass: Optional[Callable[[int, float], None]] = None
                    ) -> Tuple[np.ndarray, List[float]]:
    """psda.samplers.kmeans.weighted_kmeans in NumPy: the moves (4) from group."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    group = np.array(group, dtype=np.int64)
    _check(X, w, group, k, min_size)
    W = np.bincount(group, weights=w, minlength=k)
    S = np.zeros((k, X.shape[1]))
    np.add.at(S, group, w[:, None] * X)
    count = np.bincount(group, minlength=k)
    F = sse(X, w, group, k)
    history = [F]
    tol = 1e-12 * max(F, 1e-300)
    for p in range(passes):
        moves = 0
        for i in rng.permutation(len(X)):
            a = group[i]
            if count[a] <= min_size:
                continue
            d2 = ((X[i] - S / W[:, None]) ** 2).sum(1)
            dF = W * w[i] / (W + w[i]) * d2 - W[a] * w[i] / (W[a] - w[i]) * d2[a]
            dF[a] = 0.0
            b = int(np.argmin(dF))
            if dF[b] < -tol:
                S[a] -= w[i] * X[i]
                S[b] += w[i] * X[i]
                W[a] -= w[i]
                W[b] += w[i]
                count[a] -= 1
                count[b] += 1
                group[i] = b
                moves += 1
        # From scratch, so that rounding in the running sums cannot drift.
        W = np.bincount(group, weights=w, minlength=k)
        S = np.zeros((k, X.shape[1]))
        np.add.at(S, group, w[:, None] * X)
        F = sse(X, w, group, k)
        history.append(F)
        if on_pass is not None:
            on_pass(p + 1, F)
        if moves == 0:
            break
    return group, history


# -- k-DPP sampling (psda/diverse.SampleKDPP) in NumPy --------------------------


def log_esp(lam: np.ndarray, k: int) -> np.ndarray:
    """log e_l^m for l = 0..k, m = 0..N (the elementary symmetric polynomials of lam[:m])."""
    N = len(lam)
    with np.errstate(divide="ignore"):
        ll = np.log(lam)
    E = np.full((k + 1, N + 1), -np.inf)
    E[0, :] = 0.0
    for m in range(1, N + 1):
        E[1:, m] = np.logaddexp(E[1:, m - 1], ll[m - 1] + E[:-1, m - 1])
    return E


def kdpp_sample(lam: np.ndarray, v: np.ndarray, E: np.ndarray, k: int, nb: int, rng: np.random.Generator) -> np.ndarray:
    """nb independent k-DPP draws: (nb, k) distinct row indices (see the module docstring)."""
    N = len(lam)
    with np.errstate(divide="ignore"):
        ll = np.log(lam)
    # Step 1, vectorised over the nb draws.
    left = np.full(nb, k)
    chosen = np.zeros((nb, k), np.int64)
    rows = np.arange(nb)
    for m in range(N, 0, -1):
        act = left > 0
        if not act.any():
            break
        l = np.maximum(left, 1)
        p = np.exp(ll[m - 1] + E[l - 1, m - 1] - E[l, m])
        take = act & (rng.random(nb) < p)
        chosen[rows[take], k - left[take]] = m - 1
        left -= take
    out = np.empty((nb, k), np.int64)
    n = v.shape[0]
    for r in range(nb):
        V = v[:, chosen[r]]
        norm2 = np.einsum("ij,ij->i", V, V)
        C = np.zeros((k, n))
        for t in range(k):
            p = np.maximum(norm2, 0.0)
            cum = np.cumsum(p)
            i = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), n - 1)
            while p[i] <= 0.0:  # rounding at a boundary: step back to a row of positive weight
                i -= 1
            out[r, t] = i
            # Gram-Schmidt: c_t(.) = (K(., i) - sum_s c_s(.) c_s(i)) / sqrt(norm2(i)).
            c = (V @ V[i] - C[:t].T @ C[:t, i]) / np.sqrt(p[i])
            C[t] = c
            norm2 = norm2 - c * c
            norm2[out[r, : t + 1]] = 0.0
    return out
