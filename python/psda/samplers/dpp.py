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
from .base import DABatchSampler
from .features import feature_map

__all__ = ["DPPSampler", "kdpp_eigen", "kdpp_sample", "log_esp"]


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


class DPPSampler(DABatchSampler):
    """DPPSampler draws every minibatch from a k-DPP (diverse minibatches, Zhang et al. 2017).

    Each batch's k source rows are an independent draw of the k-DPP whose
    L-ensemble is the RBF-mixture Gram matrix of the source features (and
    likewise the target rows), so that similar rows rarely share a batch.
    Set-up O(n^3) (eigendecomposition; O(n D^2) above ``exact_limit`` rows),
    O(n k^2) per batch.

    Args:
        gammas: the RBF mixture's bandwidths (the paper's by default).
        exact_limit: rows up to which L is the exact Gram matrix.
        engine: "auto" (draws by the Go core's psda/diverse.SampleKDPP when
            built, else NumPy), "go" or "numpy" (the reference).
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

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *,
                 gammas: Sequence[float] = DEFAULT_GAMMAS, exact_limit: int = 600, engine: str = "auto",
                 progress: bool = False, **kwargs: Any) -> None:
        if engine not in ("auto", "go", "numpy"):
            raise ValueError(f"engine = {engine!r}: want 'auto' (the Go core when built), 'go' or 'numpy'")
        self.engine, self.progress = engine, bool(progress)
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
                out.append((lam, v, log_esp(lam, self.batch_size)))
            c = self._cache["spectra"] = (key, out, plan)
        return c[1]

    def _draw(self, plan, rng, num_batches):
        (ls, vs, es), (lt, vt, et) = self._spectra(plan)
        k = self.batch_size
        from . import _core

        if self.engine != "numpy" and _core.available("psda_kdpp_sample_f64"):
            seeds = rng.integers(1 << 63, size=2)
            out = []
            for side, lam, v, seed in (("source", ls, vs, seeds[0]), ("target", lt, vt, seeds[1])):
                out.append(_core.kdpp_sample(lam, v, k, num_batches, int(seed), on_count=self._reporter(side, num_batches)))
            return tuple(out)
        if self.engine == "go":
            raise RuntimeError("engine = 'go': the compiled psda core has no psda_kdpp_sample_f64; rebuild psda")
        return kdpp_sample(ls, vs, es, k, num_batches, rng), kdpp_sample(lt, vt, et, k, num_batches, rng)

    def _reporter(self, side: str, total: int):
        if not self.progress:
            return None
        import sys

        return lambda r: print(f"psda dpp: {side} k-DPP draws {r}/{total}", file=sys.stderr, flush=True)

    def __getstate__(self):
        d = super().__getstate__()
        d["_cache"] = {}
        return d
