"""extract_features: a model's features of a dataset, in index order (what refresh and distributed use).

Kept apart from psda.refresh so that psda.distributed (which shards this
extraction over ranks) and psda.refresh (which calls the sharded one) do not
import each other.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, TextIO

import numpy as np

from ._progress import Progress

__all__ = ["extract_features"]


def _default_input(batch: Any) -> Any:
    """Return the model input of a collated batch: the first field of a tuple/list
    batch ((x, y) datasets), otherwise the batch itself."""
    if isinstance(batch, (tuple, list)):
        return batch[0]
    return batch


def _model_device(model: Any) -> "Any":
    import torch

    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            return p.device
        for b in model.buffers():
            return b.device
    return torch.device("cpu")


def extract_features(
    model: Callable[[Any], Any],
    dataset: Any,
    *,
    batch_size: int = 256,
    device: Any = None,
    num_workers: int = 0,
    input_fn: Optional[Callable[[Any], Any]] = None,
    collate_fn: Optional[Callable[[list], Any]] = None,
    indices: Optional[Sequence[int]] = None,
    progress: bool = True,
    desc: str = "psda features",
    stream: Optional[TextIO] = None,
) -> np.ndarray:
    """extract_features returns the features of ``dataset`` (or of ``dataset[indices]``)
    as a float32 array of shape (n, d), row i belonging to item i.

    The model (a feature extractor, e.g. the network without its head) is put in eval
    mode and run under ``torch.no_grad`` with a sequential DataLoader of its own, so
    row order matches dataset order whatever the training loader does; the model's
    previous training mode is restored afterwards, also on error. Outputs of more than
    two dimensions are flattened per item.

    Args:
        model: callable taking the model input of a batch; an ``nn.Module`` is switched
            to eval mode and back.
        dataset: a map-style dataset.
        batch_size: items per forward pass (>= 1).
        device: where inputs are moved; default is the device of the model's first
            parameter (CPU for parameterless callables).
        num_workers: workers of the extraction DataLoader.
        input_fn: maps a collated batch to the model input; default takes the first
            field of tuple/list batches, as in ``(x, y)`` datasets.
        collate_fn: passed to the DataLoader.
        indices: extract only these items, in this order (used to shard across ranks).
        progress: draw a progress bar on ``stream`` (stderr by default).

    Raises ValueError for batch_size < 1 or an empty selection, and TypeError when the
    model returns something that is not a tensor with one row per item.

    Cost: one forward pass over the selected items.
    """
    import torch
    from torch.utils.data import DataLoader, Subset

    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError("batch_size must be an int >= 1, got %r; pass e.g. batch_size=256" % (batch_size,))
    data = dataset if indices is None else Subset(dataset, list(indices))
    n = len(data)
    if n == 0:
        raise ValueError("dataset %s is empty: nothing to extract; pass a non-empty dataset or indices" % (desc,))
    input_fn = input_fn or _default_input
    if device is None:
        device = _model_device(model)
    loader = DataLoader(data, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                        collate_fn=collate_fn, drop_last=False)
    is_module = isinstance(model, torch.nn.Module)
    was_training = model.training if is_module else False
    # Drawn on terminals every 0.1 s; into logs and pipes every LINE_INTERVAL seconds.
    # Not forced: in logs a line every LINE_INTERVAL seconds, none for a short pass
    # (a sub-second extraction in every DDP run printed lines before).
    bar = Progress(len(loader), desc, enabled=progress, stream=stream, interval=0.1)
    out: Optional[np.ndarray] = None
    row = 0
    try:
        if is_module:
            model.eval()
        with torch.no_grad():
            for batch in loader:
                x = input_fn(batch)
                if torch.is_tensor(x):
                    x = x.to(device, non_blocking=True)
                z = model(x)
                if not torch.is_tensor(z) or z.dim() == 0:
                    raise TypeError("model returned %s for a batch; extract_features needs a tensor with one "
                                    "row per item (pass the feature extractor, not the full model's output tuple)"
                                    % (type(z).__name__,))
                z = z.detach().reshape(z.shape[0], -1).float().cpu().numpy()
                if out is None:
                    out = np.empty((n, z.shape[1]), dtype=np.float32)
                out[row:row + z.shape[0]] = z
                row += z.shape[0]
                bar.advance()
    finally:
        if is_module:
            model.train(was_training)
        bar.close()
    if row != n:
        raise TypeError("model returned %d rows for %d items; it must return one row per item" % (row, n))
    assert out is not None
    return out
