"""Uniform and k-means++ batch samplers (the contract of psda.samplers.base)."""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from .base import BatchSampler, stream

__all__ = ["UniformSampler", "KMeansPPSampler"]


_BLOCK = 64  # rows per block in the two-level inverse-CDF draw


def _kmeanspp(xa: np.ndarray, n: int, k: int, nb: int,
              rng: np.random.Generator) -> np.ndarray:
    """nb independent k-means++ seedings: returns (nb, k) distinct row indices.

    ``xa`` is the augmented matrix [x, ||x||^2, 1] padded with zero rows to a
    multiple of _BLOCK, so one GEMM [-2 x_p, 1, ||x_p||^2] @ xa^T gives the
    squared distances from nb new centres to every row. The nb seedings run
    side by side; each of the k steps costs one GEMM plus O(nb n) elementwise
    work. Draws use a two-level inverse CDF (block sums, then within a block)
    because a full cumulative sum along rows is slow in NumPy.
    """
    npad = len(xa)
    nblk = npad // _BLOCK
    d = xa.shape[1] - 2
    out = np.empty((nb, k), np.int64)
    rows = np.arange(nb)
    chosen = np.zeros((nb, npad), bool)
    chosen[:, n:] = True                         # padding is never drawn

    xat = np.ascontiguousarray(xa.T)

    def dist(p):
        c = np.empty((len(p), d + 2))
        c[:, :d] = -2.0 * xa[p, :d]
        c[:, d] = 1.0
        c[:, d + 1] = xa[p, d]
        if d + 2 <= 16:
            # Few columns: broadcast multiply-adds. A GEMM with a tiny inner
            # dimension is all threading overhead, and BLAS threads competing
            # for cores with other processes make it stall.
            g = c[:, :1] * xat[0]
            for j in range(1, d + 2):
                g += c[:, j:j + 1] * xat[j]
        else:
            g = c @ xat
        np.maximum(g, 0.0, out=g)
        return g

    pick = rng.integers(n, size=nb)
    d2 = None
    for m in range(k):
        out[:, m] = pick
        chosen[rows, pick] = True
        if m + 1 == k:
            break
        d2 = dist(pick) if d2 is None else np.minimum(d2, dist(pick), out=d2)
        d2[rows, pick] = 0.0                    # rounding must not leave a chosen row weight
        blocks = d2.reshape(nb, nblk, _BLOCK)
        bsum = np.einsum("ijk->ij", blocks)
        bcum = np.cumsum(bsum, axis=1)
        tot = bcum[:, -1]
        u = rng.random(nb) * tot
        bi = np.minimum((bcum < u[:, None]).sum(1), nblk - 1)
        u -= bcum[rows, bi] - bsum[rows, bi]
        inner = np.cumsum(blocks[rows, bi], axis=1)
        j = np.minimum((inner < u[:, None]).sum(1), _BLOCK - 1)
        pick = bi * _BLOCK + j
        # Rounding can land on a zero-weight row, and a batch whose remaining
        # rows all duplicate chosen ones has no weight at all: draw uniformly
        # among the rows not chosen yet.
        bad = chosen[rows, pick] | ~(tot > 0.0)
        for r in np.flatnonzero(bad):
            pick[r] = rng.choice(np.flatnonzero(~chosen[r]))
    return out


def _augment(x: np.ndarray) -> np.ndarray:
    n, d = x.shape
    npad = -(-n // _BLOCK) * _BLOCK
    xa = np.zeros((npad, d + 2))
    xa[:n, :d] = x
    xa[:n, d] = np.einsum("ij,ij->i", x, x)
    xa[:n, d + 1] = 1.0
    return xa



class _NoKernel(BatchSampler):
    """Accepts the loss options (discrepancy, kernel, gammas), checks and ignores them, so that one set of
    options serves every name of psda.batch_sampler."""

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *,
                 discrepancy: Optional[str] = None, kernel: Optional[str] = None, gammas: Any = None,
                 **kwargs: Any) -> None:
        if discrepancy is not None and discrepancy not in ("mmd", "coral"):
            raise ValueError(f"discrepancy = {discrepancy!r}: want 'mmd' or 'coral'")
        if kernel is not None and kernel not in ("linear", "rbf"):
            raise ValueError(f"kernel = {kernel!r}: want 'linear' or 'rbf'")
        self.discrepancy = discrepancy
        super().__init__(source_features, target_features, batch_size, **kwargs)


class UniformSampler(_NoKernel):
    """UniformSampler yields uniformly random minibatches of k source and k target rows.

    Every epoch draws an independent permutation of each domain and cuts it
    into batches of k: the larger domain is covered once (its last n mod k
    rows left out, different ones every epoch), the smaller one walks
    back-to-back permutations. Set-up O(1); O(n) per epoch.

    Args:
        source_features, target_features: (n, d) features (only n is used).
        batch_size: k per domain. Other arguments: see DABatchSampler.

    Example:
        >>> import numpy as np, psda
        >>> x = np.zeros((10, 2))
        >>> s = psda.batch_sampler("uniform", x, x, 4, num_replicas=1, rank=0)
        >>> [len(b) for b in s]
        [8, 8]
    """

    name = "uniform"
    uses_features = False

    def _min_rows(self) -> int:
        return 1

    def _build(self, s: np.ndarray, t: np.ndarray) -> Dict[str, Any]:
        return {}

    def _draw(self, plan, rng, count):
        # The larger domain's first N places are one permutation: with
        # drop_last=False (the last batch cut to N mod k) each row once.
        k = self.batch_size
        src = stream(rng, self.n_source, count * k).reshape(count, k)
        tgt = stream(rng, self.n_target, count * k).reshape(count, k)
        return src, tgt


class KMeansPPSampler(_NoKernel):
    """KMeansPPSampler draws every minibatch by k-means++ seeding (Arthur & Vassilvitskii 2007).

    Each batch's k source rows are a k-means++ seeding of the source
    features (first row uniform, each next row with probability proportional
    to its squared distance to the nearest row chosen so far, "D^2
    weighting", Section 2.2 of the paper), and likewise its target rows,
    independently of every other batch: the diverse-sampling baseline of the
    PSDA paper (Napoli et al. 2024). Rows are distinct within a batch; batches
    are independent draws, so a row may appear in several batches of an epoch
    or in none. O(n k d) per batch.

    Args:
        source_features, target_features: (n, d) features.
        batch_size: k per domain, <= min(n_source, n_target).
        chunk: batches seeded side by side (memory O(chunk n)).

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(20, 2))
        >>> s = psda.batch_sampler("kmeans++", x, x, 5, num_replicas=1, rank=0)
        >>> len(s), len(next(iter(s)))
        (4, 10)
    """

    name = "kmeans++"
    regroups = False  # independent draws from the whole domain: see BatchSampler.update

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *,
                 chunk: Optional[int] = None, **kwargs: Any) -> None:
        self.chunk = chunk
        super().__init__(source_features, target_features, batch_size, **kwargs)

    def _config(self):
        return {"chunk": self.chunk}

    def _build(self, s, t):
        return {"xa_s": _augment(s), "xa_t": _augment(t)}

    def _check_plan(self, plan, where):
        for key, n in (("xa_s", self.n_source), ("xa_t", self.n_target)):
            xa = np.asarray(plan[key])
            if xa.ndim != 2 or xa.shape[0] != -(-n // _BLOCK) * _BLOCK or xa.dtype != np.float64:
                raise ValueError(f"{where}[{key!r}] has shape {xa.shape}, not this sampler's ({n} rows padded to a "
                                 f"multiple of {_BLOCK}, d + 2): pass an unmodified state_dict()")

    def _draw(self, plan, rng, num_batches):
        # A short last batch (drop_last=False) takes the first N mod k rows of
        # a seeding: a k-means++ seeding of that many rows.
        k = self.batch_size
        chunk = self.chunk or max(1, (1 << 21) // max(self.n_source, self.n_target))
        src, tgt = [], []
        left = num_batches
        while left > 0:
            nb = min(chunk, left)
            src.append(_kmeanspp(plan["xa_s"], self.n_source, k, nb, rng))
            tgt.append(_kmeanspp(plan["xa_t"], self.n_target, k, nb, rng))
            left -= nb
        return np.concatenate(src), np.concatenate(tgt)
