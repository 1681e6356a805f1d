"""``python -m psda.domainbed <train.py arguments>``: DomainBed's train.py with PSDA.

See :mod:`psda.domainbed` for the arguments and hparams.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> None:
    """main installs PSDA into the DomainBed checkout on PYTHONPATH and runs its
    ``domainbed.scripts.train`` with ``argv`` (default: sys.argv[1:])."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # The few train.py arguments we need, parsed as train.py parses them.
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--dataset", default="RotatedMNIST")
    p.add_argument("--algorithm", default="ERM")
    p.add_argument("--task", default="domain_generalization")
    p.add_argument("--test_envs", type=int, nargs="+", default=[0])
    p.add_argument("--uda_holdout_fraction", type=float, default=0)
    p.add_argument("--seed", type=int, default=0)
    known, _ = p.parse_known_args(argv)

    from . import PSDA_ALGORITHMS, install

    coordinator = None
    if known.algorithm in PSDA_ALGORITHMS and "-h" not in argv and "--help" not in argv:
        if known.task != "domain_adaptation" or known.uda_holdout_fraction <= 0:
            sys.exit("psda.domainbed: %s adapts to unlabelled target data; add --task domain_adaptation "
                     "--uda_holdout_fraction 0.5 (any value in (0, 1)); got --task %s --uda_holdout_fraction %g"
                     % (known.algorithm, known.task, known.uda_holdout_fraction))
        install()
        from domainbed import datasets

        from .loaders import DomainBedPSDA

        n_envs = datasets.num_environments(known.dataset)
        coordinator = DomainBedPSDA(n_envs - len(set(known.test_envs)), seed=known.seed)
    install(coordinator)
    sys.argv = ["domainbed/scripts/train.py"] + argv
    runpy.run_module("domainbed.scripts.train", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
