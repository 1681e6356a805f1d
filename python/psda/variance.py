"""Monte Carlo estimates of the minibatch discrepancy error E||D_hat - D||^2.

This is the quantity of the paper's section "Estimator variance": for a batch
source (any iterable of index batches in ``PairedBatchSampler``'s layout: k
source indices, then k target indices offset by n_s), average over its batches
the squared distance between the minibatch discrepancy D_hat and the
full-data discrepancy D, each discrepancy in its own norm:

* MMD, linear kernel: D = mean(s) - mean(t) in R^d (Euclidean norm);
* MMD, RBF mixture: D = mu_s - mu_t in the RKHS (norm through kernel sums);
* CORAL: D = Sigma_s - Sigma_t with unbiased covariances (Frobenius norm), and
  D_hat the same on the batch (the paper's V-statistic estimators).

Everything is vectorised over chunks of equally sized batches, with chunks
sized to keep temporaries near ``block_elems`` float64 values; the full-data
terms of the RBF mixture (mean kernel values) are computed once, blockwise,
in O(n^2 d) time and O(block) memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ._matching import DEFAULT_GAMMAS  # re-exported: the core's default mixture

__all__ = ["DEFAULT_GAMMAS", "DiscrepancyError", "ErrorEstimate", "expected_error", "pooled_bias2"]


def _as_features(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name} has shape {a.shape}: want a 2-D (n, d) array with n, d >= 1")
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"{name} has dtype {a.dtype}: want real numbers")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or Inf: remove or impute those rows")
    return a


def _sq_norms(x: np.ndarray) -> np.ndarray:
    return np.einsum("...ij,...ij->...i", x, x)


class DiscrepancyError:
    """DiscrepancyError evaluates ||D_hat - D||^2 for minibatches of fixed data.

    The full-data discrepancy D (and, for the RBF mixture, the mean kernel
    values g(z) = <phi(z), mu_s - mu_t>) is computed once at construction.

    Args:
        source: (n_s, d) source features.
        target: (n_t, d) target features.
        discrepancy: "mmd" or "coral".
        kernel: "linear" or "rbf" (MMD only).
        gammas: the RBF mixture's bandwidths, kappa(x, y) = sum exp(-gamma ||x - y||^2).
        block_elems: approximate number of float64 values in temporaries.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> s, t = rng.standard_normal((8, 2)), rng.standard_normal((8, 2))
        >>> err = DiscrepancyError(s, t, kernel="linear")
        >>> float(err.batch_errors([list(range(8)) + list(range(8, 16))])[0]) < 1e-24
        True
    """

    def __init__(self, source, target, *, discrepancy: str = "mmd", kernel: str = "linear",
                 gammas: Sequence[float] = DEFAULT_GAMMAS, block_elems: int = 1 << 22) -> None:
        self.s = _as_features(source, "source")
        self.t = _as_features(target, "target")
        if self.s.shape[1] != self.t.shape[1]:
            raise ValueError(f"source has {self.s.shape[1]} features but target has "
                             f"{self.t.shape[1]}: both must have the same dimension")
        if discrepancy not in ("mmd", "coral"):
            raise ValueError(f"discrepancy = {discrepancy!r}: want 'mmd' or 'coral'")
        if discrepancy == "mmd" and kernel not in ("linear", "rbf"):
            raise ValueError(f"kernel = {kernel!r}: want 'linear' or 'rbf'")
        self.discrepancy, self.kernel = discrepancy, kernel
        self.gammas = tuple(float(g) for g in gammas)
        if discrepancy == "mmd" and kernel == "rbf" and (
                not self.gammas or min(self.gammas) <= 0):
            raise ValueError(f"gammas = {gammas!r}: want at least one gamma > 0")
        self.block = int(block_elems)
        self.n_s, self.n_t = len(self.s), len(self.t)
        if discrepancy == "mmd" and kernel == "linear":
            self.delta = self.s.mean(0) - self.t.mean(0)
        elif discrepancy == "mmd":
            self._prepare_rbf()
        else:
            if self.n_s < 2 or self.n_t < 2:
                raise ValueError("CORAL needs at least 2 source and 2 target rows")
            self.D = np.cov(self.s, rowvar=False).reshape(self.s.shape[1], -1) - \
                np.cov(self.t, rowvar=False).reshape(self.t.shape[1], -1)
            self.D_norm2 = float(np.sum(self.D * self.D))

    # -- RBF mixture ------------------------------------------------------

    def _kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Kernel matrix between stacks of points x (..., a, d) and y (..., b, d)."""
        d2 = _sq_norms(x)[..., :, None] + _sq_norms(y)[..., None, :]
        d2 -= 2.0 * (x @ np.swapaxes(y, -1, -2))
        np.maximum(d2, 0.0, out=d2)
        out = np.zeros_like(d2)
        tmp = np.empty_like(d2)
        for g in self.gammas:
            np.multiply(d2, -g, out=tmp)
            np.exp(tmp, out=tmp)
            out += tmp
        return out

    def _row_means(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """mean_j kappa(x_i, y_j) for every i, blockwise over rows of x."""
        rows = max(1, self.block // max(len(y), 1))
        return np.concatenate([self._kernel(x[lo:lo + rows], y).mean(1)
                               for lo in range(0, len(x), rows)])

    def _prepare_rbf(self) -> None:
        # g(z) = mean_i kappa(z, s_i) - mean_j kappa(z, t_j) = <phi(z), delta>.
        self.g_s = self._row_means(self.s, self.s) - self._row_means(self.s, self.t)
        self.g_t = self._row_means(self.t, self.s) - self._row_means(self.t, self.t)
        # ||delta||^2 = mean g over the source minus mean g over the target.
        self.delta2 = float(self.g_s.mean() - self.g_t.mean())

    # -- batches ----------------------------------------------------------

    def _split(self, batch) -> tuple:
        b = np.asarray(batch, dtype=np.int64).ravel()
        if len(b) % 2 or len(b) == 0:
            raise ValueError(f"batch of length {len(b)}: want k source then k target indices")
        m = len(b) // 2
        src, tgt = b[:m], b[m:] - self.n_s
        if src.min() < 0 or src.max() >= self.n_s or tgt.min() < 0 or tgt.max() >= self.n_t:
            raise ValueError(
                f"batch {b.tolist()[:8]}...: source indices must lie in [0, {self.n_s}) and "
                f"target indices in [{self.n_s}, {self.n_s + self.n_t}) (offset by n_source)")
        return src, tgt

    def batch_errors(self, batches: Iterable) -> np.ndarray:
        """batch_errors returns ||D_hat - D||^2 for each batch, in order.

        Batches of equal length are evaluated together, in chunks. Time per
        batch of k + k rows: O(k d) linear MMD, O(k^2 d) RBF, O(k d min(k, d)
        + k d^2) CORAL.
        """
        out: List[np.ndarray] = []
        pend_s: List[np.ndarray] = []
        pend_t: List[np.ndarray] = []

        def flush():
            if pend_s:
                out.append(self._errors(np.stack(pend_s), np.stack(pend_t)))
                pend_s.clear()
                pend_t.clear()

        for batch in batches:
            src, tgt = self._split(batch)
            if pend_s and (len(src) != len(pend_s[0]) or
                           len(pend_s) * self._cost_per_batch(len(src)) >= self.block):
                flush()
            pend_s.append(src)
            pend_t.append(tgt)
        flush()
        return np.concatenate(out) if out else np.zeros(0)

    # -- the mean of D_hat over batches: bias ----------------------------------

    def batch_sum(self, batches: Iterable) -> Tuple[Any, int]:
        """Returns (the sum of D_hat over batches, their number), D_hat in a form mean_error reads.

        Linear MMD: the sum of mu_hat_s - mu_hat_t (a d-vector); RBF MMD: the
        weights (w, v) with sum_b mu_hat_b = sum_i w_i phi(s_i) - sum_j v_j
        phi(t_j); CORAL: the sum of the batch covariance differences (d x d).
        O(k d) per batch (O(k d^2) CORAL).
        """
        d = self.s.shape[1]
        if self.discrepancy == "mmd" and self.kernel == "rbf":
            acc: Any = (np.zeros(self.n_s), np.zeros(self.n_t))
        elif self.discrepancy == "mmd":
            acc = np.zeros(d)
        else:
            acc = np.zeros((d, d))
        n = 0
        for batch in batches:
            src, tgt = self._split(batch)
            k = len(src)
            n += 1
            if self.discrepancy == "mmd" and self.kernel == "rbf":
                np.add.at(acc[0], src, 1.0 / k)
                np.add.at(acc[1], tgt, 1.0 / k)
            elif self.discrepancy == "mmd":
                acc += self.s[src].mean(0) - self.t[tgt].mean(0)
            else:
                if k < 2:
                    raise ValueError("CORAL batches need at least 2 rows per domain (batch_size >= 2)")
                acc += (np.cov(self.s[src], rowvar=False).reshape(d, d) - np.cov(self.t[tgt], rowvar=False).reshape(d, d))
        return acc, n

    def mean_error(self, total: Any, n: int) -> float:
        """||(total / n) - D||^2 for total, n from :meth:`batch_sum`: the squared bias of the batches' mean.

        O(d) linear, O(d^2) CORAL, O(n_s n_t d) RBF (kernel sums over the rows with weight).
        """
        if self.discrepancy == "mmd" and self.kernel == "rbf":
            w, v = total[0] / n, total[1] / n
            iw, iv = np.flatnonzero(w), np.flatnonzero(v)
            xs, xt, w, v = self.s[iw], self.t[iv], w[iw], v[iv]

            def quad(x, a, y, b):  # a^T K(x, y) b, blockwise over rows of x
                rows = max(1, self.block // max(len(y), 1))
                return sum(float(a[lo:lo + rows] @ (self._kernel(x[lo:lo + rows], y) @ b))
                           for lo in range(0, len(x), rows))

            val = (quad(xs, w, xs, w) + quad(xt, v, xt, v) - 2.0 * quad(xs, w, xt, v)
                   - 2.0 * (float(w @ self.g_s[iw]) - float(v @ self.g_t[iv])) + self.delta2)
            return max(val, 0.0)
        if self.discrepancy == "mmd":
            diff = total / n - self.delta
            return float(diff @ diff)
        diff = total / n - self.D
        return float(np.sum(diff * diff))

    def _cost_per_batch(self, k: int) -> int:
        d = self.s.shape[1]
        if self.discrepancy == "coral":
            return k * d + (d * d if self._coral_direct(k) else k * k)
        return k * d + (k * k if self.kernel == "rbf" else 0)

    def _coral_direct(self, k: int) -> bool:
        d = self.s.shape[1]
        return d <= k or d * d <= 64

    def _errors(self, src: np.ndarray, tgt: np.ndarray) -> np.ndarray:
        """Errors for a chunk of batches: src (nb, k) and tgt (nb, k) indices."""
        xs, xt = self.s[src], self.t[tgt]          # (nb, k, d)
        k = src.shape[1]
        if self.discrepancy == "mmd" and self.kernel == "linear":
            diff = xs.mean(1) - xt.mean(1) - self.delta
            return _sq_norms(diff)
        if self.discrepancy == "mmd":
            kss = self._kernel(xs, xs).sum((1, 2))
            ktt = self._kernel(xt, xt).sum((1, 2))
            kst = self._kernel(xs, xt).sum((1, 2))
            inner = self.g_s[src].mean(1) - self.g_t[tgt].mean(1)    # <mu_hat_s - mu_hat_t, delta>
            return (kss + ktt - 2.0 * kst) / k**2 - 2.0 * inner + self.delta2
        if k < 2:
            raise ValueError("CORAL batches need at least 2 rows per domain (batch_size >= 2)")
        a = xs - xs.mean(1, keepdims=True)
        b = xt - xt.mean(1, keepdims=True)
        if self._coral_direct(k):
            cov = (np.swapaxes(a, 1, 2) @ a - np.swapaxes(b, 1, 2) @ b) / (k - 1)
            cov -= self.D
            return np.einsum("nij,nij->n", cov, cov)
        # Through k x k Gram matrices: ||A^T A||_F = ||A A^T||_F and
        # <A^T A, D> = sum_i a_i^T D a_i, so no d x d matrix per batch is formed.
        def fro2(x, y):
            g = x @ np.swapaxes(y, 1, 2)
            return np.einsum("nij,nij->n", g, g)
        quad = (np.einsum("nij,nij->n", a @ self.D, a) -
                np.einsum("nij,nij->n", b @ self.D, b))
        return ((fro2(a, a) + fro2(b, b) - 2.0 * fro2(a, b)) / (k - 1) ** 2
                - 2.0 * quad / (k - 1) + self.D_norm2)


@dataclass
class ErrorEstimate:
    """ErrorEstimate is a Monte Carlo estimate of E||D_hat - D||^2.

    ``stderr`` is the standard error of ``mean`` from the spread of the
    per-epoch means with 5 or more epochs, else from the per-batch spread
    (conservative: batches of one epoch are drawn without replacement).

    ``bias2`` is ||mean of D_hat over the batches - D||^2, the squared bias
    of the batches it averaged (the variance is ``mean - bias2``). It is the
    plug-in value: Monte Carlo noise in the mean adds its trace covariance
    (zero for a fixed plan whose epochs serve every pair exactly once); pool
    several independent plans with :func:`pooled_bias2` to remove it.
    """

    mean: float
    stderr: float
    n_batches: int
    epochs: int
    bias2: float = math.nan
    #: (sum of D_hat, batches) from DiscrepancyError.batch_sum, for pooled_bias2.
    total: Any = field(default=None, repr=False)


def expected_error(source, target, batch_source, *, epochs: int = 1, discrepancy: str = "mmd",
                   kernel: str = "linear", gammas: Sequence[float] = DEFAULT_GAMMAS,
                   evaluator: Optional[DiscrepancyError] = None,
                   on_epoch: Optional[Callable[[int], None]] = None, first_epoch: int = 0) -> ErrorEstimate:
    """expected_error averages ||D_hat - D||^2 over ``epochs`` passes of ``batch_source``.

    ``batch_source`` is iterated once per epoch (``set_epoch(e)`` is called
    first when it has one, as with DataLoader samplers); a one-shot iterator
    works with epochs=1. Pass a prebuilt ``evaluator`` to reuse the
    full-data terms across samplers; ``on_epoch(e)`` is called after each epoch.
    The epochs are ``first_epoch, first_epoch + 1, ...``. Also returns the
    squared bias of the batches' mean (``ErrorEstimate.bias2``).

    Example:
        >>> import numpy as np, psda
        >>> from psda.variance import expected_error
        >>> rng = np.random.default_rng(0)
        >>> s, t = rng.normal(size=(40, 2)), rng.normal(size=(30, 2))
        >>> smp = psda.batch_sampler("uniform", s, t, 8, num_replicas=1, rank=0)
        >>> r = expected_error(s, t, smp, epochs=5)
        >>> r.n_batches, 0 <= r.bias2 <= r.mean
        (25, True)
    """
    if epochs < 1:
        raise ValueError(f"epochs = {epochs}: want >= 1")
    ev = evaluator or DiscrepancyError(source, target, discrepancy=discrepancy,
                                       kernel=kernel, gammas=gammas)
    per_epoch: List[np.ndarray] = []
    total, count = None, 0
    for e in range(first_epoch, first_epoch + epochs):
        if hasattr(batch_source, "set_epoch"):
            batch_source.set_epoch(e)
        batches = list(batch_source)
        per_epoch.append(ev.batch_errors(batches))
        t_e, n_e = ev.batch_sum(batches)
        total, count = (t_e, n_e) if total is None else (_add(total, t_e), count + n_e)
        if on_epoch is not None:
            on_epoch(e)
    allerr = np.concatenate(per_epoch)
    if len(allerr) == 0:
        raise ValueError("the batch source yielded no batches")
    means = np.array([x.mean() for x in per_epoch if len(x)])
    # The spread of epoch means captures the correlation between the batches
    # of one epoch, but needs a few epochs to be estimated at all.
    if len(means) >= 5:
        se = float(means.std(ddof=1) / math.sqrt(len(means)))
    else:
        se = float(allerr.std(ddof=1) / math.sqrt(len(allerr))) if len(allerr) > 1 else math.nan
    return ErrorEstimate(float(allerr.mean()), se, len(allerr), epochs, ev.mean_error(total, count), (total, count))


def _add(a: Any, b: Any) -> Any:
    return (a[0] + b[0], a[1] + b[1]) if isinstance(a, tuple) else a + b


def pooled_bias2(estimates: Sequence[ErrorEstimate], evaluator: DiscrepancyError) -> Tuple[float, float]:
    """The squared bias over independent plans, unbiased for ||E D_hat - D||^2: returns (bias2, noise).

    E is over the plans' draws, the epochs' shuffles and the batches. Each
    estimate's mean of D_hat, x_p (m of them, equal weight), is an
    independent draw of a mean whose expectation is E D_hat; the plug-in
    ||x_bar - D||^2 exceeds ||E D_hat - D||^2 by tr Cov(x_bar) = tr S / m in
    expectation, where tr S = sum_p ||x_p - x_bar||^2 / (m - 1) =
    (sum_p ||x_p - D||^2 - m ||x_bar - D||^2) / (m - 1). Returns
    (plug-in - tr S / m, tr S / m); the first can come out below 0 when the
    bias is below the noise. m = 1 gives (plug-in, nan).
    """
    m = len(estimates)
    if m == 0:
        raise ValueError("estimates is empty: pass the ErrorEstimate of each plan")
    means = [(e.total[0], e.total[1]) for e in estimates]
    if isinstance(means[0][0], tuple):
        bar = (sum(t[0] / n for t, n in means) / m, sum(t[1] / n for t, n in means) / m)
    else:
        bar = sum(t / n for t, n in means) / m
    b_bar = evaluator.mean_error(bar, 1)
    if m == 1:
        return b_bar, math.nan
    tr_s = (sum(evaluator.mean_error(t, n) for t, n in means) - m * b_bar) / (m - 1)
    return b_bar - tr_s / m, tr_s / m
