"""Loaders driven by one PSDA sampler that stay aligned under prefetching.

:class:`PairedLoaders` runs one ``DataLoader`` over ``ConcatDataset([source, target])``
with a ``psda.PairedBatchSampler`` as its batch sampler, and splits every batch into
parts handed to several consumers (by default a source stream and a target stream).
A batch is fetched only when a consumer's queue is empty, and its parts go to every
consumer's queue at once, so the consumers see the parts of the same batch in the same
order whatever order they call ``next`` in and however far the DataLoader (or its
worker processes) prefetches. The DataLoader is iterated again at the end of each
epoch (after ``on_epoch_end``, which is where a :class:`psda.refresh.FeatureRefresher`
joins a background matching), so a new matching starts with a fresh epoch.

:class:`DomainBedPSDA` adapts this to DomainBed's ``train.py``: it stands in for
``InfiniteDataLoader`` (one per training environment, then one per UDA split), builds
one sampler with source = the union of the training environments and target = the
union of the UDA splits, and hands environment i the rows of each source batch that
came from environment i (and likewise for the UDA splits).
"""

from __future__ import annotations

import collections
import logging
from typing import Any, Callable, Dict, Hashable, Iterator, List, Optional

import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset

__all__ = ["split_halves", "PairedLoaders", "TaggedDataset", "DomainBedPSDA"]

_log = logging.getLogger("psda")


def _map(batch: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """Apply fn to every tensor of a collated batch (tensor, tuple, list or dict)."""
    if torch.is_tensor(batch):
        return fn(batch)
    if isinstance(batch, (tuple, list)):
        return type(batch)(_map(b, fn) for b in batch)
    if isinstance(batch, dict):
        return {k: _map(v, fn) for k, v in batch.items()}
    raise TypeError("cannot split a batch field of type %s; PSDA loaders split tensors, tuples, lists and "
                    "dicts of tensors (check the dataset's items / collate_fn)" % type(batch).__name__)


def _first_tensor(batch: Any) -> torch.Tensor:
    if torch.is_tensor(batch):
        return batch
    values = batch.values() if isinstance(batch, dict) else batch
    for b in values:
        return _first_tensor(b)
    raise TypeError("batch has no tensor to split")


def split_halves(batch: Any) -> Dict[Hashable, Any]:
    """split_halves returns {'source': first half, 'target': second half} of a collated
    batch of 2k rows, the layout PairedBatchSampler yields."""
    k = _first_tensor(batch).shape[0] // 2
    return {"source": _map(batch, lambda t: t[:k]), "target": _map(batch, lambda t: t[k:])}


class PairedLoaders:
    """PairedLoaders drives one DataLoader with a PSDA batch sampler and hands each
    batch's parts to aligned consumer streams.

    Args:
        source_dataset, target_dataset: the datasets the sampler indexes (the sampler's
            target indices are offset by len(source_dataset), as in ConcatDataset).
        sampler: a ``psda.PairedBatchSampler`` (any batch sampler works).
        split: maps a collated batch to {key: part}; default :func:`split_halves`.
        on_epoch_end: called when the DataLoader is exhausted, before it is iterated
            again (e.g. ``refresher.epoch_end``).
        infinite: iterate over epochs forever (DomainBed style); otherwise streams stop
            at the end of an epoch.
        loader_kwargs: passed to DataLoader (num_workers, pin_memory, collate_fn, ...);
            ``persistent_workers`` defaults to True when num_workers > 0 (the sampler is
            iterated in the main process, so updates still reach the next epoch).

    Example::

        paired = PairedLoaders(src_ds, tgt_ds, sampler, num_workers=2)
        for (xs, ys), (xt, _) in zip(paired.stream("source"), paired.stream("target")):
            ...

    A consumer that runs ahead of the others makes their queues grow: iterate them in
    lockstep.
    """

    def __init__(self, source_dataset: Dataset, target_dataset: Dataset, sampler: Any, *,
                 split: Callable[[Any], Dict[Hashable, Any]] = split_halves,
                 on_epoch_end: Optional[Callable[[], Any]] = None,
                 infinite: bool = True, **loader_kwargs: Any):
        if loader_kwargs.get("num_workers", 0) > 0:
            loader_kwargs.setdefault("persistent_workers", True)
        self.sampler = sampler
        self.dataset = ConcatDataset([source_dataset, target_dataset])
        self.loader = DataLoader(self.dataset, batch_sampler=sampler, **loader_kwargs)
        self.split = split
        self.on_epoch_end = on_epoch_end
        self.infinite = infinite
        self.epochs = 0
        self._queues: Dict[Hashable, collections.deque] = collections.defaultdict(collections.deque)
        self._it: Optional[Iterator] = None

    def _fetch(self) -> bool:
        """Fetch one batch and queue its parts; False at the end of a finite epoch."""
        while True:
            if self._it is None:
                self._it = iter(self.loader)
            try:
                batch = next(self._it)
                break
            except StopIteration:
                self._it = None
                self.epochs += 1
                if self.on_epoch_end is not None:
                    self.on_epoch_end()
                if not self.infinite:
                    return False
        for key, part in self.split(batch).items():
            self._queues[key].append(part)
        return True

    def next(self, key: Hashable) -> Any:
        """next returns the consumer ``key``'s part of its next batch; StopIteration at
        the end of an epoch when not infinite."""
        q = self._queues[key]
        while not q:
            if not self._fetch():
                raise StopIteration
        return q.popleft()

    def stream(self, key: Hashable) -> Iterator[Any]:
        """stream yields consumer ``key``'s parts, batch after batch."""
        while True:
            try:
                yield self.next(key)
            except StopIteration:
                return


class TaggedDataset(Dataset):
    """TaggedDataset returns ``dataset[i] + (tag,)``: items of an (x, y) dataset become
    (x, y, tag), so a batch of a union of datasets can be split by origin."""

    def __init__(self, dataset: Dataset, tag: int):
        self.dataset = dataset
        self.tag = tag

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int):
        item = self.dataset[i]
        if not isinstance(item, (tuple, list)):
            item = (item,)
        return tuple(item) + (self.tag,)


class _EnvLoader:
    """Stands in for DomainBed's InfiniteDataLoader of one environment: yields (x, y)
    with the rows of each PSDA batch that came from this environment."""

    def __init__(self, owner: "DomainBedPSDA", key: tuple):
        self.owner = owner
        self.key = key

    def __iter__(self):
        while True:
            yield self.owner.paired().next(self.key)

    def __len__(self):
        raise ValueError  # as DomainBed's InfiniteDataLoader


class DomainBedPSDA:
    """DomainBedPSDA replaces DomainBed's InfiniteDataLoader for a PSDA run.

    ``train.py`` creates one loader per training environment and then one per UDA split;
    :meth:`loader` stands in for the constructor and records the datasets. On the first
    ``next`` (after the algorithm exists, see :meth:`attach`) it extracts features with
    the algorithm's featurizer, builds one PairedBatchSampler (source = union of the
    training environments, target = union of the UDA splits, k = per-environment batch
    size × number of training environments, ``hparams['psda_stages']``) and one
    :class:`PairedLoaders`; the algorithm's ``after_step`` refreshes the matching every
    ``hparams['psda_refresh_steps']`` steps (0: never), in the background when
    ``hparams['psda_background']``.

    Args:
        n_train: how many of the loaders train.py creates are training environments
            (the rest are UDA splits).
        num_workers: workers of the single DataLoader (None: DomainBed's per-dataset
            value passed to the first loader).
        seed: the sampler's seed.
    """

    def __init__(self, n_train: int, *, num_workers: Optional[int] = None, seed: int = 0):
        self.n_train = n_train
        self.num_workers = num_workers
        self.seed = seed
        self.source: List[Dataset] = []
        self.target: List[Dataset] = []
        self.batch_size: Optional[int] = None
        self.algorithm: Any = None
        self.sampler: Any = None
        self.refresher: Any = None
        self._paired: Optional[PairedLoaders] = None

    def loader(self, dataset: Dataset, weights: Any, batch_size: int, num_workers: int) -> _EnvLoader:
        """loader has InfiniteDataLoader's signature and returns a stand-in for it."""
        if weights is not None:
            _log.warning("psda: class_balanced weights are ignored; PSDA chooses the batches")
        if self.batch_size is None:
            self.batch_size = batch_size
        if self.num_workers is None:
            self.num_workers = num_workers
        if len(self.source) < self.n_train:
            self.source.append(dataset)
            return _EnvLoader(self, ("source", len(self.source) - 1))
        self.target.append(dataset)
        return _EnvLoader(self, ("target", len(self.target) - 1))

    def attach(self, algorithm: Any) -> None:
        """attach records the algorithm whose featurizer computes the features."""
        self.algorithm = algorithm

    def _split(self, batch: Any) -> Dict[Hashable, Any]:
        halves = split_halves(batch)
        parts = {}
        for role, n in (("source", len(self.source)), ("target", len(self.target))):
            x, y, env = halves[role]
            for i in range(n):
                rows = env == i
                parts[(role, i)] = (x[rows], y[rows])
        return parts

    def paired(self) -> PairedLoaders:
        """paired returns the PairedLoaders, building sampler and loaders on first use."""
        if self._paired is None:
            self._build()
        assert self._paired is not None
        return self._paired

    def _build(self) -> None:
        import psda

        from ..refresh import FeatureRefresher, extract_features

        if self.algorithm is None:
            raise RuntimeError("psda: no PSDA algorithm attached; run with --algorithm PSDA_MMD or PSDA_CORAL")
        if not self.target:
            raise ValueError("psda: no UDA split; run DomainBed with --task domain_adaptation "
                             "--uda_holdout_fraction 0.5 (any value > 0)")
        hp = self.algorithm.hparams
        src = ConcatDataset([TaggedDataset(d, i) for i, d in enumerate(self.source)])
        tgt = ConcatDataset([TaggedDataset(d, i) for i, d in enumerate(self.target)])
        k = self.batch_size * self.n_train
        device = next(self.algorithm.parameters()).device
        fkw = dict(batch_size=hp.get("psda_feature_batch_size", 64), device=device)
        zs = extract_features(self.algorithm.featurizer, src, desc="psda source", **fkw)
        zt = extract_features(self.algorithm.featurizer, tgt, desc="psda target", **fkw)
        gammas = tuple(hp.get("psda_gammas", (0.001, 0.01, 0.1, 1.0, 10.0)))
        disc = getattr(self.algorithm, "discrepancy", "mmd")
        self.sampler = psda.PairedBatchSampler(zs, zt, k, stages=hp.get("psda_stages", 2), discrepancy=disc,
                                               gammas=gammas, seed=self.seed, solver=hp.get("psda_solver", "auto"))
        every = hp.get("psda_refresh_steps", 0) or None
        self.refresher = FeatureRefresher(self.sampler, self.algorithm.featurizer, src, tgt, every_steps=every,
                                          background=bool(hp.get("psda_background", False)), **fkw)
        self.algorithm.after_step = self.refresher.step
        self._paired = PairedLoaders(src, tgt, self.sampler, split=self._split,
                                     on_epoch_end=self.refresher.epoch_end, num_workers=self.num_workers or 0)
        _log.info("psda: %d source and %d target items, k=%d, %d batches per epoch",
                  len(src), len(tgt), k, len(self.sampler))


_ACTIVE: Optional[DomainBedPSDA] = None


def activate(coordinator: Optional[DomainBedPSDA]) -> None:
    """activate makes ``coordinator`` the one PSDA algorithms attach to when created
    (None deactivates); ``python -m psda.domainbed`` calls it before running train.py."""
    global _ACTIVE
    _ACTIVE = coordinator


def attach_active(algorithm: Any) -> None:
    """attach_active attaches ``algorithm`` to the active coordinator, if any."""
    if _ACTIVE is not None:
        _ACTIVE.attach(algorithm)
