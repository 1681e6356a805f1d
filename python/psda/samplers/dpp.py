"""k-DPP minibatches (Kulesza & Taskar 2011; Zhang, Kjellström & Mandt 2017).

A k-DPP with L-ensemble L draws a k-subset Y with P(Y) = det(L_Y) / e_k(L),
where e_k is the k-th elementary symmetric polynomial of L's eigenvalues.
Sampling follows Kulesza & Taskar, "k-DPPs: Fixed-Size Determinantal Point
Processes" (ICML 2011), Algorithm 1 and their monograph's Algorithm 8:

1. choose k eigenvectors: walking the eigenvalues from the last, keep
   eigenvector m with probability lambda_m e_{l-1}^{m-1} / e_l^m, where l is
   the number still to choose (the e_l^m from the recursion
   e_l^m = e_l^{m-1} + lambda_m e_{l-1}^{m-1}, here in log space so that
   large n and k cannot overflow);
2. sample the projection DPP of the chosen orthonormal vectors V: rows one at
   a time, row i with probability proportional to its squared distance from
   the span of the rows already chosen (the chain rule of the projection
   kernel K = V V^T, computed by incremental Gram-Schmidt in O(n k) a row,
   equivalent to the monograph's Algorithm 1 which re-orthonormalises V).

Zhang et al. draw every minibatch independently from the k-DPP; so do we, for
source and target separately. The kernel is the RBF mixture of the PSDA paper
(its gammas), also for linear MMD and CORAL, whose kernels have rank <= d (or
d^2) and so admit no k-subset for k > rank (a deviation listed in
docs/samplers.md). With n <= ``exact_limit`` L is the exact Gram matrix
(eigendecomposition O(n^3)); above, the dual k-DPP on random Fourier features
B (L = B B^T, Kulesza & Taskar's dual representation, O(n D^2)).
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import numpy as np

from .._matching import DEFAULT_GAMMAS
from .base import BatchSampler
from .features import feature_map

__all__ = ["DPPSampler", "kdpp_eigen", "rbf_gram"]


def rbf_gram(x: np.ndarray, gammas: Sequence[float]) -> np.ndarray:
    """The RBF-mixture Gram matrix sum_g exp(-g ||x_i - x_j||^2)."""
    sq = np.einsum("id,id->i", x, x)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (x @ x.T), 0.0)
    np.fill_diagonal(d2, 0.0)
    return sum(np.exp(-g * d2) for g in gammas)


def kdpp_eigen(x: np.ndarray, gammas: Sequence[float], exact_limit: int, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending, >= 0) and orthonormal eigenvectors (n, N) of the RBF-mixture L-ensemble."""
    if len(x) <= exact_limit:
        lam, v = np.linalg.eigh(rbf_gram(x, gammas))
    else:
        b, _ = feature_map(x, x[:1], "mmd", "rbf", gammas, seed)
        lam, w = np.linalg.eigh(b.T @ b)
        keep = lam > lam.max() * 1e-12
        lam, w = lam[keep], w[:, keep]
        v = (b @ w) / np.sqrt(lam)
    return np.maximum(lam, 0.0), v


class DPPSampler(BatchSampler):
    """DPPSampler draws every minibatch from a k-DPP (diverse minibatches, Zhang et al. 2017).

    Each batch's k source rows are an independent draw of the k-DPP whose
    L-ensemble is the RBF-mixture Gram matrix of the source features (and
    likewise the target rows), so that similar rows rarely share a batch.
    Set-up O(n^3) (eigendecomposition; O(n D^2) above ``exact_limit`` rows),
    O(n k^2) per batch.

    Args:
        gammas: the RBF mixture's bandwidths (the paper's by default).
        exact_limit: rows up to which L is the exact Gram matrix.
        progress: print the Go core's draws done (every 50 ms) to stderr.
        discrepancy, kernel: accepted for a common interface; the k-DPP kernel
            is the RBF mixture for every discrepancy (see the module docstring).

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(30, 2))
        >>> s = psda.batch_sampler("dpp", x, x, 5, num_replicas=1, rank=0)
        >>> len(s), len(set(next(iter(s))[:5]))
        (6, 5)
    """

    name = "dpp"
    regroups = False  # independent draws from the whole domain: see BatchSampler.update

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *,
                 gammas: Sequence[float] = DEFAULT_GAMMAS, exact_limit: int = 600,
                 progress: bool = False, discrepancy: str = "mmd", kernel: str = "rbf", **kwargs: Any) -> None:
        from .stratified import _check_discrepancy

        self.discrepancy, self.kernel, _ = _check_discrepancy(discrepancy, kernel, gammas)
        self.progress = bool(progress)
        self.gammas = tuple(float(g) for g in gammas)
        if not self.gammas or min(self.gammas) <= 0:
            raise ValueError(f"gammas = {gammas!r}: want at least one bandwidth > 0")
        self.exact_limit = int(exact_limit)
        self._cache: Dict[int, Any] = {}
        super().__init__(source_features, target_features, batch_size, **kwargs)

    def _config(self):
        return {"gammas": self.gammas, "exact_limit": self.exact_limit}

    def _build(self, s, t):
        plan = {"source_features": s, "target_features": t}
        self._spectra(plan)  # the set-up: eigendecompositions now, not at the first batch
        return plan

    def _check_plan(self, plan, where):
        for key, n in (("source_features", self.n_source), ("target_features", self.n_target)):
            x = np.asarray(plan[key])
            if x.ndim != 2 or len(x) != n:
                raise ValueError(f"{where}[{key!r}] has shape {x.shape}, not ({n}, d): pass an unmodified "
                                 "state_dict()")

    def _spectra(self, plan):
        key = id(plan["source_features"]), id(plan["target_features"])
        if not hasattr(self, "_cache"):
            self._cache = {}
        c = self._cache.get("spectra")
        if c is None or c[0] != key:
            out = []
            for x in (plan["source_features"], plan["target_features"]):
                lam, v = kdpp_eigen(np.asarray(x, np.float64), self.gammas, self.exact_limit, self.seed)
                if np.count_nonzero(lam > lam.max() * 1e-12) < self.batch_size:
                    raise ValueError(f"batch_size = {self.batch_size}: the k-DPP kernel has rank "
                                     f"{np.count_nonzero(lam > 0)} < k (duplicate rows?): use a smaller batch_size")
                out.append((lam, v))
            c = self._cache["spectra"] = (key, out, plan)
        return c[1]

    def _draw(self, plan, rng, count):
        from .. import _native

        k = self.batch_size
        seeds = rng.integers(1 << 63, size=2)
        return tuple(_native.kdpp_sample(lam, v, k, count, int(seed), on_count=self._reporter(side, count))
                     for side, (lam, v), seed in zip(("source", "target"), self._spectra(plan), seeds))

    def _reporter(self, side: str, total: int):
        if not self.progress:
            return None
        import sys

        return lambda r: print(f"psda dpp: {side} k-DPP draws {r}/{total}", file=sys.stderr, flush=True)
