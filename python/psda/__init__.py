"""Paired Sampling for Domain Adaptation (PSDA).

PSDA lowers the variance of minibatch estimates of a domain discrepancy (MMD
or CORAL) by pairing source and target examples (Stage 1) and pairs of pairs
(Stage 2) so that every minibatch is close to the full-data discrepancy. The
matchings are computed exactly by a Go core; this package exposes them as

- :func:`psda.match`: the matching of two feature arrays, a :class:`Matching`;
- :class:`psda.PairedBatchSampler`: a batch sampler for a PyTorch
  ``DataLoader`` over ``ConcatDataset([source_ds, target_ds])``.

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
from typing import TYPE_CHECKING, Any

from ._matching import DEFAULT_GAMMAS, Matching, match

if TYPE_CHECKING:  # pragma: no cover
    from .sampler import PairedBatchSampler

logging.getLogger("psda").addHandler(logging.NullHandler())

__all__ = ["match", "Matching", "PairedBatchSampler", "DEFAULT_GAMMAS", "__version__", "core_version"]

try:
    from importlib.metadata import PackageNotFoundError, version as _dist_version

    __version__ = _dist_version("psda")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"


def core_version() -> str:
    """Returns the version string of the compiled Go core."""
    from . import _native

    return _native.version()


def __getattr__(name: str) -> Any:
    # PEP 562: importing the sampler imports torch (when installed), which
    # takes a second or more; psda.match alone does not need it.
    if name == "PairedBatchSampler":
        from .sampler import PairedBatchSampler

        return PairedBatchSampler
    raise AttributeError(f"module 'psda' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(list(globals()) + ["PairedBatchSampler"])
