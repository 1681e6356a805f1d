"""Batch samplers for domain adaptation, all subclasses of one :class:`BatchSampler`.

``psda.batch_sampler(name, source_features, target_features, batch_size,
**options)`` builds any of :data:`psda.SAMPLERS` (the registry,
:mod:`psda.samplers.registry`):

============== ==========================================================
uniform        independent random permutations
kmeans++       k-means++ seeding per minibatch (Arthur & Vassilvitskii 2007)
dpp            k-DPP per minibatch (Kulesza & Taskar 2011; Zhang et al. 2017)
anticlustering k-means anticlusters as batches (Papenberg & Klau 2021)
vardass        stratified sampling, VaRDASS (Napoli & White, arXiv 2512.05226)
ordered        stratified batches in an optimised order, ORDERED
               (Napoli & White, arXiv 2605.05084)
random-pairs   control: PSDA's batch structure from random pairs
paired         PSDA, Paired (psda.PairedBatchSampler, stages=1)
double-paired  PSDA, Double-paired (psda.PairedBatchSampler, stages=2)
============== ==========================================================

The classes are imported on first use (PEP 562), so that importing the
registry, and ``psda.SAMPLERS``, imports neither torch nor the samplers.
docs/samplers.md gives each method's paper, equations and deviations.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SAMPLERS", "batch_sampler", "distributed_batch_sampler", "BatchSampler", "DABatchSampler",
           "PairedBatchSampler", "RandomPairsSampler", "UniformSampler", "KMeansPPSampler", "DPPSampler",
           "AnticlusteringSampler", "VaRDASSSampler", "OrderedSampler"]

from .registry import SAMPLERS

_WHERE = {"BatchSampler": "base", "DABatchSampler": "base", "PairedBatchSampler": "paired",
          "RandomPairsSampler": "paired", "UniformSampler": "simple", "KMeansPPSampler": "simple",
          "DPPSampler": "dpp", "AnticlusteringSampler": "stratified", "VaRDASSSampler": "stratified",
          "OrderedSampler": "stratified"}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'psda.samplers' has no attribute {name!r}")
    if name == "DABatchSampler":  # the base's earlier name
        name = "BatchSampler"
    return getattr(importlib.import_module(f"psda.samplers.{module}"), name)


def batch_sampler(name: str, source_features: Any, target_features: Any, batch_size: int, **options: Any) -> Any:
    """Returns the batch sampler ``name`` over ``ConcatDataset([source_ds, target_ds])``.

    Every sampler yields lists of indices (k source indices, then k target
    indices offset by n_source; the epoch's last batch holds N mod k of each
    with ``drop_last=False``), has an exact ``len`` (the same for every name),
    its own generator seeded by ``seed`` and the epoch, ``set_epoch``,
    ``state_dict``/``load_state_dict`` (mid-epoch resume), sharding by
    ``num_replicas``/``rank``, ``views()`` and ``update(source_features,
    target_features)``: the contract of :class:`BatchSampler`.

    Args:
        name: one of :data:`SAMPLERS`.
        source_features: (n_source, d) features of the source dataset, in its order.
        target_features: (n_target, d) features of the target dataset.
        batch_size: k, examples per domain in a batch.
        **options: the sampler's own options: ``seed``, ``drop_last``,
            ``num_replicas``, ``rank`` for all; ``discrepancy``, ``kernel``,
            ``gammas`` for the feature-space samplers and PSDA; ``passes``,
            ``partners``, ``progress`` for vardass/ordered/anticlustering;
            ``strata``, ``min_cluster_size`` for ordered; ``exact_limit``,
            ``progress`` for dpp; ``stages`` for random-pairs; ``solver`` and
            ``imbalance`` (``"cost"``, ``"random"``, ``"systematic"``: who
            takes the smaller domain's extra uses) for paired/double-paired
            (``stages`` is set by the name).

    Raises:
        ValueError: for an unknown name (listing SAMPLERS) or invalid options.

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(64, 2))
        >>> [len(psda.batch_sampler(n, x, x + 1, 8, num_replicas=1, rank=0)) for n in psda.SAMPLERS]
        [8, 8, 8, 8, 8, 8, 8, 8, 8]
    """
    from .registry import build

    return build(name, source_features, target_features, batch_size, **options)


def distributed_batch_sampler(name: str, source_features: Any, target_features: Any, batch_size: int, *,
                              broadcast: bool = True, **options: Any) -> Any:
    """Returns ``batch_sampler(name, ...)`` for this rank of a torch.distributed job.

    The features are rank 0's (broadcast when ``broadcast`` and a process
    group is initialised), ``num_replicas``/``rank`` default to the world,
    and the set-up is checked to be identical on every rank (its
    :meth:`BatchSampler.digest`, a 16-byte all-gather). Every rank must call it.

    Raises:
        RuntimeError: if the ranks' set-ups differ.
    """
    from .. import distributed

    if broadcast:
        source_features, target_features = distributed.broadcast_features(source_features, target_features)
    sampler = batch_sampler(name, source_features, target_features, batch_size, **options)
    distributed.check_identical(sampler)
    return sampler
