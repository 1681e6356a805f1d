"""Hparams of psda's algorithms and samplers in DomainBed's registry.

:func:`wrap` turns DomainBed's ``hparams_registry._hparams(algorithm, dataset, seed)``
into one that also knows

- psda's algorithms (UDA_MMD, UDA_CORAL, PSDA_MMD, PSDA_CORAL) with the paper's search
  distribution (Experiments, "Target domain accuracy"), its batch size drawn per
  training environment (so k, per domain, is that times the training environments:
  40–635 with five; the Fashion datasets below draw the paper's k instead); DomainBed's
  defaults otherwise:

  ================  ===========================  =================================
  hparam            default                      random search
  ================  ===========================  =================================
  batch_size        DomainBed's (64 small img.)  int(2 ** U(3, 7))  (per environment)
  lr                DomainBed's                  DomainBed's
  weight_decay      0                            10 ** U(-6, -2)
  mmd_gamma         1 (DomainBed's MMD/CORAL)    10 ** U(-1, 1)     (the trade-off)
  ================  ===========================  =================================

- recorded names such as ``"MMD + Double-paired"`` (the algorithm's hparams plus the
  sampler's), see :mod:`psda.domainbed.samplers`;
- the sampler hparams, for every algorithm run with a sampler other than DomainBed's
  own loaders: ``psda_refresh_steps`` (100; {50, 100, 200, 500}: recompute the
  features and the sampler's state every N steps, 0 never), ``psda_background``
  (False), ``psda_feature_batch_size`` (64), ``psda_refresh_effective`` ("epoch": a
  refresh is in force from the next epoch; "batch": also the rest of the running
  epoch, re-grouped from its next batch, see ``BatchSampler.update``);
- the datasets RotatedDigits, RotatedDigitsFlat, RotatedFashionMNIST and
  RotatedFashionMNISTFlat, which get RotatedMNIST's hparams; the flat ones (DomainBed's
  MLP) also get the MLP's, for every algorithm, with DomainBed's defaults and search (as
  for DANN): mlp_width 256 (int(2 ** U(6, 10))), mlp_depth 3 ({3, 4, 5}), mlp_dropout 0
  ({0, 0.1, 0.5}). The Fashion-MNIST ones also get ``psda_env_size`` (0: every image;
  N: the first N of each environment) and, for every algorithm, the paper's batch-size
  search: k ~ int(2 ** U(3, 7)) items per domain, batch_size = max(1, round(k / 5)) per
  training environment (5 training environments when one of the six is held out; see
  :func:`paper_batch_size`); the default stays RotatedMNIST's 64.

``batch_size`` means what it means in DomainBed: items per training environment. A
sampler's batch holds k = batch_size × (training environments) source items and as
many target items (DomainBed's ERM sees the same number of source items per step).
Draws are independent per name, as in DomainBed (seeded by ``seed_hash(seed, name)``),
so two samplers of one algorithm get the same lr, weight decay, trade-off and batch size
for the same ``--hparams_seed``.
"""

from __future__ import annotations

from typing import Callable, Dict

from .samplers import parse_algorithm

__all__ = ["wrap", "PSDA_BASES"]

#: psda's algorithms and the DomainBed algorithm whose hparams they start from.
PSDA_BASES = {"UDA_MMD": "MMD", "UDA_CORAL": "CORAL", "PSDA_MMD": "MMD", "PSDA_CORAL": "CORAL"}

_DATASET_ALIASES = {"RotatedDigits": "RotatedMNIST", "RotatedDigitsFlat": "RotatedMNIST",
                    "RotatedFashionMNIST": "RotatedMNIST", "RotatedFashionMNISTFlat": "RotatedMNIST"}

#: psda's datasets built on DomainBed's MLP (flattened inputs): they need its hparams.
_FLAT = ("RotatedDigitsFlat", "RotatedFashionMNISTFlat")

#: Datasets whose random search draws the paper's k (items per domain in a batch, over
#: the union of the training environments), for every algorithm; see :func:`paper_batch_size`.
_PAPER_K = {"RotatedFashionMNIST": 5, "RotatedFashionMNISTFlat": 5}


def paper_batch_size(r, n_train: int) -> int:
    """paper_batch_size draws the paper's k ~ int(2 ** U(3, 7)) (8..127 items per domain)
    and returns DomainBed's batch_size for it: items per training environment,
    max(1, round(k / n_train)), so that a batch holds about k source items (and a psda
    sampler's k = batch_size × n_train target items)."""
    k = int(2 ** r.uniform(3, 7))
    return max(1, int(round(k / n_train)))


def wrap(original: Callable) -> Callable:
    """wrap returns ``_hparams(algorithm, dataset, random_seed)`` that answers for psda's
    algorithms, recorded (algorithm + sampler) names and RotatedDigits, and calls
    ``original`` for the rest. Each value is a (default, random draw) pair as in
    DomainBed's registry."""
    def _hparams(algorithm: str, dataset: str, random_seed: int) -> Dict[str, tuple]:
        import numpy as np
        from domainbed.lib import misc

        base, sampler = parse_algorithm(algorithm)
        db_dataset = _DATASET_ALIASES.get(dataset, dataset)
        hp = dict(original(PSDA_BASES.get(base, base), db_dataset, random_seed))

        def draw(name, default, random_fn):
            r = np.random.RandomState(misc.seed_hash(random_seed, name))
            hp[name] = (default, random_fn(r))

        if base in PSDA_BASES:
            draw("batch_size", hp["batch_size"][0], lambda r: int(2 ** r.uniform(3, 7)))
            draw("weight_decay", 0.0, lambda r: 10 ** r.uniform(-6, -2))
        if dataset in _PAPER_K:  # every algorithm, ERM and DANN included: one k distribution per row
            draw("batch_size", hp["batch_size"][0], lambda r: paper_batch_size(r, _PAPER_K[dataset]))
            draw("psda_env_size", 0, lambda r: 0)
        if dataset in _FLAT and "mlp_width" not in hp:  # DomainBed's MLP needs these
            draw("mlp_width", 256, lambda r: int(2 ** r.uniform(6, 10)))
            draw("mlp_depth", 3, lambda r: int(r.choice([3, 4, 5])))
            draw("mlp_dropout", 0.0, lambda r: float(r.choice([0.0, 0.1, 0.5])))
        if base in PSDA_BASES or sampler != "uniform":
            draw("psda_refresh_steps", 100, lambda r: int(r.choice([50, 100, 200, 500])))
            draw("psda_background", False, lambda r: False)
            draw("psda_feature_batch_size", 64, lambda r: 64)
            draw("psda_refresh_effective", "epoch", lambda r: "epoch")
        return hp

    _hparams.psda_original = original
    return _hparams
