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
from typing import Any, Callable, Dict, Hashable, Iterator, List, Optional

import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset

__all__ = ["split_halves", "PairedLoaders", "TaggedDataset", "DomainBedPSDA"]


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
        before_fetch: called with the number of batches fetched so far before each
            fetch, i.e. when a consumer asks for a batch that is not queued yet: in a
            training loop, after the previous step's update and never after the last
            step (the DomainBed stand-in refreshes its sampler here).
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
                 before_fetch: Optional[Callable[[int], Any]] = None,
                 infinite: bool = True, **loader_kwargs: Any):
        if loader_kwargs.get("num_workers", 0) > 0:
            loader_kwargs.setdefault("persistent_workers", True)
        self.sampler = sampler
        self.dataset = ConcatDataset([source_dataset, target_dataset])
        self.loader = DataLoader(self.dataset, batch_sampler=sampler, **loader_kwargs)
        self.split = split
        self.on_epoch_end = on_epoch_end
        self.before_fetch = before_fetch
        self.infinite = infinite
        self.epochs = 0
        self.fetched = 0
        self._queues: Dict[Hashable, collections.deque] = collections.defaultdict(collections.deque)
        self._it: Optional[Iterator] = None

    def _fetch(self) -> bool:
        """Fetch one batch and queue its parts; False at the end of a finite epoch."""
        if self.before_fetch is not None:
            self.before_fetch(self.fetched)
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
        self.fetched += 1
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
    with the rows of each sampler batch that came from this environment."""

    def __init__(self, owner: "DomainBedPSDA", key: tuple):
        self.owner = owner
        self.key = key

    def __iter__(self):
        while True:
            yield self.owner.next(self.key)

    def __len__(self):
        raise ValueError  # as DomainBed's InfiniteDataLoader


def _print(msg: str) -> None:
    print(msg, flush=True)  # train.py tees stdout into out.txt


class DomainBedPSDA:
    """DomainBedPSDA replaces DomainBed's InfiniteDataLoader for a run with a psda
    sampler (any algorithm with a ``featurizer``).

    ``train.py`` creates one loader per training environment and then one per UDA split;
    :meth:`loader` stands in for the constructor and records the datasets. On the first
    batch request (after the algorithm exists and was attached, see :meth:`attach`) it
    extracts features with the algorithm's featurizer and builds one batch sampler
    (:func:`psda.domainbed.samplers.make_batch_sampler`; source = union of the training
    environments, target = union of the UDA splits) and one :class:`PairedLoaders`.

    Batches. k = batch_size × number of training environments source items and k target
    items (DomainBed's ERM sees as many source items per step). When k is more than the
    sampler can serve (see :func:`~psda.domainbed.samplers.batch_limit`), or odd for the
    double-paired sampler, it is lowered and the new k is printed (out.txt).

    Pairing. Environment i gets the rows of each batch that came from environment i, in
    batch order, so ``torch.cat`` of the training minibatches lists the source rows
    grouped by environment. The target rows are put in the same order, so that with one
    UDA split row m of ``cat(unlabeled)`` is the partner of row m of
    ``cat(minibatches)``. With several UDA splits each split gets its own rows and the
    algorithm's ``psda_target_order`` (if it has that attribute) is set, for the step,
    to the permutation that restores the pairing (see ``PSDAAlgorithm.update``).

    Refresh. Every ``hparams['psda_refresh_steps']`` steps (0: never) the features are
    extracted again and handed to ``sampler.update`` (samplers that have it), in a
    thread when ``hparams['psda_background']``. A refresh runs when the batch after the
    step is requested, so none runs after the final step; its time is printed. It is in
    force from the next epoch, or with ``hparams['psda_refresh_effective'] == "batch"``
    also for the rest of the running epoch (re-grouped from the next batch; a background
    one is joined when the following batch is requested).

    Args:
        n_train: how many of the loaders train.py creates are training environments
            (the rest are UDA splits).
        sampler: a name from :data:`psda.domainbed.samplers.SAMPLERS`.
        num_workers: workers of the single DataLoader (None: DomainBed's per-dataset
            value passed to the first loader).
        seed: the sampler's seed.
        log: where messages go (default: print to stdout, i.e. out.txt).
    """

    def __init__(self, n_train: int, sampler: str = "double-paired", *, num_workers: Optional[int] = None,
                 seed: int = 0, log: Callable[[str], None] = _print):
        self.n_train = n_train
        self.sampler_name = sampler
        self.num_workers = num_workers
        self.seed = seed
        self.log = log
        self.source: List[Dataset] = []
        self.target: List[Dataset] = []
        self.batch_size: Optional[int] = None
        self.k: Optional[int] = None
        self.algorithm: Any = None
        self.sampler: Any = None
        self.refresher: Any = None
        self.every = 0
        self.refresh_times: List[float] = []
        self._paired: Optional[PairedLoaders] = None
        self._said_weights = False
        self._said_thin = False

    def loader(self, dataset: Dataset, weights: Any, batch_size: int, num_workers: int) -> _EnvLoader:
        """loader has InfiniteDataLoader's signature and returns a stand-in for it."""
        if weights is not None and not self._said_weights:
            # Said in out.txt: psda's logger has only a NullHandler, where nobody reads it.
            self.log("psda: hparams['class_balanced'] is ignored: the %s sampler chooses every batch, "
                     "not DomainBed's class-weighted loader" % self.sampler_name)
            self._said_weights = True
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

    def next(self, key: tuple) -> Any:
        """next returns environment ``key``'s part of its next batch."""
        paired = self.paired()
        part = paired.next(key)
        if key == ("target", 0):
            order = paired.next("order")  # queued with this batch: no fetch
            if hasattr(self.algorithm, "psda_target_order"):
                self.algorithm.psda_target_order = order
        return part

    def _split(self, batch: Any) -> Dict[Hashable, Any]:
        halves = split_halves(batch)
        xs, ys, es = halves["source"]
        xt, yt, et = halves["target"]
        # Source rows grouped by environment (stable: batch order within one), as
        # torch.cat(minibatches) will list them; target rows permuted alike, so target
        # row m is again the partner of source row m.
        ps = torch.argsort(es, stable=True)
        xs, ys, es, xt, yt, et = xs[ps], ys[ps], es[ps], xt[ps], yt[ps], et[ps]
        # Target rows grouped by UDA split; cat(unlabeled)[order] undoes the grouping.
        pt = torch.argsort(et, stable=True)
        order = None
        if len(self.target) > 1:
            order = torch.empty_like(pt)
            order[pt] = torch.arange(len(pt))
        parts: Dict[Hashable, Any] = {"order": order}
        self._say_thin_environment(es)
        for i in range(len(self.source)):
            rows = es == i
            parts[("source", i)] = (xs[rows], ys[rows])
        xt, yt, et = xt[pt], yt[pt], et[pt]
        for j in range(len(self.target)):
            rows = et == j
            parts[("target", j)] = (xt[rows], yt[rows])
        return parts

    def _say_thin_environment(self, envs: torch.Tensor) -> None:
        """Says in out.txt, once, when the algorithm is DomainBed's and a training
        environment got no source row of a batch (or one, with CORAL): the sampler draws
        from the union of the environments, and DomainBed's algorithms that take a
        statistic per environment (MMD, CORAL, IRM, VREx, GroupDRO, ...) turn an empty
        environment into NaN, CORAL a one-row one too, without an error. psda's
        algorithms concatenate the environments and are not concerned; they are told by
        psda_target_order, as in next (no import of .algorithms, which imports this module)."""
        if self._said_thin or hasattr(self.algorithm, "psda_target_order"):
            return
        coral = self._discrepancy() == "coral"
        counts = torch.bincount(envs, minlength=len(self.source))
        i = int(torch.argmin(counts))
        if counts[i] >= (2 if coral else 1):
            return
        self._said_thin = True
        step = self._paired.fetched - 1 if self._paired is not None else 0
        if counts[i] == 0:
            why = ("%s fails on it if it handles each environment apart: an error where the network cannot "
                   "take an empty batch (DomainBed's MNIST_CNN), NaN losses where it takes a statistic per "
                   "environment (DomainBed's MMD, CORAL, IRM, VREx, GroupDRO; ERM and DANN concatenate)"
                   % type(self.algorithm).__name__)
        else:
            why = "the covariance of one row is NaN (DomainBed's CORAL)"
        self.log("psda: training environment %d got %s of the %d source rows of the batch for step %d "
                 "(the %s sampler draws from the union of the %d training environments): %s. Raise "
                 "batch_size (k = batch_size x training environments), or use UDA_MMD / UDA_CORAL. Said once."
                 % (i, "no rows" if counts[i] == 0 else "1 row", len(envs), step, self.sampler_name,
                    len(self.source), why))

    def paired(self) -> PairedLoaders:
        """paired returns the PairedLoaders, building sampler and loaders on first use."""
        if self._paired is None:
            self._build()
        assert self._paired is not None
        return self._paired

    def _discrepancy(self) -> str:
        disc = getattr(self.algorithm, "discrepancy", None)
        if disc is None:  # DomainBed's CORAL is its MMD class with the mean_cov kernel
            disc = "coral" if getattr(self.algorithm, "kernel_type", "") == "mean_cov" else "mmd"
        return disc

    def _batch_k(self, n_s: int, n_t: int) -> int:
        from .samplers import batch_limit

        assert self.batch_size is not None
        want = self.batch_size * self.n_train
        limit = batch_limit(self.sampler_name, n_s, n_t)
        k = min(want, limit)
        even = self.sampler_name == "double-paired"  # quadruplets: two pairs per unit
        if even and k % 2:
            k -= 1
        floor = 2 if even or self._discrepancy() == "coral" else 1
        if k < floor:
            raise ValueError("psda: the %s sampler cannot form a batch of %d items per domain from %d source and "
                             "%d target items; use more data (a larger --uda_holdout_fraction) or another sampler"
                             % (self.sampler_name, floor, n_s, n_t))
        if k != want:
            self.log("psda: batch_size = %d x %d training environments = %d items per domain, but the %s sampler "
                     "serves at most %d%s from %d source and %d target items: clamped to k = %d"
                     % (self.batch_size, self.n_train, want, self.sampler_name, limit,
                        " (an even number)" if even else "", n_s, n_t, k))
        return k

    def _build(self) -> None:
        import time

        import numpy as np

        from ..refresh import FeatureRefresher, extract_features
        from .samplers import is_psda_sampler, make_batch_sampler

        if self.algorithm is None:
            raise RuntimeError("psda: no algorithm attached to the sampler's loaders; run DomainBed through "
                               "`python -m psda.domainbed`")
        if not self.target:
            raise ValueError("psda: no UDA split; run DomainBed with --task domain_adaptation "
                             "--uda_holdout_fraction 0.2 (any value > 0)")
        featurizer = getattr(self.algorithm, "featurizer", None)
        if featurizer is None and self.sampler_name != "uniform":
            raise ValueError("psda: %s has no `featurizer` to compute the %s sampler's features; use "
                             "--sampler uniform" % (type(self.algorithm).__name__, self.sampler_name))
        t0 = time.perf_counter()
        hp = self.algorithm.hparams
        src = ConcatDataset([TaggedDataset(d, i) for i, d in enumerate(self.source)])
        tgt = ConcatDataset([TaggedDataset(d, i) for i, d in enumerate(self.target)])
        self.k = k = self._batch_k(len(src), len(tgt))
        fkw: Dict[str, Any] = dict(batch_size=hp.get("psda_feature_batch_size", 64), progress=False)
        if self.sampler_name == "uniform":  # needs no features
            zs, zt = np.zeros((len(src), 1), np.float32), np.zeros((len(tgt), 1), np.float32)
        else:
            fkw["device"] = next(self.algorithm.parameters()).device
            zs = extract_features(featurizer, src, desc="psda source", **fkw)
            zt = extract_features(featurizer, tgt, desc="psda target", **fkw)
        # The RBF mixture of psda's MMD (or psda_gammas); DomainBed's algorithms have none
        # and get the sampler's default.
        gammas = hp.get("psda_gammas", getattr(self.algorithm, "gammas", None))
        options: Dict[str, Any] = {} if gammas is None else {"gammas": gammas}
        # PSDA's own options: who takes the smaller domain's extra uses (default "cost") and the
        # solver. The other samplers have no matching, and make_batch_sampler drops them there.
        psda_hp = {key: hp[key] for key in ("psda_solver", "psda_imbalance") if key in hp}
        if "psda_imbalance" in psda_hp:
            options["imbalance"] = psda_hp["psda_imbalance"]
        if psda_hp and not is_psda_sampler(self.sampler_name):
            self.log("psda: %s ignored: the %s sampler has no PSDA matching"
                     % (", ".join("hparams[%r] = %r" % kv for kv in psda_hp.items()), self.sampler_name))
        try:
            self.sampler = make_batch_sampler(self.sampler_name, zs, zt, k, seed=self.seed,
                                              discrepancy=self._discrepancy(),
                                              solver=psda_hp.get("psda_solver", "auto"), **options)
        except ValueError as e:
            # The core's message names the sampler's argument ("solver = 'x': want ..."); a
            # DomainBed user set the hparam. The argument's name, not its value: the core
            # lower-cases the solver before it checks it ('Bogus' is said as 'bogus').
            for key, value in psda_hp.items():
                arg = key[len("psda_"):]
                if str(e).startswith("%s = " % arg):
                    raise ValueError("hparams[%r] = %r: %s" % (key, value, e)) from None
            raise
        self.every = int(hp.get("psda_refresh_steps", 0) or 0)
        if self.sampler_name == "uniform" or not hasattr(self.sampler, "update"):
            self.every = 0
        # manual: these loaders decide when to refresh (every psda_refresh_steps
        # fetched batches, never after the final step) and call refresh().
        effective = hp.get("psda_refresh_effective", "epoch")
        try:
            self.refresher = FeatureRefresher(self.sampler, featurizer, src, tgt, manual=True,
                                              background=bool(hp.get("psda_background", False)),
                                              effective=effective, **fkw)
        except ValueError as e:
            if "effective" not in str(e):
                raise
            raise ValueError(f"hparams['psda_refresh_effective'] = {effective!r} with the {self.sampler_name!r} "
                             f"sampler: {e}") from None
        self._paired = PairedLoaders(src, tgt, self.sampler, split=self._split, before_fetch=self._before_fetch,
                                     on_epoch_end=self.refresher.epoch_end, num_workers=self.num_workers or 0)
        self.log("psda: %s sampler over %d source and %d target items, k = %d, %d batches per epoch, %s; "
                 "built in %.3f s"
                 % (self.sampler_name, len(src), len(tgt), k, len(self.sampler),
                    "refresh every %d steps" % self.every if self.every else "no refresh",
                    time.perf_counter() - t0))

    def _before_fetch(self, fetched: int) -> None:
        # `fetched` steps have been taken: refresh after every `every`-th, and only when
        # another step asks for a batch (so never after the final step). step() first
        # joins a background refresh with psda_refresh_effective "batch" (a no-op else).
        self.refresher.step()
        if self.every and fetched and fetched % self.every == 0:
            self.refresher.refresh()
            self.refresh_times.append(self.refresher.stalls[-1])
            self.log("psda: refresh %d after %d steps took %.3f s%s"
                     % (self.refresher.refreshes, fetched, self.refresh_times[-1],
                        " (matching continues in the background)" if self.refresher.background else ""))


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
