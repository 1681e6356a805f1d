"""Batch samplers for domain adaptation, all with PairedBatchSampler's contract.

``psda.batch_sampler(name, source_features, target_features, batch_size,
**options)`` builds any of :data:`SAMPLERS`:

============== ==========================================================
uniform        independent random permutations
kmeans++       k-means++ seeding per minibatch (Arthur & Vassilvitskii 2007)
dpp            k-DPP per minibatch (Kulesza & Taskar 2011; Zhang et al. 2017)
anticlustering k-means anticlusters as batches (Papenberg & Klau 2021)
vardass        stratified sampling, VaRDASS (Napoli & White, arXiv 2512.05226)
ordered        stratified batches in an optimised order, ORDERED
               (Napoli & White, arXiv 2605.05084)
paired         PSDA, Paired (psda.PairedBatchSampler, stages=1)
double-paired  PSDA, Double-paired (psda.PairedBatchSampler, stages=2)
============== ==========================================================

docs/samplers.md gives each method's paper, equations and deviations.
"""

from __future__ import annotations

from typing import Any

from .base import DABatchSampler
from .dpp import DPPSampler
from .simple import KMeansPPSampler, UniformSampler
from .stratified import AnticlusteringSampler, OrderedSampler, VaRDASSSampler

__all__ = ["SAMPLERS", "batch_sampler", "distributed_batch_sampler", "plan_digest", "DABatchSampler", "UniformSampler", "KMeansPPSampler", "DPPSampler",
           "AnticlusteringSampler", "VaRDASSSampler", "OrderedSampler"]

from .. import SAMPLERS  # the names psda.batch_sampler accepts: baselines, then PSDA

_CLASSES = {"uniform": UniformSampler, "kmeans++": KMeansPPSampler, "dpp": DPPSampler,
            "anticlustering": AnticlusteringSampler, "vardass": VaRDASSSampler, "ordered": OrderedSampler}


def batch_sampler(name: str, source_features: Any, target_features: Any, batch_size: int, **options: Any) -> Any:
    """Returns the batch sampler ``name`` over ``ConcatDataset([source_ds, target_ds])``.

    Every sampler yields lists of ``2 * batch_size`` indices (k source indices,
    then k target indices offset by n_source), has an exact ``len``, its own
    generator seeded by ``seed`` and the epoch, ``set_epoch``,
    ``state_dict``/``load_state_dict`` (mid-epoch resume), sharding by
    ``num_replicas``/``rank``, and ``update(source_features, target_features)``.

    Args:
        name: one of :data:`SAMPLERS`.
        source_features: (n_source, d) features of the source dataset, in its order.
        target_features: (n_target, d) features of the target dataset.
        batch_size: k, examples per domain in a batch.
        **options: the sampler's own options: ``seed``, ``drop_last``,
            ``num_replicas``, ``rank`` for all; ``discrepancy``, ``kernel``,
            ``gammas`` for the feature-space samplers and PSDA; ``passes``,
            ``partners``, ``progress``, ``engine`` for vardass/ordered/anticlustering;
            ``strata``, ``min_cluster_size`` for ordered; ``exact_limit``,
            ``progress``, ``engine`` for dpp; ``solver`` for paired/double-paired (``stages`` is set by
            the name).

    Raises:
        ValueError: for an unknown name (listing SAMPLERS) or invalid options.

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(64, 2))
        >>> [len(psda.batch_sampler(n, x, x + 1, 8, num_replicas=1, rank=0)) for n in psda.SAMPLERS]
        [8, 8, 8, 8, 8, 8, 8, 8]
    """
    if name in ("paired", "double-paired"):
        from ..sampler import PairedBatchSampler

        if "stages" in options:
            raise ValueError(f"stages = {options['stages']!r}: the name {name!r} sets it; "
                             "use 'paired' (1) or 'double-paired' (2)")
        return PairedBatchSampler(source_features, target_features, batch_size,
                                  stages=1 if name == "paired" else 2, **options)
    cls = _CLASSES.get(name)
    if cls is None:
        raise ValueError(f"name = {name!r}: want one of {', '.join(SAMPLERS)}")
    return cls(source_features, target_features, batch_size, **options)



def plan_digest(sampler: Any) -> bytes:
    """A 16-byte BLAKE2 digest of a sampler's set-up (its plan, or a PairedBatchSampler's matching)."""
    import hashlib

    import numpy as np

    if not isinstance(sampler, DABatchSampler):
        from ..distributed import matching_digest

        return matching_digest(sampler.matching)
    h = hashlib.blake2b(digest_size=16)
    for key in sorted(sampler.plan):
        v = sampler.plan[key]
        items = sorted(v.items()) if isinstance(v, dict) else [("", v)]
        for sub, a in items:
            a = np.ascontiguousarray(np.asarray(a))
            h.update(f"{key}/{sub}/{a.dtype}/{a.shape}".encode())
            h.update(a.tobytes())
    return h.digest()


def distributed_batch_sampler(name: str, source_features: Any, target_features: Any, batch_size: int, *,
                              broadcast: bool = True, **options: Any) -> Any:
    """Returns ``batch_sampler(name, ...)`` for this rank of a torch.distributed job.

    As :func:`psda.distributed.paired_batch_sampler` does for PSDA: the features
    are rank 0's (broadcast when ``broadcast`` and a process group is
    initialised), ``num_replicas``/``rank`` default to the world, and the set-up
    is checked to be identical on every rank (a 16-byte all-gather). Every rank
    must call it.

    Raises:
        RuntimeError: if the ranks' set-ups differ.
    """
    import types

    import numpy as np

    from .. import distributed

    if broadcast:
        source_features, target_features = distributed.broadcast_features(source_features, target_features)
    sampler = batch_sampler(name, source_features, target_features, batch_size, **options)
    d = np.frombuffer(plan_digest(sampler), dtype=np.int64)
    distributed.check_identical(types.SimpleNamespace(pairs=d, quads=d[:0], singles=d[:0]))
    return sampler
