"""Checked glue between a PairedBatchSampler and a DataLoader.

The sampler's batches index ``ConcatDataset([source_ds, target_ds])``: source
indices in ``[0, n_source)``, then target indices offset by ``n_source``. Two
mistakes run silently on the wrong examples: datasets whose lengths differ from
the features the sampler was built from, and the two datasets in the other
order. :func:`paired_loader` checks both and builds the loader;
:func:`split_batch` splits a collated batch into its source and target halves,
also for the short last batch of ``drop_last=False``.
"""

from __future__ import annotations

from typing import Any, Tuple

__all__ = ["paired_loader", "split_batch"]


def _unwrap(sampler: Any) -> Any:
    """The PairedBatchSampler behind sampler (itself, or what WholeBatches wraps)."""
    inner = getattr(sampler, "sampler", None)
    if inner is not None and hasattr(inner, "n_source"):
        return inner
    return sampler


def _check_lengths(source_dataset: Any, target_dataset: Any, sampler: Any) -> None:
    ps = _unwrap(sampler)
    if not (hasattr(ps, "n_source") and hasattr(ps, "n_target")):
        raise TypeError(
            f"sampler = {type(sampler).__name__}: want a psda.PairedBatchSampler (or one wrapped in "
            "psda.distributed.WholeBatches)"
        )
    try:
        ns, nt = len(source_dataset), len(target_dataset)
    except TypeError:
        raise TypeError(
            "source_dataset and target_dataset must have a length (map-style datasets): the sampler indexes "
            "their items by position"
        ) from None
    if (ns, nt) == (ps.n_source, ps.n_target):
        return
    if (ns, nt) == (ps.n_target, ps.n_source):
        raise ValueError(
            f"source_dataset has {ns} items and target_dataset {nt}, but the sampler was built from "
            f"{ps.n_source} source and {ps.n_target} target feature rows: the datasets look swapped; pass "
            "the source dataset first"
        )
    raise ValueError(
        f"source_dataset has {ns} items and target_dataset {nt}, but the sampler was built from "
        f"{ps.n_source} source and {ps.n_target} target feature rows: the features must be those of exactly "
        "these datasets, row i for item i (psda.refresh.extract_features(model, dataset) gives them)"
    )


def paired_loader(source_dataset: Any, target_dataset: Any, sampler: Any, *, loader_cls: Any = None,
                  **dataloader_kwargs: Any) -> Any:
    """Returns a DataLoader over ``ConcatDataset([source_dataset, target_dataset])``
    that takes its batches from ``sampler``, after checking that the datasets are the
    ones the sampler's features describe.

    Each batch holds the batch's source items, then the same number of target items,
    target m matched with source m; :func:`split_batch` separates them.

    Args:
        source_dataset: map-style dataset whose item i has source feature row i.
        target_dataset: map-style dataset whose item j has target feature row j.
        sampler: a :class:`psda.PairedBatchSampler`, or one wrapped in
            :class:`psda.distributed.WholeBatches`.
        loader_cls: the loader class (default ``torch.utils.data.DataLoader``), e.g.
            torchdata's ``StatefulDataLoader`` to resume mid-epoch.
        dataloader_kwargs: passed to the loader (num_workers, pin_memory,
            collate_fn, ...); not ``batch_size``, ``shuffle``, ``sampler`` or
            ``drop_last``, which the batch sampler decides.

    Raises:
        ValueError: the datasets' lengths differ from the sampler's n_source and
            n_target (or are swapped), or dataloader_kwargs sets what the sampler decides.
        TypeError: sampler is not a paired batch sampler, or a dataset has no length.

    Example:
        >>> import numpy as np, torch, psda
        >>> from torch.utils.data import TensorDataset
        >>> rng = np.random.default_rng(0)
        >>> zs, zt = rng.normal(size=(100, 4)), rng.normal(0.5, 1, size=(60, 4))
        >>> sampler = psda.PairedBatchSampler(zs, zt, batch_size=16)
        >>> loader = psda.paired_loader(TensorDataset(torch.tensor(zs)), TensorDataset(torch.tensor(zt)), sampler)
        >>> (x,) = next(iter(loader))
        >>> xs, xt = psda.split_batch(x)
        >>> xs.shape, xt.shape
        (torch.Size([16, 4]), torch.Size([16, 4]))
    """
    from torch.utils.data import ConcatDataset, DataLoader

    bad = sorted(set(dataloader_kwargs) & {"batch_size", "shuffle", "sampler", "drop_last", "batch_sampler"})
    if bad:
        raise ValueError(
            f"paired_loader got {', '.join(bad)}: the paired batch sampler decides the batches; set batch_size, "
            "drop_last and the seed on psda.PairedBatchSampler instead"
        )
    _check_lengths(source_dataset, target_dataset, sampler)
    cls = DataLoader if loader_cls is None else loader_cls
    return cls(ConcatDataset([source_dataset, target_dataset]), batch_sampler=sampler, **dataloader_kwargs)


def _is_field(v: Any) -> bool:
    """Whether v, an element of a tuple or list, is a field of a collated batch (a
    tensor, array or container) rather than one row (a number or string): default
    collate turns (x, y) items into [x_batch, y_batch], and a batch of strings
    into a list of strings."""
    return hasattr(v, "shape") or isinstance(v, (tuple, list, dict))


def _halves(x: Any, where: str) -> Tuple[Any, Any]:
    if isinstance(x, dict):
        parts = {k: _halves(v, f"{where}[{k!r}]") for k, v in x.items()}
        return {k: p[0] for k, p in parts.items()}, {k: p[1] for k, p in parts.items()}
    if isinstance(x, (tuple, list)) and not hasattr(x, "shape") and any(_is_field(v) for v in x):
        parts = [_halves(v, f"{where}[{i}]") for i, v in enumerate(x)]
        src, tgt = [p[0] for p in parts], [p[1] for p in parts]
        if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple
            return type(x)(*src), type(x)(*tgt)
        return type(x)(src), type(x)(tgt)
    try:
        n = len(x)
    except TypeError:
        raise TypeError(f"{where} ({type(x).__name__}) has no length: split_batch splits tensors, arrays and "
                        "lists along their first dimension, inside tuples, lists and dicts") from None
    if n % 2:
        raise ValueError(
            f"{where} has {n} rows: a paired batch has as many target as source rows, so an even number; "
            "was it collated from a psda.PairedBatchSampler batch?"
        )
    return x[: n // 2], x[n // 2 :]


def split_batch(batch: Any) -> Tuple[Any, Any]:
    """Splits a collated paired batch into (source part, target part).

    A batch from a :class:`psda.PairedBatchSampler` holds k' source items then k'
    target items, row m of one matched with row m of the other; k' is the
    sampler's ``batch_size`` except for the short last batch of
    ``drop_last=False``. ``x[:batch_size], x[batch_size:]`` gets that batch
    wrong; this splits every batch in the middle of its first dimension.

    Args:
        batch: a tensor, array or list of rows, or a tuple, list or dict of them
            (as DataLoader's default collate builds: ``[x, y]``, ``{"image": ...}``).
            A tuple or list holding a tensor, array or container is split field by
            field; one holding only numbers or strings is a list of rows.

    Returns:
        (source, target) with the structure of ``batch``.

    Raises:
        ValueError: a part has an odd number of rows (not a paired batch).
        TypeError: a part has no length.

    Example:
        >>> import torch, psda
        >>> x, y = torch.arange(6.0).reshape(6, 1), torch.tensor([0, 1, 2, -1, -1, -1])
        >>> (xs, ys), (xt, yt) = psda.split_batch((x, y))
        >>> xs.flatten().tolist(), xt.flatten().tolist(), ys.tolist()
        ([0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [0, 1, 2])
    """
    return _halves(batch, "batch")
