"""Baseline batch samplers to compare PSDA against, in PairedBatchSampler's layout.

Every sampler here yields lists of 2k Python ints: k source indices in
[0, n_s), then k target indices offset by n_s (the index space of
``ConcatDataset([source_ds, target_ds])``). Each has its own seeded NumPy
Generator (never the global RNG), ``len()``, and ``set_epoch(e)``; the epoch
also advances by itself after a complete pass. An epoch has
max(n_s, n_t) // k batches (drop_last), the same as PSDA's P // k.

* ``UniformBatchSampler``, ``KMeansPPBatchSampler``, ``StratifiedBatchSampler``:
  single-process shorthands for psda.samplers' ``UniformSampler``,
  ``KMeansPPSampler`` and ``VaRDASSSampler`` (the real VaRDASS replaced the
  earlier "VaRDASS-like" equal-strata sampler); ``psda.batch_sampler`` builds
  every comparison sampler with the full contract.
* ``MatchingBatchSampler``: a plain schedule over a given matching (pairs,
  quadruplets), used to drive the SciPy reference through the same estimators.
"""

from __future__ import annotations

from typing import Iterator, List, Optional

import numpy as np

__all__ = ["UniformBatchSampler", "KMeansPPBatchSampler", "StratifiedBatchSampler",
           "MatchingBatchSampler"]


def _check_batch_size(batch_size, limit: int) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size = {batch_size!r}: want an int")
    k = int(batch_size)
    if k < 1 or k > limit:
        raise ValueError(f"batch_size = {k}: want 1 <= batch_size <= {limit} "
                         "(max(n_source, n_target))")
    return k


class _EpochSampler:
    """Shared epoch bookkeeping: seeded per-epoch generators and auto-advance."""

    def __init__(self, n_source: int, n_target: int, batch_size: int, seed: int) -> None:
        if n_source < 1 or n_target < 1:
            raise ValueError(f"n_source = {n_source}, n_target = {n_target}: want both >= 1")
        self.n_s, self.n_t = int(n_source), int(n_target)
        self.batch_size = _check_batch_size(batch_size, max(self.n_s, self.n_t))
        self.seed = int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """set_epoch selects the epoch whose batches the next ``__iter__`` yields."""
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return max(self.n_s, self.n_t) // self.batch_size

    def _rng(self) -> np.random.Generator:
        return np.random.default_rng([self.seed, self.epoch])

    def __iter__(self) -> Iterator[List[int]]:
        rng = self._rng()
        for src, tgt in self._batches(rng):
            yield src.tolist() + (tgt + self.n_s).tolist()
        self.epoch += 1

    def _batches(self, rng):  # pragma: no cover - abstract
        raise NotImplementedError


def _stream(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    """count indices from back-to-back random permutations of range(n)."""
    reps = -(-count // n)
    return np.concatenate([rng.permutation(n) for _ in range(reps)])[:count]


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


def _principal_direction(x: np.ndarray, iters: int = 12) -> np.ndarray:
    """Approximate top principal direction of the rows of x by power iteration (O(iters n d))."""
    xc = x - x.mean(0)
    v = np.zeros(x.shape[1])
    v[np.argmax(np.einsum("ij,ij->j", xc, xc))] = 1.0
    for _ in range(iters):
        w = xc.T @ (xc @ v)
        nrm = np.linalg.norm(w)
        if nrm == 0.0:
            break
        v = w / nrm
    return v


def _equal_strata(x: np.ndarray, idx: np.ndarray, m: int) -> List[np.ndarray]:
    """Split rows idx of x into m strata of sizes differing by at most one.

    Recursive median-style cuts along each cell's principal direction (a
    balanced k-d tree on principal axes): a cell for m strata is cut at the
    fraction floor(m/2)/m of its rows.
    """
    if m == 1:
        return [idx]
    m1 = m // 2
    proj = x[idx] @ _principal_direction(x[idx])
    order = idx[np.argsort(proj, kind="stable")]
    cut = (len(idx) * m1) // m
    return _equal_strata(x, order[:cut], m1) + _equal_strata(x, order[cut:], m - m1)


class MatchingBatchSampler(_EpochSampler):
    """MatchingBatchSampler serves batches of matched pairs from a given matching.

    ``matching`` needs ``.pairs`` ((P, 2): source, target) and, for stages=2,
    ``.quads`` ((Q, 2) indices into pairs) and ``.singles``. Each epoch
    shuffles the units (quadruplets, or pairs with stages=1; with stages=2 the
    singles become units of one pair, placed last) and lays them out so that
    batch position m holds one pair and a quadruplet's pairs sit at positions
    2m and 2m + 1; the last partial batch is dropped. This mirrors
    PairedBatchSampler's layout without depending on it.
    """

    def __init__(self, matching, n_source: int, n_target: int, batch_size: int, *,
                 stages: int = 2, seed: int = 0) -> None:
        super().__init__(n_source, n_target, batch_size, seed)
        if stages not in (1, 2):
            raise ValueError(f"stages = {stages}: want 1 or 2")
        if stages == 2 and self.batch_size % 2:
            raise ValueError(f"batch_size = {self.batch_size} with stages = 2: want an even size")
        self.pairs = np.asarray(matching.pairs, dtype=np.int64)
        self.stages = stages
        if stages == 2:
            self.quads = np.asarray(matching.quads, dtype=np.int64).reshape(-1, 2)
            self.singles = np.asarray(matching.singles, dtype=np.int64).ravel()

    def __len__(self) -> int:
        return len(self.pairs) // self.batch_size

    def _batches(self, rng):
        if self.stages == 1:
            order = rng.permutation(len(self.pairs))
        else:
            order = np.concatenate([self.quads[rng.permutation(len(self.quads))].ravel(),
                                    rng.permutation(self.singles)])
        k = self.batch_size
        nb = len(self)
        sel = self.pairs[order[:nb * k]].reshape(nb, k, 2)
        return zip(sel[:, :, 0], sel[:, :, 1])


def UniformBatchSampler(n_source: int, n_target: int, batch_size: int, *, seed: int = 0):
    """UniformBatchSampler returns a single-process psda.samplers.UniformSampler over n_source and n_target rows.

    Example:
        >>> s = UniformBatchSampler(6, 6, 2, seed=1)
        >>> [len(b) for b in s]
        [4, 4, 4]
    """
    from .samplers import UniformSampler

    return UniformSampler(np.zeros((int(n_source), 1)), np.zeros((int(n_target), 1)), batch_size, seed=seed,
                          num_replicas=1, rank=0)


def KMeansPPBatchSampler(source_features, target_features, batch_size: int, *, seed: int = 0,
                         chunk: Optional[int] = None):
    """KMeansPPBatchSampler returns a single-process psda.samplers.KMeansPPSampler (k-means++ seeding per batch)."""
    from .samplers import KMeansPPSampler

    return KMeansPPSampler(source_features, target_features, batch_size, seed=seed, chunk=chunk, num_replicas=1,
                           rank=0)


def StratifiedBatchSampler(source_features, target_features, batch_size: int, *, seed: int = 0, **options):
    """StratifiedBatchSampler returns a single-process psda.samplers.VaRDASSSampler (real VaRDASS strata)."""
    from .samplers import VaRDASSSampler

    return VaRDASSSampler(source_features, target_features, batch_size, seed=seed, num_replicas=1, rank=0, **options)
