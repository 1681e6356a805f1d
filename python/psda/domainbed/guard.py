"""A guard on DomainBed's own ``InfiniteDataLoader`` for splits smaller than a batch.

DomainBed's ``InfiniteDataLoader`` without class weights draws ``len(split)``
indices per pass and groups them into batches with ``drop_last=True``: a split
with fewer items than ``batch_size`` gives no batch at all, and its
``_InfiniteSampler`` then loops forever at 100% of a core without yielding.
In the domain-adaptation task this happens as soon as the UDA split (a fraction
of the test environment) is smaller than the batch, e.g. RotatedDigitsFlat's 48
UDA items against the default ``batch_size`` 64. psda's own loaders lower k and
say so (:class:`psda.domainbed.loaders.DomainBedPSDA`); for DomainBed's loaders,
which belong to DomainBed's algorithms, psda refuses before training instead of
changing their batch: :func:`guarded` wraps the loader class so that building it
on such a split raises :class:`SplitSmallerThanBatch`, naming the hparam and
the fixes. With class weights (``class_balanced``) DomainBed draws
``batch_size`` indices with replacement, which always fills a batch, so the
guard lets it through.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["SplitSmallerThanBatch", "guarded", "unguarded"]


class SplitSmallerThanBatch(ValueError):
    """A split has fewer items than ``batch_size``: DomainBed's loader would hang."""


def guarded(loader: Callable[..., Any]) -> Callable[..., Any]:
    """guarded returns ``loader`` (DomainBed's ``InfiniteDataLoader``) wrapped so that
    building it on a split of fewer than ``batch_size`` items without weights raises
    SplitSmallerThanBatch instead of returning a loader that never yields. Wrapping
    a guarded loader again returns it unchanged.

    Args:
        loader: a callable ``loader(dataset, weights, batch_size, num_workers)``.

    Example:
        >>> calls = []
        >>> load = guarded(lambda dataset, weights, batch_size, num_workers: calls.append(batch_size))
        >>> load(dataset=range(10), weights=None, batch_size=8, num_workers=0); calls
        [8]
        >>> load(dataset=range(5), weights=None, batch_size=8, num_workers=0)
        Traceback (most recent call last):
        ...
        psda.domainbed.guard.SplitSmallerThanBatch: a training or UDA split has 5 items, fewer than batch_size = 8: ...
    """
    if getattr(loader, "psda_guard_of", None) is not None:
        return loader

    def InfiniteDataLoader(dataset: Any, weights: Any, batch_size: int, num_workers: int) -> Any:
        if weights is None and len(dataset) < batch_size:
            raise SplitSmallerThanBatch(
                "a training or UDA split has %d items, fewer than batch_size = %d: DomainBed's "
                "InfiniteDataLoader (drop_last=True, no class weights) would never yield a batch and "
                "training would hang. Pass --hparams '{\"batch_size\": %d}' (or less), a larger "
                "--uda_holdout_fraction when it is the UDA split, or class_balanced"
                % (len(dataset), batch_size, len(dataset)))
        return loader(dataset, weights, batch_size, num_workers)

    InfiniteDataLoader.psda_guard_of = loader  # type: ignore[attr-defined]
    return InfiniteDataLoader


def unguarded(loader: Callable[..., Any]) -> Callable[..., Any]:
    """unguarded returns the loader :func:`guarded` wrapped, or ``loader`` itself."""
    return getattr(loader, "psda_guard_of", None) or loader
