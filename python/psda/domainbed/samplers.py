"""Sampler names for DomainBed runs, the names collect_results shows, and building a sampler.

A DomainBed run with psda trains one algorithm with one batch sampler. The pair is
written as one algorithm name, the way the paper's tables name their rows: ``MMD`` (the
algorithm with its own sampler) or ``UDA_MMD + Double-paired`` (the algorithm with
another sampler). That name is what ``train.py`` records in ``results.jsonl``, so
DomainBed's ``collect_results`` prints one row per (algorithm, sampler) without knowing
about samplers.

Sampler names (``psda.SAMPLERS``):

==================  ======================  ==========================================
name                shown as                what it is
==================  ======================  ==========================================
``uniform``         (the bare algorithm)    uniform random minibatches
``kmeans++``        ``+ k-means++``         diverse sampling, k-means++ seeding
``dpp``             ``+ DPP``               determinantal point process sampling
``anticlustering``  ``+ Anticlustering``    anticlustered minibatches
``vardass``         ``+ VaRDASS``           stratified sampling
``ordered``         ``+ ORDERED``           order-aware sampling
``random-pairs``    ``+ Random pairs``      control: PSDA's structure, random pairs
``paired``          ``+ Paired``            PSDA, Stage 1 (pairs)
``double-paired``   ``+ Double-paired``     PSDA, Stages 1 and 2 (quadruplets)
==================  ======================  ==========================================
"""

from __future__ import annotations

from typing import Any, Tuple

from ..samplers.registry import REGISTRY, SAMPLERS, build

__all__ = ["SAMPLERS", "DISPLAY", "default_sampler", "display_name", "parse_algorithm",
           "make_batch_sampler", "batch_limit"]

#: How collect_results shows a sampler after the algorithm's name (from the registry).
DISPLAY = {name: e.display for name, e in REGISTRY.items()}

#: Algorithms whose own sampler is not uniform (PSDA_MMD is UDA_MMD + Double-paired).
OWN_SAMPLER = {"PSDA_MMD": "double-paired", "PSDA_CORAL": "double-paired"}

_SEP = " + "


def default_sampler(algorithm: str) -> str:
    """default_sampler returns the sampler an algorithm uses when none is chosen:
    double-paired for PSDA_MMD / PSDA_CORAL, uniform for every other algorithm."""
    return OWN_SAMPLER.get(algorithm, "uniform")


def _check_sampler(name: str) -> str:
    key = str(name).strip()
    for k, shown in DISPLAY.items():  # accept "Double-paired" as well as "double-paired"
        if key.lower() in (k, shown.lower()):
            return k
    raise ValueError("sampler %r: want one of %s" % (name, ", ".join(SAMPLERS)))


def display_name(algorithm: str, sampler: str) -> str:
    """display_name returns the algorithm name recorded for (algorithm, sampler): the
    algorithm's own name with its own sampler, else ``"<algorithm> + <Sampler>"``.

    Raises ValueError for an unknown sampler, or for PSDA_MMD / PSDA_CORAL with another
    sampler than their own (use UDA_MMD / UDA_CORAL, which take any sampler).

    Example:
        >>> display_name("UDA_MMD", "double-paired")
        'UDA_MMD + Double-paired'
        >>> display_name("PSDA_MMD", "double-paired"), display_name("ERM", "uniform")
        ('PSDA_MMD', 'ERM')
    """
    sampler = _check_sampler(sampler)
    if sampler == default_sampler(algorithm):
        return algorithm
    if algorithm in OWN_SAMPLER:
        raise ValueError("%s is UDA_%s + Double-paired and takes no other sampler (got %r); use UDA_%s with "
                         "the sampler %r" % (algorithm, algorithm[5:], sampler, algorithm[5:], sampler))
    return algorithm + _SEP + DISPLAY[sampler]


def parse_algorithm(name: str) -> Tuple[str, str]:
    """parse_algorithm splits a recorded algorithm name into (algorithm, sampler), the
    inverse of :func:`display_name`.

    Example:
        >>> parse_algorithm("MMD + k-means++"), parse_algorithm("PSDA_CORAL")
        (('MMD', 'kmeans++'), ('PSDA_CORAL', 'double-paired'))
    """
    if _SEP in name:
        base, shown = name.split(_SEP, 1)
        return base.strip(), _check_sampler(shown)
    return name, default_sampler(name)


def batch_limit(sampler: str, n_source: int, n_target: int) -> int:
    """batch_limit returns the largest k (items per domain in a batch) a sampler can
    serve: max(n_source, n_target) for uniform and PSDA's samplers (P pairs), and
    min(n_source, n_target) for the baselines that draw distinct rows per domain."""
    return min(n_source, n_target) if REGISTRY[_check_sampler(sampler)].distinct_rows else max(n_source, n_target)


def make_batch_sampler(name: str, source_features: Any, target_features: Any, batch_size: int,
                       **options: Any) -> Any:
    """make_batch_sampler builds the batch sampler ``name`` over
    ``ConcatDataset([source, target])`` with ``psda.batch_sampler``: batches of k source
    indices then the k target indices offset by n_source.

    Args:
        name: one of :data:`SAMPLERS`.
        source_features, target_features: (n, d) arrays in dataset order.
        batch_size: k, per domain.
        options: seed, discrepancy ("mmd"/"coral"), gammas, solver and imbalance (PSDA only).
    """
    if not is_psda_sampler(name):
        options.pop("solver", None)  # only PSDA's matching has a solver to choose
        options.pop("imbalance", None)  # nor extra uses to assign
    return build(name, source_features, target_features, batch_size, **options)


def is_psda_sampler(name: str) -> bool:
    """is_psda_sampler tells whether the sampler ``name`` (one of :data:`SAMPLERS`) is PSDA's
    (Paired or Double-paired), the samplers with a matching and its solver and imbalance."""
    return REGISTRY[_check_sampler(name)].cls == "PairedBatchSampler"
