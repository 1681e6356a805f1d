"""Weighted kernel k-means with a minimum cluster size: ORDERED's strata.

ORDERED (Napoli & White, arXiv 2605.05084) forms its strata "via weighted
kernel k-means with a minimum cluster size". In the kernel's feature map
phi (psda.samplers.features) the weighted kernel k-means objective
(Dhillon, Guan & Kulis, "Kernel k-means, spectral clustering and normalized
cuts", KDD 2004, eq. 1) is

    SSE = sum_h sum_{i in h} w_i ||phi_i - c_h||^2,   c_h = sum_{i in h} w_i phi_i / W_h      (3)

and it is minimised by single-row moves (Hartigan & Wong, AS 136, 1979,
weighted): row i of cluster a, if a holds more than ``min_size`` rows, moves
to the cluster b that lowers (3) most,

    dSSE = W_b w_i / (W_b + w_i) ||phi_i - c_b||^2 - W_a w_i / (W_a - w_i) ||phi_i - c_a||^2   (4)

when dSSE < 0. Every move lowers (3) and keeps every cluster at or above
``min_size`` rows. The Go core (psda/diverse.WeightedKMeans) runs the same
search with progress and Ctrl-C; tests/oracles.py holds the NumPy reference.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

__all__ = ["sse", "weighted_kmeans"]


def sse(X: np.ndarray, w: np.ndarray, group: np.ndarray, k: int) -> float:
    """Evaluates (3) from scratch: O(m D)."""
    W = np.bincount(group, weights=w, minlength=k)
    S = np.zeros((k, X.shape[1]))
    np.add.at(S, group, w[:, None] * X)
    C = S / np.where(W > 0, W, 1.0)[:, None]
    return float((w * ((X - C[group]) ** 2).sum(1)).sum())


def _check(X, w, group, k, min_size):
    m = len(X)
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k = {k!r}: want an int >= 1 (clusters)")
    if not isinstance(min_size, (int, np.integer)) or not 1 <= min_size <= m // k:
        raise ValueError(f"min_size = {min_size!r}: want 1 <= min_size <= m // k = {m // k} ({m} rows, {k} clusters)")
    if w.shape != (m,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("w: want one finite weight > 0 per row")
    if group.shape != (m,) or group.min() < 0 or group.max() >= k:
        raise ValueError(f"group: want one cluster in [0, {k}) per row")
    small = np.flatnonzero(np.bincount(group, minlength=k) < min_size)
    if len(small):
        raise ValueError(f"group: cluster {int(small[0])} starts with fewer than min_size = {min_size} rows")


def weighted_kmeans(X: np.ndarray, w: np.ndarray, group: np.ndarray, k: int, min_size: int, *, passes: int = 20,
                    rng: np.random.Generator, on_pass: Optional[Callable[[int, float], None]] = None) -> Tuple[np.ndarray, List[float]]:
    """Minimises (3) by the moves (4) from ``group``; returns (group, SSE at the start and after each pass).

    Args:
        X: (m, D) features phi. w: (m,) weights > 0. group: (m,) starting
            clusters in [0, k), each with at least min_size rows (not modified).
        k: clusters. min_size: the fewest rows a cluster may hold.
        passes: most passes over the rows (a pass that moves nothing ends the search).
        rng: the generator for the visiting order (and the Go core's seed).
        on_pass: called with (pass, SSE) after each pass (the Go core reports NaN
            for SSE while it runs: the history holds the values).

    Example:
        >>> import numpy as np
        >>> x = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [9.0]])
        >>> g, h = weighted_kmeans(x, np.ones(6), np.array([0, 1, 0, 1, 0, 1]), 2, 2,
        ...                        rng=np.random.default_rng(0))
        >>> g.tolist(), h[-1] < h[0]
        ([0, 0, 0, 1, 1, 1], True)
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    group = np.array(group, dtype=np.int64)
    _check(X, w, group, k, min_size)
    from .. import _native

    return _native.kmeans(X, w, group, k, min_size, passes=passes, seed=int(rng.integers(1 << 63)), on_pass=on_pass)
