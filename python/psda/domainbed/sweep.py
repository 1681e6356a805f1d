"""``python -m psda.domainbed.sweep {launch,delete_incomplete} ...``: DomainBed's sweep with
psda's samplers, algorithms and datasets.

It takes DomainBed's sweep arguments (``--datasets --algorithms --task --n_hparams_from
--n_hparams --n_trials --steps --single_test_envs --holdout_fraction --output_dir
--data_dir --command_launcher --skip_confirmation --hparams``) plus

- ``--samplers``: samplers to run every algorithm with (default: each algorithm's own:
  uniform, i.e. DomainBed's loaders for DomainBed's algorithms; double-paired for
  PSDA_MMD / PSDA_CORAL, which take no other);
- ``--uda_holdout_fraction``: the fraction of each test environment given unlabelled to
  the algorithm (default 0.2 with ``--task domain_adaptation``, which needs it > 0);
- ``--test_envs``: keep only the jobs whose test environments are among these.

DomainBed's own machinery does the work: ``make_args_list`` lists the (trial, dataset,
algorithm, test envs, hparams seed) jobs, ``Job`` names their directories and states,
and the launchers of ``domainbed.command_launchers`` run them. psda expands each job
into one per sampler (same seed, so samplers of one algorithm start from the same
weights and draw the same hparams) under the recorded name "<algorithm> + <Sampler>"
(:mod:`psda.domainbed.samplers`), and every job runs ``python -m psda.domainbed``
(this interpreter) instead of DomainBed's train.py, so DomainBed's algorithms and
psda's mix in one sweep. The jobs inherit the environment: keep DomainBed on
``PYTHONPATH``.

Example::

    PYTHONPATH=/path/to/DomainBed python -m psda.domainbed.sweep launch \\
        --datasets RotatedDigits --algorithms ERM UDA_MMD --samplers uniform double-paired \\
        --task domain_adaptation --n_hparams 5 --n_trials 3 --single_test_envs \\
        --output_dir sweep_out --command_launcher local --skip_confirmation
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any, Dict, List, Optional

from .samplers import SAMPLERS, default_sampler, display_name

__all__ = ["main", "make_jobs"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m psda.domainbed.sweep",
                                description="Run a DomainBed sweep with psda's samplers, algorithms and datasets.")
    p.add_argument("command", choices=["launch", "delete_incomplete"])
    p.add_argument("--datasets", nargs="+", type=str, required=True)
    p.add_argument("--algorithms", nargs="+", type=str, required=True)
    p.add_argument("--samplers", nargs="+", choices=SAMPLERS, default=None,
                   help="samplers for every algorithm (default: the algorithm's own)")
    p.add_argument("--task", type=str, default="domain_generalization",
                   choices=["domain_generalization", "domain_adaptation"])
    p.add_argument("--uda_holdout_fraction", type=float, default=None,
                   help="unlabelled fraction of each test env for domain adaptation (default 0.2 there)")
    p.add_argument("--n_hparams_from", type=int, default=0)
    p.add_argument("--n_hparams", type=int, default=20)
    p.add_argument("--output_dir", type=str, required=True)
    p.add_argument("--data_dir", type=str, default="",
                   help="DomainBed's data directory (RotatedDigits needs none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n_trials", type=int, default=3)
    p.add_argument("--command_launcher", type=str, required=True)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--hparams", type=str, default=None)
    p.add_argument("--holdout_fraction", type=float, default=0.2)
    p.add_argument("--single_test_envs", action="store_true")
    p.add_argument("--test_envs", nargs="+", type=int, default=None,
                   help="psda: keep only the jobs whose test environments are all among these")
    p.add_argument("--skip_confirmation", action="store_true")
    return p


def make_jobs(args: argparse.Namespace) -> List[Any]:
    """make_jobs returns DomainBed ``Job`` objects for the parsed sweep arguments: one
    per DomainBed job and sampler, running ``python -m psda.domainbed``.

    Raises ValueError for a sampler an algorithm cannot take (PSDA_MMD / PSDA_CORAL
    take only double-paired: they are skipped for the others, with a note) or a domain
    adaptation sweep without a UDA split.
    """
    from domainbed.scripts import sweep as db_sweep

    uda = args.uda_holdout_fraction
    if args.task == "domain_adaptation":
        uda = 0.2 if uda is None else uda
        if not 0 < uda < 1:
            raise ValueError("--uda_holdout_fraction %g: domain adaptation needs a value in (0, 1), e.g. 0.2" % uda)
    elif uda:
        raise ValueError("--uda_holdout_fraction %g needs --task domain_adaptation" % uda)
    args_list = db_sweep.make_args_list(
        n_trials=args.n_trials, dataset_names=args.datasets, algorithms=args.algorithms,
        n_hparams_from=args.n_hparams_from, n_hparams=args.n_hparams, steps=args.steps,
        data_dir=args.data_dir, task=args.task, holdout_fraction=args.holdout_fraction,
        single_test_envs=args.single_test_envs, hparams=args.hparams)
    if args.test_envs is not None:
        args_list = [ta for ta in args_list if set(ta["test_envs"]) <= set(args.test_envs)]
    skipped = set()
    jobs = []
    python = "%s -m psda.domainbed" % shlex.quote(sys.executable)
    for train_args in args_list:
        algorithm = train_args["algorithm"]
        for sampler in args.samplers or [default_sampler(algorithm)]:
            try:
                name = display_name(algorithm, sampler)
            except ValueError:
                skipped.add((algorithm, sampler))
                continue
            ta: Dict[str, Any] = dict(train_args, algorithm=name)
            if uda:
                ta["uda_holdout_fraction"] = uda
            job = db_sweep.Job(ta, args.output_dir)
            job.command_str = job.command_str.replace("python -m domainbed.scripts.train", python, 1)
            jobs.append(job)
    for algorithm, sampler in sorted(skipped):
        print("psda: skipping %s with the %s sampler (it runs only with its own, %s)"
              % (algorithm, sampler, default_sampler(algorithm)))
    return jobs


def main(argv: Optional[List[str]] = None) -> None:
    """main parses the arguments, lists the jobs and their states, and launches the
    jobs not launched yet or deletes the incomplete ones, as DomainBed's sweep does."""
    args = _parser().parse_args(argv)
    from . import install

    install()
    from domainbed import command_launchers
    from domainbed.scripts import sweep as db_sweep

    try:
        jobs = make_jobs(args)
    except (ValueError, NotImplementedError) as e:
        sys.exit("psda.domainbed.sweep: %s" % e)
    Job = db_sweep.Job
    for job in jobs:
        print(job)
    print("{} jobs: {} done, {} incomplete, {} not launched.".format(
        len(jobs), sum(j.state == Job.DONE for j in jobs), sum(j.state == Job.INCOMPLETE for j in jobs),
        sum(j.state == Job.NOT_LAUNCHED for j in jobs)))
    if args.command == "launch":
        to_launch = [j for j in jobs if j.state == Job.NOT_LAUNCHED]
        print(f"About to launch {len(to_launch)} jobs.")
        if not args.skip_confirmation:
            db_sweep.ask_for_confirmation()
        if args.command_launcher not in command_launchers.REGISTRY:
            sys.exit("psda.domainbed.sweep: --command_launcher %s: want one of %s"
                     % (args.command_launcher, ", ".join(command_launchers.REGISTRY)))
        Job.launch(to_launch, command_launchers.REGISTRY[args.command_launcher])
    else:
        to_delete = [j for j in jobs if j.state == Job.INCOMPLETE]
        print(f"About to delete {len(to_delete)} jobs.")
        if not args.skip_confirmation:
            db_sweep.ask_for_confirmation()
        Job.delete(to_delete)


if __name__ == "__main__":
    main()
