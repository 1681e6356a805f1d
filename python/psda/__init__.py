"""Paired Sampling for Domain Adaptation (PSDA).

PSDA lowers the variance of minibatch estimates of a domain discrepancy (MMD
or CORAL) by pairing source and target examples (Stage 1) and pairs of pairs
(Stage 2) so that every minibatch is close to the full-data discrepancy. The
matchings are computed exactly by a Go core; this package exposes them as

- :func:`psda.match`: the matching of two feature arrays, a :class:`Matching`;
- :class:`psda.PairedBatchSampler`: a batch sampler for a PyTorch
  ``DataLoader`` over ``ConcatDataset([source_ds, target_ds])``;
- :func:`psda.batch_sampler`: any of :data:`psda.SAMPLERS` (PSDA's and the
  paper's comparison samplers) behind one contract;
- :func:`psda.paired_loader` and :func:`psda.split_batch`: a DataLoader
  checked against the features, and the source/target halves of a batch;
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

from .samplers.registry import SAMPLERS

if TYPE_CHECKING:  # pragma: no cover
    from .samplers.paired import PairedBatchSampler

logging.getLogger("psda").addHandler(logging.NullHandler())

__all__ = ["match", "Matching", "PairedBatchSampler", "linear_sum_assignment", "DEFAULT_GAMMAS",
           "__version__", "core_version", "batch_sampler", "SAMPLERS", "paired_loader", "split_batch",
           "set_num_threads", "get_num_threads"]



def batch_sampler(name: str, source_features: Any, target_features: Any, batch_size: int, **options: Any) -> Any:
    """Returns the batch sampler ``name`` (one of :data:`SAMPLERS`); see :func:`psda.samplers.batch_sampler`.

    Args:
        name: a name of :data:`SAMPLERS` ("uniform", "vardass", "double-paired", ...).
        source_features, target_features: the two domains' features, one row per example.
        batch_size: examples per domain in each batch (k).
        **options: the sampler's own options (seed, drop_last, discrepancy, ...); one it does
            not take raises ValueError naming the options it takes.

    Example:
        >>> import numpy as np, psda
        >>> rng = np.random.default_rng(0)
        >>> s = psda.batch_sampler("uniform", rng.normal(size=(40, 3)), rng.normal(size=(30, 3)), 8, seed=1)
        >>> len(s), len(next(iter(s)))
        (5, 16)
    """
    from .samplers import batch_sampler as _make

    return _make(name, source_features, target_features, batch_size, **options)


try:
    from importlib.metadata import PackageNotFoundError, version as _dist_version

    __version__ = _dist_version("psda")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"


def core_version() -> str:
    """Returns the version string of the compiled Go core (the package's own is ``__version__``).

    Example:
        >>> import psda
        >>> isinstance(psda.core_version(), str) and psda.core_version() != ""
        True
    """
    from . import _native

    return _native.version()


def set_num_threads(n: int) -> None:
    """Sets the number of threads the Go core's parallel loops use at most,
    for every later matching of the process, including those the refresher
    computes in its background thread. Results do not depend on it.

    The default is all cores (Go's GOMAXPROCS: the CPUs the process may
    use), or the environment variable ``PSDA_NUM_THREADS``, read when the
    core first loads. As ``torch.set_num_threads``, this is process-wide.

    Args:
        n: a positive int (at most 2**31 - 1).

    Raises:
        TypeError: when n is not an int.
        ValueError: when n is not positive or too large.

    Example:
        >>> import psda
        >>> before = psda.get_num_threads()
        >>> psda.set_num_threads(1)
        >>> psda.get_num_threads()
        1
        >>> psda.set_num_threads(before)
    """
    from . import _native

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int, the number of threads, got {type(n).__name__} {n!r}")
    if not 1 <= n < 2**31:
        raise ValueError(f"n must be a positive number of threads (at most 2**31 - 1), got {n}")
    _native.num_threads(int(n))


def get_num_threads() -> int:
    """Returns the number of threads the Go core's parallel loops use at
    most: the count of :func:`set_num_threads`, else ``PSDA_NUM_THREADS``,
    else all cores (GOMAXPROCS).

    Example:
        >>> import psda
        >>> psda.get_num_threads() >= 1
        True
    """
    from . import _native

    return _native.num_threads()


def linear_sum_assignment(cost_matrix: Any, maximize: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Solves the dense linear assignment problem exactly, as a drop-in for
    ``scipy.optimize.linear_sum_assignment`` (SciPy's own tests for it pass,
    see tests/test_lsa_scipy.py), with the Go core's solver: shortest
    augmenting paths as SciPy's, restarted from an auction or sparse warm
    start when the paths grow long. It runs with the GIL released, and
    Ctrl-C interrupts it (KeyboardInterrupt) as it does :func:`psda.match`.

    Args:
        cost_matrix: 2-D array-like (n_rows, n_cols) of numbers that cast
            safely to float64 (bool, integers, floats; nested lists and
            ``np.matrix`` too). ``inf`` forbids a pair (``-inf`` with
            ``maximize=True``); NaN and the other infinity are invalid.
        maximize: maximise the total instead of minimising it.

    Returns:
        (row_ind, col_ind): int64 arrays, row_ind sorted, so that
        ``cost_matrix[row_ind, col_ind].sum()`` is optimal; min(n_rows, n_cols)
        entries (none for an empty matrix).

    Raises:
        TypeError: when cost_matrix does not cast safely to float64 (strings,
            complex numbers); the message is NumPy's "Cannot cast array data...".
        ValueError: "expected a matrix" for an array that is not 2-D; "matrix
            contains invalid numeric entries" for NaN or -inf (+inf with
            maximize); "cost matrix is infeasible" when the forbidden entries
            leave no assignment of every row (or every column, for a tall
            matrix) to a distinct partner. These are SciPy's types and words.

    Example:
        >>> import numpy as np, psda
        >>> psda.linear_sum_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
        (array([0, 1, 2]), array([1, 0, 2]))
        >>> psda.linear_sum_assignment([[np.inf, 1], [2, 7]])[1]
        array([1, 0])
    """
    from . import _native

    # SciPy converts with NumPy's safe casting before it checks the shape.
    c = np.asarray(cost_matrix).astype(np.float64, casting="safe", copy=False)
    if c.ndim != 2:
        raise ValueError(f"expected a matrix (2-D array), got a {c.ndim}-D array of shape {c.shape}")
    if c.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if maximize:
        c = -c
    lowest = c.min()  # NaN if any entry is NaN: one pass, no temporaries
    if lowest != lowest or lowest == -np.inf:
        i, j = np.argwhere(np.isnan(c) | (c == -np.inf))[0]
        raise ValueError(
            f"matrix contains invalid numeric entries: cost_matrix[{i}, {j}] = {_entry(c, i, j, maximize)}; "
            f"entries must be finite or {'-inf' if maximize else '+inf'} (a forbidden pair)"
        )
    rows, cols, _ = _native.linear_sum_assignment(c)
    return rows, cols


def _entry(c: np.ndarray, i: int, j: int, maximize: bool) -> float:
    """The entry (i, j) of the caller's matrix, given its float64 copy c (negated when maximize)."""
    return float(-c[i, j] if maximize else c[i, j])


def __getattr__(name: str) -> Any:
    # PEP 562: importing the sampler imports torch (when installed), which
    # takes a second or more; psda.match alone does not need it.
    if name == "PairedBatchSampler":
        from .samplers.paired import PairedBatchSampler

        return PairedBatchSampler
    raise AttributeError(f"module 'psda' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(list(globals()) + ["PairedBatchSampler"])
