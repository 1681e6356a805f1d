"""Uniform and k-means++ batch samplers (the contract of psda.samplers.base)."""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from .base import DABatchSampler, stream

__all__ = ["UniformSampler", "KMeansPPSampler"]


class UniformSampler(DABatchSampler):
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

    def _min_rows(self) -> int:
        return 1

    def _build(self, s: np.ndarray, t: np.ndarray) -> Dict[str, Any]:
        return {}

    def _draw(self, plan, rng, num_batches):
        k = self.batch_size
        src = stream(rng, self.n_source, num_batches * k).reshape(num_batches, k)
        tgt = stream(rng, self.n_target, num_batches * k).reshape(num_batches, k)
        return src, tgt


class KMeansPPSampler(DABatchSampler):
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

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *,
                 chunk: Optional[int] = None, **kwargs: Any) -> None:
        self.chunk = chunk
        super().__init__(source_features, target_features, batch_size, **kwargs)

    def _config(self):
        return {"chunk": self.chunk}

    def _build(self, s, t):
        from ..baselines import _augment

        return {"xa_s": _augment(s), "xa_t": _augment(t)}

    def _draw(self, plan, rng, num_batches):
        from ..baselines import _kmeanspp

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
