"""PSDA under torch.distributed: defaults, identical matchings, sharded extraction.

torch.distributed is the engine; this module only adds what PSDA needs on top of it.

Every rank must walk the same batch schedule and take its own shard of it, so every
rank must hold the identical matching. The Go core is deterministic (the same feature
bytes give the same matching, see the sampler's tests), so it suffices that every rank
hands it byte-identical features:

- at construction, :func:`paired_batch_sampler` broadcasts rank 0's features;
- at a refresh, :func:`gather_features` shards the extraction across ranks and
  all-gathers the rows, so every rank ends with the same bytes;
- :func:`check_identical` all-gathers a digest of the matching and raises if any rank
  differs (a few bytes of traffic), which :func:`paired_batch_sampler` does once.

``num_replicas`` and ``rank`` default to ``torch.distributed``'s world size and rank
when it is initialised, and to 1 and 0 otherwise.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["world", "broadcast_features", "gather_features", "check_identical", "paired_batch_sampler",
           "WholeBatches"]


def _dist():
    try:
        import torch.distributed as dist
    except ImportError:  # torch absent or built without distributed
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    return dist


def world() -> Tuple[int, int]:
    """world returns (num_replicas, rank) from torch.distributed when it is
    initialised, otherwise (1, 0)."""
    dist = _dist()
    if dist is None:
        return 1, 0
    return dist.get_world_size(), dist.get_rank()


def _comm_device():
    """The device collectives must use: CUDA for NCCL, CPU otherwise."""
    import torch

    dist = _dist()
    if dist is not None and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def broadcast_features(source: Any, target: Any, src: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    """broadcast_features returns rank ``src``'s source and target feature arrays on
    every rank (float32 or float64 as given on rank ``src``; other dtypes become
    float32). Without an initialised process group it returns the arrays as NumPy.
    Every rank must call it; the other ranks' arrays are ignored.

    Cost: two broadcasts of the arrays plus one of their shapes.
    """
    import torch

    from ._inputs import _check_dtype

    dist = _dist()
    single = dist is None or dist.get_world_size() == 1
    arrays, refused = [], None
    if single or dist.get_rank() == src:
        for name, x in (("source", source), ("target", target)):
            a = np.asarray(x.detach().cpu() if torch.is_tensor(x) else x)
            try:
                _check_dtype(a, name)  # psda.match's rule: bool and complex are refused, not cast
            except TypeError as e:
                refused = e
                break
            arrays.append(a if a.dtype in (np.float32, np.float64) else a.astype(np.float32))
    if single:
        if refused is not None:
            raise refused
        return arrays[0], arrays[1]
    dev = _comm_device()
    out = []
    for i in range(2):
        a = arrays[i] if refused is None and dist.get_rank() == src else None
        if a is None:
            meta = torch.tensor([-1 if refused is not None else 0, 0, 0, 0], dtype=torch.int64, device=dev)
        else:
            meta = torch.tensor([a.ndim, a.shape[0], a.shape[1] if a.ndim > 1 else 0,
                                 1 if a.dtype == np.float64 else 0], dtype=torch.int64, device=dev)
        dist.broadcast(meta, src=src)
        ndim, n, d, is64 = (int(v) for v in meta.tolist())
        if ndim < 0:  # rank src refused its features: every rank stops, none waits on a broadcast
            if refused is not None:
                raise refused
            raise TypeError(f"broadcast_features: rank {src} refused its features (see its error): pass real "
                            "numeric features on that rank")
        dtype = torch.float64 if is64 else torch.float32
        shape = (n, d) if ndim == 2 else (n,)
        if dist.get_rank() == src:
            t = torch.from_numpy(np.ascontiguousarray(a)).to(dev)
        else:
            t = torch.empty(shape, dtype=dtype, device=dev)
        dist.broadcast(t, src=src)
        out.append(t.cpu().numpy())
    return out[0], out[1]


def gather_features(model: Any, dataset: Any, **extract_kwargs: Any) -> np.ndarray:
    """gather_features returns the features of every item of ``dataset`` on every rank,
    each rank extracting one contiguous shard of about len(dataset)/world items with
    :func:`psda.refresh.extract_features` and all-gathering the rows. The result is
    byte-identical on all ranks. Every rank must call it with the same dataset.

    Without an initialised process group it is ``extract_features`` on the whole
    dataset. Errors are those of ``extract_features``.

    Cost: 1/world of a forward pass over the dataset per rank, plus one all-gather of
    n × d float32 values.
    """
    import torch

    from .extract import extract_features

    dist = _dist()
    n = len(dataset)
    if dist is None or dist.get_world_size() == 1:
        return extract_features(model, dataset, **extract_kwargs)
    size, rank = dist.get_world_size(), dist.get_rank()
    per = -(-n // size)
    lo, hi = min(rank * per, n), min((rank + 1) * per, n)
    if hi > lo:
        part = extract_features(model, dataset, indices=range(lo, hi), **extract_kwargs)
    else:
        part = np.empty((0, 0), dtype=np.float32)
    dev = _comm_device()
    # A rank with an empty shard does not know d: agree on it first.
    d = torch.tensor([part.shape[1] if part.size else 0], dtype=torch.int64, device=dev)
    dist.all_reduce(d, op=dist.ReduceOp.MAX)
    d = int(d.item())
    buf = torch.zeros((per, d), dtype=torch.float32, device=dev)
    if part.size:
        buf[: part.shape[0]] = torch.from_numpy(part).to(dev)
    chunks = [torch.empty_like(buf) for _ in range(size)]
    dist.all_gather(chunks, buf)
    return torch.cat(chunks)[:n].cpu().numpy()


def check_identical(sampler: Any) -> None:
    """check_identical raises RuntimeError unless every rank holds a sampler whose plan
    has the same :meth:`psda.samplers.BatchSampler.digest` (a PairedBatchSampler's:
    its matching's fingerprint). Without an initialised process group it does nothing.
    Every rank must call it.

    Cost: hashing the plan plus one all-gather of 16 bytes per rank.
    """
    import torch

    dist = _dist()
    if dist is None or dist.get_world_size() == 1:
        return
    dev = _comm_device()
    mine = torch.frombuffer(bytearray(bytes.fromhex(sampler.digest())), dtype=torch.uint8).to(torch.int64).to(dev)
    all_ = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(all_, mine)
    ranks = [r for r, t in enumerate(all_) if not torch.equal(t, all_[0])]
    if ranks:
        raise RuntimeError("psda: ranks %s hold a different sampler set-up from rank 0; build the sampler from "
                           "identical features on every rank (psda.distributed.broadcast_features or "
                           "gather_features)" % ranks)


def paired_batch_sampler(source_features: Any, target_features: Any, batch_size: int, *,
                         num_replicas: Optional[int] = None, rank: Optional[int] = None,
                         broadcast: bool = True, **kwargs: Any):
    """paired_batch_sampler returns a ``psda.PairedBatchSampler`` for this rank:
    ``num_replicas`` and ``rank`` default to :func:`world`, the features are rank 0's
    (broadcast when ``broadcast`` and a process group is initialised), and the
    resulting matching is checked to be identical on every rank. Other keyword
    arguments go to ``PairedBatchSampler``. Every rank must call it.

    Errors: those of ``PairedBatchSampler``; RuntimeError if ranks disagree.

    Cost: one matching per rank plus a broadcast of the features.
    """
    from . import PairedBatchSampler

    if broadcast:
        source_features, target_features = broadcast_features(source_features, target_features)
    sampler = PairedBatchSampler(source_features, target_features, batch_size,
                                 num_replicas=num_replicas, rank=rank, **kwargs)
    check_identical(sampler)
    return sampler


try:  # typed as a torch Sampler when torch is there, like PairedBatchSampler
    from torch.utils.data import Sampler as _Base
except ImportError:  # pragma: no cover
    _Base = object  # type: ignore[misc,assignment]


class WholeBatches(_Base):  # type: ignore[misc]
    """WholeBatches presents a PairedBatchSampler to code that takes ``batch_size`` to
    be the length of the lists a batch sampler yields, which ours are not (they hold
    ``2 * batch_size`` indices: k source, then k target).

    Accelerate's ``BatchSamplerShard`` (what ``accelerator.prepare(loader)`` wraps the
    batch sampler in when several processes run) compares every batch's length with
    ``batch_sampler.batch_size`` and, for ours, would yield nothing. Wrapped, it hands
    process r the whole batches r, r + P, r + 2P, ... of each epoch (with
    ``split_batches=False``, the default). Build the sampler with ``num_replicas=1,
    rank=0`` then: Accelerate does the sharding. (Left to default, the sampler would
    take the world size from ``torch.distributed``, which Accelerate initialises, and
    the batches would be sharded twice: each process would get half of its share.)

    Iteration, ``len``, ``set_epoch``, ``update``, ``state_dict`` and
    ``load_state_dict`` go to the wrapped sampler; ``.sampler`` is the wrapped sampler.

    Raises:
        ValueError: if the sampler has ``num_replicas > 1``.

    Example::

        sampler = psda.PairedBatchSampler(zs, zt, batch_size=32, num_replicas=1, rank=0)
        loader = accelerator.prepare(DataLoader(ds, batch_sampler=WholeBatches(sampler)))
    """

    def __init__(self, sampler: Any):
        replicas = getattr(sampler, "num_replicas", 1)
        if replicas != 1:
            raise ValueError(
                "WholeBatches(sampler): sampler has num_replicas = %r (rank %r), so it already shards each epoch, "
                "and Accelerate's BatchSamplerShard would shard it again, dropping batches: build the sampler with "
                "num_replicas=1, rank=0 (Accelerate gives each process its share)"
                % (replicas, getattr(sampler, "rank", None))
            )
        self.sampler = sampler
        self.batch_size = 2 * sampler.batch_size
        self.drop_last = sampler.drop_last

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)

    def set_epoch(self, epoch: int) -> None:
        """set_epoch sets the wrapped sampler's epoch."""
        self.sampler.set_epoch(epoch)

    def update(self, source_features: Any, target_features: Any, **kwargs: Any) -> None:
        """update recomputes the wrapped sampler's matching (used from its next epoch; kwargs such as
        ``effective="batch"`` go to the sampler's update)."""
        self.sampler.update(source_features, target_features, **kwargs)

    def state_dict(self) -> dict:
        """state_dict returns the wrapped sampler's state."""
        return self.sampler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """load_state_dict restores the wrapped sampler's state."""
        self.sampler.load_state_dict(state)
