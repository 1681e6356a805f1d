"""Run DomainBed with psda: train, sweep, collect results and test with psda's samplers.

DomainBed (github.com/facebookresearch/DomainBed) is not a package; put a checkout on
``PYTHONPATH`` (it stays unmodified) and run, for example::

    PYTHONPATH=/path/to/DomainBed python -m psda.domainbed \\
        --dataset RotatedDigits --algorithm UDA_MMD --sampler double-paired \\
        --task domain_adaptation --test_envs 0 --uda_holdout_fraction 0.2 \\
        --steps 200 --output_dir /tmp/out

Commands (each takes ``--help``): ``python -m psda.domainbed`` (DomainBed's train.py
plus ``--sampler``), ``python -m psda.domainbed.sweep`` (DomainBed's sweep plus
``--samplers`` and ``--uda_holdout_fraction``), ``python -m psda.domainbed.collect_results``
and ``python -m psda.domainbed.test`` (DomainBed's test suite with psda's algorithms).
See docs/domainbed.md.

:func:`install` registers into the imported DomainBed modules:

- algorithms ``UDA_MMD`` and ``UDA_CORAL`` (the paper's UDA MMD and CORAL: task loss +
  trade-off × discrepancy between the union of the training domains and the UDA split),
  and ``PSDA_MMD`` / ``PSDA_CORAL`` (the same with the double-paired sampler);
- the datasets ``RotatedDigits`` and ``RotatedDigitsFlat`` (offline, :mod:`psda.domainbed.datasets`),
  ``RotatedFashionMNIST`` and ``RotatedFashionMNISTFlat`` (Debian's dataset-fashion-mnist or
  ``--data_dir``, :mod:`psda.domainbed.fashion`);
- their hparams and the sampler hparams (:mod:`psda.domainbed.hparams`);
- recorded names "<algorithm> + <Sampler>" (:mod:`psda.domainbed.samplers`).
"""

from typing import Any, Optional

from .algorithms import PSDA_CORAL, PSDA_MMD, UDA_CORAL, UDA_MMD, PSDAAlgorithm, coral, rbf_mmd
from .datasets import RotatedDigits, RotatedDigitsFlat
from .fashion import RotatedFashionMNIST, RotatedFashionMNISTFlat
from .samplers import SAMPLERS, default_sampler, display_name, parse_algorithm

__all__ = ["UDA_MMD", "UDA_CORAL", "PSDA_MMD", "PSDA_CORAL", "PSDAAlgorithm", "rbf_mmd", "coral", "install",
           "register_name", "PSDA_ALGORITHMS", "PSDA_DATASETS", "RotatedDigits", "RotatedDigitsFlat",
           "RotatedFashionMNIST", "RotatedFashionMNISTFlat", "SAMPLERS", "display_name",
           "parse_algorithm", "default_sampler"]

#: The algorithms this package adds to DomainBed.
PSDA_ALGORITHMS = {"UDA_MMD": UDA_MMD, "UDA_CORAL": UDA_CORAL, "PSDA_MMD": PSDA_MMD, "PSDA_CORAL": PSDA_CORAL}

#: The datasets this package adds to DomainBed.
PSDA_DATASETS = {"RotatedDigits": RotatedDigits, "RotatedDigitsFlat": RotatedDigitsFlat,
                 "RotatedFashionMNIST": RotatedFashionMNIST, "RotatedFashionMNISTFlat": RotatedFashionMNISTFlat}

_ORIGINAL: dict = {}


def _import_domainbed():
    try:
        from domainbed import algorithms, datasets, hparams_registry
        from domainbed.lib import fast_data_loader
    except ImportError as e:
        raise ImportError("psda.domainbed needs a DomainBed checkout on PYTHONPATH (git clone "
                          "https://github.com/facebookresearch/DomainBed; PYTHONPATH=/path/to/DomainBed); "
                          "importing it failed: %s" % e) from e
    return algorithms, datasets, hparams_registry, fast_data_loader


def register_name(name: str) -> str:
    """register_name makes a recorded name such as ``"MMD + Double-paired"`` known to
    ``domainbed.algorithms.get_algorithm_class`` (it returns the algorithm's class) and
    returns the name; unknown algorithms or samplers raise (NotImplementedError /
    ValueError, as DomainBed and :func:`display_name` do)."""
    algorithms = _import_domainbed()[0]
    base, sampler = parse_algorithm(name)
    display_name(base, sampler)  # validates the pair
    cls = algorithms.get_algorithm_class(base)
    if getattr(cls, "psda_attaching", False):
        cls = cls.psda_class
    setattr(algorithms, name, cls)
    return name


def install(coordinator: Optional[Any] = None) -> None:
    """install registers psda's algorithms, RotatedDigits and their hparams in the
    imported DomainBed modules (see the module docstring) and, when ``coordinator`` (a
    :class:`psda.domainbed.loaders.DomainBedPSDA`) is given, replaces
    ``domainbed.lib.fast_data_loader.InfiniteDataLoader`` by its loaders and makes
    ``get_algorithm_class`` attach every algorithm it builds to it. Without a
    coordinator it puts DomainBed's own ``InfiniteDataLoader`` and
    ``get_algorithm_class`` back (runs in one process follow each other). Calling it
    twice is harmless.

    A script that loads a model saved by a psda run (``model.pkl``: DomainBed's
    ``save_dict`` with ``args.algorithm`` the recorded name) calls ``install()`` first,
    then ``register_name(save_dict["args"]["algorithm"])`` when that name has a sampler,
    before ``algorithms.get_algorithm_class``; the model needs no coordinator (the
    sampler is not part of it).

    Raises ImportError (with the fix) when DomainBed is not importable.
    """
    algorithms, datasets, hparams_registry, fast_data_loader = _import_domainbed()
    from . import hparams as psda_hparams
    from . import loaders

    for name, cls in PSDA_ALGORITHMS.items():
        setattr(algorithms, name, cls)  # get_algorithm_class looks names up in the module's globals
        if name not in algorithms.ALGORITHMS:
            algorithms.ALGORITHMS.append(name)
    for name, cls in PSDA_DATASETS.items():
        setattr(datasets, name, cls)
        if name not in datasets.DATASETS:
            datasets.DATASETS.append(name)
    if not hasattr(hparams_registry._hparams, "psda_original"):
        hparams_registry._hparams = psda_hparams.wrap(hparams_registry._hparams)
    # DomainBed's own loader and get_algorithm_class, recorded before psda replaces them,
    # so that a later install() without a coordinator (the next job of an in-process
    # sweep, tools/domainbed_tables.py) runs DomainBed's loaders again.
    if not isinstance(getattr(fast_data_loader.InfiniteDataLoader, "__self__", None), loaders.DomainBedPSDA):
        _ORIGINAL["InfiniteDataLoader"] = fast_data_loader.InfiniteDataLoader
    get = getattr(algorithms.get_algorithm_class, "psda_original", algorithms.get_algorithm_class)
    if coordinator is None:
        if "InfiniteDataLoader" in _ORIGINAL:
            fast_data_loader.InfiniteDataLoader = _ORIGINAL["InfiniteDataLoader"]
        algorithms.get_algorithm_class = get
        loaders.activate(None)
    else:
        fast_data_loader.InfiniteDataLoader = coordinator.loader
        loaders.activate(coordinator)

        def get_algorithm_class(name: str) -> Any:
            cls = get(name)

            def build(*args: Any, **kwargs: Any) -> Any:
                algorithm = cls(*args, **kwargs)
                coordinator.attach(algorithm)
                return algorithm

            build.psda_attaching = True  # type: ignore[attr-defined]
            build.psda_class = cls  # type: ignore[attr-defined]
            return build

        get_algorithm_class.psda_original = get  # type: ignore[attr-defined]
        algorithms.get_algorithm_class = get_algorithm_class
