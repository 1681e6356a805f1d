"""``python -m psda.domainbed <train.py arguments> [--sampler NAME]``: DomainBed's train.py
with psda's algorithms, datasets and samplers.

See :mod:`psda.domainbed` and docs/domainbed.md.
"""

from __future__ import annotations

import argparse
import re
import runpy
import sys
from typing import List, Optional

from .samplers import DISPLAY, SAMPLERS

_EPILOG = """\
psda's algorithms: UDA_MMD, UDA_CORAL (the paper's UDA MMD / CORAL, any sampler, default
uniform), PSDA_MMD, PSDA_CORAL (= UDA_MMD / UDA_CORAL + Double-paired). psda's datasets
(offline, no --data_dir needed): RotatedDigits (DomainBed's MNIST CNN) and
RotatedDigitsFlat (the same images flattened: DomainBed's MLP).

A sampler other than DomainBed's own loaders (any sampler for psda's algorithms; any
other than uniform for DomainBed's) needs --task domain_adaptation and
--uda_holdout_fraction > 0. The run is recorded as algorithm "<ALGORITHM> + <Sampler>"
(e.g. "MMD + Double-paired"), so collect_results shows one row per (algorithm,
sampler); `--algorithm "MMD + Double-paired"` is accepted as well.

Sampler hparams (pass with --hparams; in the random search): psda_refresh_steps
(100; {50,100,200,500}; 0 = never), psda_background (False), psda_feature_batch_size
(64); optional: psda_gammas (RBF mixture), psda_solver ("auto", "dense", "sparse"),
psda_imbalance ("cost", "random", "systematic"; psda.samplers.imbalance).
batch_size is DomainBed's (items per training environment): a batch holds
k = batch_size x training envs source and k target items, lowered (and said so in
out.txt) when the data cannot fill it.

DomainBed's train.py arguments follow."""


def psda_parser() -> argparse.ArgumentParser:
    """psda_parser returns the parser of psda's options and of the train.py arguments
    psda reads (the others go to train.py unchanged)."""
    p = argparse.ArgumentParser(prog="python -m psda.domainbed", add_help=False, epilog=_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="DomainBed's train.py with psda's algorithms, datasets and samplers.")
    p.add_argument("--sampler", choices=SAMPLERS, default=None,
                   help="batch sampler: %s (default: the algorithm's own: double-paired for PSDA_MMD and "
                        "PSDA_CORAL, uniform otherwise; uniform for DomainBed's algorithms means DomainBed's "
                        "own loaders)" % ", ".join("%s (%s)" % (k, v) for k, v in DISPLAY.items()))
    p.add_argument("--dataset", default="RotatedMNIST")
    p.add_argument("--algorithm", default="ERM")
    p.add_argument("--task", default="domain_generalization")
    p.add_argument("--test_envs", type=int, nargs="+", default=[0])
    p.add_argument("--uda_holdout_fraction", type=float, default=0)
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: Optional[List[str]] = None) -> None:
    """main installs psda into the DomainBed checkout on PYTHONPATH and runs its
    ``domainbed.scripts.train`` with ``argv`` (default: sys.argv[1:]).

    It can be called again in the same process (one job after another, importing torch
    and DomainBed once): each call sets up its own loaders (:func:`psda.domainbed.install`)
    and restores sys.argv, sys.stdout and sys.stderr, which train.py replaces. DomainBed's
    loaders never stop their worker processes: with a dataset whose ``N_WORKERS`` > 0
    (not RotatedDigits) they stay until the process ends.

    Example::

        from psda.domainbed.__main__ import main
        main(["--dataset", "RotatedDigits", "--algorithm", "UDA_MMD", "--sampler", "paired",
              "--task", "domain_adaptation", "--uda_holdout_fraction", "0.2", "--steps", "5",
              "--output_dir", "/tmp/run"])
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = psda_parser()
    if "-h" in argv or "--help" in argv:
        parser.print_help()
        print()
        sys.stdout.flush()
        from . import install

        try:
            install()
        except ImportError as e:
            # psda's own options are printed above; train.py's need DomainBed.
            print("train.py's own arguments are not listed: %s" % e)
            return
        sys.argv = ["python -m psda.domainbed", "--help"]
        add = argparse.ArgumentParser.add_argument

        def add_escaped(self, *args, **kwargs):
            # train.py's --uda_holdout_fraction help says "% of test", which argparse
            # takes for a format directive; escape lone % so --help prints.
            if isinstance(kwargs.get("help"), str):
                kwargs["help"] = re.sub(r"%(?!\()", "%%", kwargs["help"])
            return add(self, *args, **kwargs)

        argparse.ArgumentParser.add_argument = add_escaped  # type: ignore[method-assign]
        try:
            runpy.run_module("domainbed.scripts.train", run_name="__main__", alter_sys=True)
        finally:
            argparse.ArgumentParser.add_argument = add  # type: ignore[method-assign]
        return
    known, rest = parser.parse_known_args(argv)

    from . import PSDA_ALGORITHMS, install, register_name
    from .samplers import display_name, parse_algorithm

    try:
        base, sampler = parse_algorithm(known.algorithm)
        if known.sampler is not None:
            if " + " in known.algorithm and known.sampler != sampler:
                raise ValueError("--algorithm %r names the sampler %s but --sampler is %s; give one"
                                 % (known.algorithm, sampler, known.sampler))
            sampler = known.sampler
        name = display_name(base, sampler)
    except ValueError as e:
        sys.exit("psda.domainbed: %s" % e)

    coordinator = None
    if base in PSDA_ALGORITHMS or sampler != "uniform":
        if known.task != "domain_adaptation" or known.uda_holdout_fraction <= 0:
            sys.exit("psda.domainbed: %s adapts to unlabelled target data; add --task domain_adaptation "
                     "--uda_holdout_fraction 0.2 (any value in (0, 1)); got --task %s --uda_holdout_fraction %g"
                     % (name, known.task, known.uda_holdout_fraction))
        try:
            install()
        except ImportError as e:
            sys.exit("psda.domainbed: %s" % e)
        from domainbed import datasets

        from .loaders import DomainBedPSDA

        n_envs = datasets.num_environments(known.dataset)
        coordinator = DomainBedPSDA(n_envs - len(set(known.test_envs)), sampler, seed=known.seed)
    try:
        install(coordinator)
    except ImportError as e:
        sys.exit("psda.domainbed: %s" % e)
    try:
        register_name(name)
    except NotImplementedError as e:
        sys.exit("psda.domainbed: %s" % e)
    saved = sys.argv, sys.stdout, sys.stderr
    sys.argv = (["domainbed/scripts/train.py"] + rest
                + ["--dataset", known.dataset, "--algorithm", name, "--task", known.task,
                   "--test_envs", *map(str, known.test_envs),
                   "--uda_holdout_fraction", repr(known.uda_holdout_fraction), "--seed", str(known.seed)])
    try:
        runpy.run_module("domainbed.scripts.train", run_name="__main__", alter_sys=True)
    finally:
        # train.py tees stdout and stderr into out.txt / err.txt and never closes them:
        # close them and restore the streams, so runs in one process
        # (tools/domainbed_tables.py) do not write into each other's files.
        for tee in (sys.stdout, sys.stderr):
            if tee not in saved and hasattr(getattr(tee, "file", None), "close"):
                tee.file.close()
        sys.argv, sys.stdout, sys.stderr = saved


if __name__ == "__main__":
    main()
