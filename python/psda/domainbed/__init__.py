"""Run DomainBed with PSDA: ``python -m psda.domainbed <train.py arguments>``.

DomainBed (github.com/facebookresearch/DomainBed) is not a package; put a checkout on
``PYTHONPATH`` and run, for example::

    PYTHONPATH=/path/to/DomainBed python -m psda.domainbed \\
        --dataset Debug28 --algorithm PSDA_MMD --task domain_adaptation \\
        --test_envs 0 --uda_holdout_fraction 0.5 --steps 20 \\
        --hparams '{"batch_size": 4, "psda_refresh_steps": 5}' --output_dir /tmp/out

The checkout stays unmodified: at run time :func:`install` registers the algorithms
``PSDA_MMD`` and ``PSDA_CORAL`` (:mod:`psda.domainbed.algorithms`) and their hparams,
and, for a PSDA algorithm, replaces DomainBed's ``InfiniteDataLoader`` by loaders driven
by one PSDA sampler (:mod:`psda.domainbed.loaders`); then DomainBed's own
``domainbed/scripts/train.py`` runs as ``__main__``.

Hparams added to DomainBed's registry for the PSDA algorithms (default; random search):

- ``mmd_gamma``: the trade-off (as DomainBed's MMD/CORAL): 1; 10**U(-1, 1);
- ``psda_refresh_steps``: refresh the matching every N steps, 0 never: 100; {50, 100, 200, 500};
- ``psda_background``: compute refreshed matchings in a thread: False;
- ``psda_stages``: 1 (pairs) or 2 (quadruplets): 2;
- ``psda_feature_batch_size``: batch size of feature extraction: 64.

Optional, not in the registry (pass with ``--hparams``): ``psda_gammas`` (the RBF
mixture) and ``psda_solver`` (``"auto"``, ``"dense"`` or ``"sparse"``, see
:func:`psda.match`; ``"auto"`` goes sparse by itself for domains too large for dense
cost matrices).

The per-step batch is k source + k target items with k = batch_size × number of
training environments (DomainBed's ERM sees the same number of source items); k must
be even with two stages. DomainBed's Debug28 has 16 items per environment, so use a
small batch size there (``"batch_size": 4``).
"""

from .algorithms import PSDA_CORAL, PSDA_MMD, PSDAAlgorithm, coral, rbf_mmd

__all__ = ["PSDA_MMD", "PSDA_CORAL", "PSDAAlgorithm", "rbf_mmd", "coral", "install", "PSDA_ALGORITHMS"]

#: The algorithm names this package adds to DomainBed.
PSDA_ALGORITHMS = {"PSDA_MMD": PSDA_MMD, "PSDA_CORAL": PSDA_CORAL}


def _psda_hparams(original):
    """Wrap hparams_registry._hparams so PSDA algorithms get MMD's/CORAL's hparams plus ours."""
    def _hparams(algorithm, dataset, random_seed):
        if algorithm not in PSDA_ALGORITHMS:
            return original(algorithm, dataset, random_seed)
        hp = original("MMD" if algorithm == "PSDA_MMD" else "CORAL", dataset, random_seed)
        import numpy as np
        from domainbed.lib import misc

        def add(name, default, random_fn):
            r = np.random.RandomState(misc.seed_hash(random_seed, name))
            hp[name] = (default, random_fn(r))

        add("psda_refresh_steps", 100, lambda r: int(r.choice([50, 100, 200, 500])))
        add("psda_background", False, lambda r: False)
        add("psda_stages", 2, lambda r: 2)
        add("psda_feature_batch_size", 64, lambda r: 64)
        return hp

    _hparams.psda_original = original
    return _hparams


def install(coordinator=None) -> None:
    """install registers PSDA_MMD and PSDA_CORAL (and their hparams) in the imported
    DomainBed modules and, when ``coordinator`` (a ``loaders.DomainBedPSDA``) is given,
    replaces ``domainbed.lib.fast_data_loader.InfiniteDataLoader`` by its loaders and
    makes it the one PSDA algorithms attach to. Calling it twice is harmless.

    Raises ImportError (with the fix) when DomainBed is not importable.
    """
    try:
        from domainbed import algorithms, hparams_registry
        from domainbed.lib import fast_data_loader
    except ImportError as e:
        raise ImportError("psda.domainbed needs a DomainBed checkout on PYTHONPATH (git clone "
                          "https://github.com/facebookresearch/DomainBed; PYTHONPATH=/path/to/DomainBed); "
                          "importing it failed: %s" % e) from e
    from . import loaders

    for name, cls in PSDA_ALGORITHMS.items():
        setattr(algorithms, name, cls)  # get_algorithm_class looks names up in the module's globals
        if name not in algorithms.ALGORITHMS:
            algorithms.ALGORITHMS.append(name)
    if not hasattr(hparams_registry._hparams, "psda_original"):
        hparams_registry._hparams = _psda_hparams(hparams_registry._hparams)
    if coordinator is not None:
        fast_data_loader.InfiniteDataLoader = coordinator.loader
        loaders.activate(coordinator)
