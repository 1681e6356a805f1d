"""Paired Sampling for Domain Adaptation (PSDA).

PSDA lowers the variance of minibatch estimates of a domain discrepancy (MMD
or CORAL) by pairing source and target examples (Stage 1) and pairs of pairs
(Stage 2) so that every minibatch is close to the full-data discrepancy. The
matchings are computed exactly by a Go core; this package exposes them as

- :func:`psda.match`: the matching of two feature arrays, a :class:`Matching`;
- :class:`psda.PairedBatchSampler`: a batch sampler for a PyTorch
  ``DataLoader`` over ``ConcatDataset([source_ds, target_ds])``;
- :func:`psda.linear_sum_assignment`: the core's exact dense assignment
  solver, a drop-in for SciPy's function.

NumPy is the only runtime dependency; torch is imported only when
``PairedBatchSampler`` is first used (which then subclasses
``torch.utils.data.Sampler``). Logging goes to the ``"psda"`` logger, silent
unless the application configures logging.

Example:
    >>> import numpy as np, psda
    >>> rng = np.random.default_rng(0)
    >>> m = psda.match(rng.normal(size=(50, 4)), rng.normal(size=(40, 4)), batch_size=8)
    >>> m.pairs.shape
    (50, 2)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Tuple

import numpy as np

from ._matching import DEFAULT_GAMMAS, Matching, match
from .loader import paired_loader, split_batch

if TYPE_CHECKING:  # pragma: no cover
    from .sampler import PairedBatchSampler

logging.getLogger("psda").addHandler(logging.NullHandler())

__all__ = ["match", "Matching", "PairedBatchSampler", "linear_sum_assignment", "DEFAULT_GAMMAS",
           "__version__", "core_version", "paired_loader", "split_batch"]

try:
    from importlib.metadata import PackageNotFoundError, version as _dist_version

    __version__ = _dist_version("psda")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"


def core_version() -> str:
    """Returns the version string of the compiled Go core."""
    from . import _native

    return _native.version()


def linear_sum_assignment(cost_matrix: Any, maximize: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Solves the dense linear assignment problem exactly, like
    ``scipy.optimize.linear_sum_assignment``, with the Go core's solver
    (shortest augmenting paths with an auction warm start, optimality checked
    by dual potentials); it runs with the GIL released.

    Args:
        cost_matrix: 2-D real array-like (n_rows, n_cols); every entry finite
            (SciPy's ``inf`` for forbidden entries is not supported: use a
            large finite cost).
        maximize: maximise the total instead of minimising it.

    Returns:
        (row_ind, col_ind): int64 arrays, row_ind sorted, so that
        ``cost_matrix[row_ind, col_ind].sum()`` is optimal; min(n_rows, n_cols)
        entries.

    Raises:
        ValueError: for a matrix that is not 2-D or has NaN/Inf entries.

    Example:
        >>> import psda
        >>> psda.linear_sum_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
        (array([0, 1, 2]), array([1, 0, 2]))
    """
    from . import _native

    c = np.asarray(cost_matrix)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"cost_matrix has dtype {c.dtype}: need real numbers")
    if maximize:
        c = -c.astype(np.float64)
    rows, cols, _ = _native.linear_sum_assignment(c)
    return rows, cols


def __getattr__(name: str) -> Any:
    # PEP 562: importing the sampler imports torch (when installed), which
    # takes a second or more; psda.match alone does not need it.
    if name == "PairedBatchSampler":
        from .sampler import PairedBatchSampler

        return PairedBatchSampler
    raise AttributeError(f"module 'psda' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(list(globals()) + ["PairedBatchSampler"])
