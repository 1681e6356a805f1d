"""Explicit feature maps of the discrepancies' kernels, for the set-up searches.

The stratification and exchange searches (VaRDASS, ORDERED, anticlustering)
minimise squared norms of sums of feature vectors phi(x) whose inner product
is the discrepancy's kernel:

- linear MMD: phi(x) = x (exact);
- RBF-mixture MMD, kappa(x, y) = sum_g exp(-g ||x - y||^2): random Fourier
  features (Rahimi & Recht 2007), ``rff_per_gamma`` per bandwidth, drawn once
  from the sampler's seed and shared by both domains (an approximation whose
  error shrinks as 1/sqrt(rff_per_gamma); the variance itself is always
  measured with the exact kernel by psda.variance);
- CORAL: the covariance is the mean of (x - mu)(x - mu)^T, so phi(x) =
  vec((x - mu)(x - mu)^T) with each domain centred at its own mean (exact,
  the upper triangle with off-diagonal entries scaled by sqrt 2, while
  d(d + 1)/2 <= max_dim; beyond that, random tensor features
  (r^T x)(s^T x)/sqrt(D), whose inner products are unbiased for
  ((x - mu)^T (y - mu))^2).
"""

from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

__all__ = ["feature_map", "pack_groups", "unpack_groups"]


def feature_map(s: np.ndarray, t: np.ndarray, discrepancy: str, kernel: str, gammas: Sequence[float], seed: int,
                rff_per_gamma: int = 128, max_dim: int = 1024) -> Tuple[np.ndarray, np.ndarray]:
    """Returns (phi(source), phi(target)) for the discrepancy's kernel; see the module docstring."""
    if discrepancy == "mmd" and kernel == "linear":
        return s, t
    rng = np.random.default_rng([int(seed) % (1 << 64), 0x5eed])
    d = s.shape[1]
    if discrepancy == "mmd":
        ws, bs = [], []
        for g in gammas:
            # exp(-g ||x - y||^2) is the Gaussian kernel with sigma^2 = 1/(2g):
            # frequencies ~ N(0, 2g I).
            ws.append(rng.normal(0.0, np.sqrt(2.0 * g), size=(d, rff_per_gamma)))
            bs.append(rng.uniform(0.0, 2 * np.pi, size=rff_per_gamma))
        w, b = np.concatenate(ws, 1), np.concatenate(bs)
        scale = np.sqrt(2.0 / rff_per_gamma)
        return scale * np.cos(s @ w + b), scale * np.cos(t @ w + b)
    sc, tc = s - s.mean(0), t - t.mean(0)
    if d * (d + 1) // 2 <= max_dim:
        iu = np.triu_indices(d)
        wt = np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
        return (sc[:, iu[0]] * sc[:, iu[1]]) * wt, (tc[:, iu[0]] * tc[:, iu[1]]) * wt
    r = rng.normal(size=(d, max_dim))
    q = rng.normal(size=(d, max_dim))
    scale = 1.0 / np.sqrt(max_dim)
    return scale * (sc @ r) * (sc @ q), scale * (tc @ r) * (tc @ q)


def pack_groups(groups) -> dict:
    """A list of index arrays as two flat arrays (rows, sizes), for plans and states."""
    return {"rows": np.concatenate(groups).astype(np.int64), "sizes": np.array([len(g) for g in groups], np.int64)}


def unpack_groups(packed: dict):
    """The inverse of pack_groups."""
    return np.split(np.asarray(packed["rows"], np.int64), np.cumsum(packed["sizes"])[:-1])
