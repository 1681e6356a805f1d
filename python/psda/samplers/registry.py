"""The one registry of psda's batch samplers: name -> class, fixed options, display name.

Read by :data:`psda.SAMPLERS`, :func:`psda.batch_sampler`, the ``psda
variance`` command and :mod:`psda.domainbed.samplers`. It imports no sampler
(nor torch) until one is built, so listing the names is free.

Adding a sampler: subclass :class:`psda.samplers.base.BatchSampler` and add
one :class:`Entry` here.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Dict, NamedTuple, Tuple

__all__ = ["Entry", "REGISTRY", "SAMPLERS", "entry", "sampler_class", "build"]


class Entry(NamedTuple):
    """One sampler: where its class is, the options its name fixes, how tables show it."""

    module: str  #: module of psda.samplers holding the class
    cls: str  #: the class's name
    options: Dict[str, Any]  #: options the name sets (e.g. stages for PSDA's two names)
    display: str  #: how result tables show it ("k-means++", "Double-paired")
    description: str  #: one line for ``psda variance``'s legend
    distinct_rows: bool = True  #: a batch holds k distinct rows of each domain (so k <= min(n_s, n_t))


#: Every sampler, in the order of the paper's tables: the comparison samplers, then PSDA.
REGISTRY: Dict[str, Entry] = {
    "uniform": Entry("simple", "UniformSampler", {}, "Uniform", "uniform random batches (independent permutations)",
                     distinct_rows=False),
    "kmeans++": Entry("simple", "KMeansPPSampler", {}, "k-means++",
                      "diverse sampling: k-means++ seeding per minibatch"),
    "dpp": Entry("dpp", "DPPSampler", {}, "DPP", "diverse sampling: a k-DPP per minibatch (RBF-mixture kernel)"),
    "anticlustering": Entry("stratified", "AnticlusteringSampler", {}, "Anticlustering",
                            "k-means anticlusters as fixed batches (exchange method)"),
    "vardass": Entry("stratified", "VaRDASSSampler", {}, "VaRDASS",
                     "VaRDASS: stratified sampling, one row from each of k discrepancy-specific strata"),
    "ordered": Entry("stratified", "OrderedSampler", {}, "ORDERED",
                     "ORDERED: weighted kernel k-means strata, order optimised within strata"),
    "random-pairs": Entry("paired", "RandomPairsSampler", {}, "Random pairs",
                          "control: PSDA's units (random pairs and quadruplets) without the optimisation",
                          distinct_rows=False),
    "paired": Entry("paired", "PairedBatchSampler", {"stages": 1}, "Paired",
                    "PSDA Paired (stages=1), psda.PairedBatchSampler", distinct_rows=False),
    "double-paired": Entry("paired", "PairedBatchSampler", {"stages": 2}, "Double-paired",
                           "PSDA Double-paired (stages=2), psda.PairedBatchSampler", distinct_rows=False),
}

#: The names, in table order.
SAMPLERS: Tuple[str, ...] = tuple(REGISTRY)


def entry(name: Any) -> Entry:
    """Returns name's Entry; ValueError listing SAMPLERS for an unknown name."""
    e = REGISTRY.get(name) if isinstance(name, str) else None
    if e is None:
        raise ValueError(f"name = {name!r}: want one of {', '.join(SAMPLERS)}")
    return e


def sampler_class(name: str) -> Any:
    """Returns the class of sampler name (importing it)."""
    e = entry(name)
    return getattr(importlib.import_module(f"psda.samplers.{e.module}"), e.cls)


def build(name: str, source_features: Any, target_features: Any, batch_size: int, **options: Any) -> Any:
    """Builds sampler name with options; see :func:`psda.batch_sampler`."""
    e = entry(name)
    for key, value in e.options.items():
        if key in options:
            raise ValueError(f"{key} = {options[key]!r}: the name {name!r} sets it ({key}={value!r}); choose "
                             f"the name instead")
    cls = sampler_class(name)
    unknown = [key for key in options if key not in _options_of(cls)]
    if unknown:
        takes = ", ".join(sorted(_options_of(cls) - set(e.options)))
        raise ValueError(f"{', '.join(unknown)}: not an option of {name!r} (it takes {takes}); drop "
                         f"{'it' if len(unknown) == 1 else 'them'} or choose another name")
    return cls(source_features, target_features, batch_size, **options, **e.options)


def _options_of(cls: Any) -> set:
    """The keyword options cls's constructor accepts: each __init__ in the MRO passes **kwargs up to its base."""
    names: set = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names.update(p.name for p in params if p.kind is p.KEYWORD_ONLY)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names
