"""``python -m psda.domainbed.collect_results --input_dir DIR [--latex] [--auto_lr]``:
DomainBed's collect_results with psda's algorithms and datasets registered.

Same arguments and output as ``python -m domainbed.scripts.collect_results`` (which
needs psda's datasets, e.g. RotatedDigits, registered to print their tables). Rows are
the recorded algorithm names, one per (algorithm, sampler), ordered as DomainBed orders
its algorithms and, within one algorithm, as the paper's tables order the samplers:
``MMD``, ``MMD + k-means++``, ..., ``MMD + Double-paired``.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from typing import List, Optional

__all__ = ["main", "order_algorithms"]


def order_algorithms(names: List[str], known: List[str]) -> List[str]:
    """order_algorithms returns the recorded names sorted by their algorithm's place in
    ``known`` (DomainBed's ALGORITHMS; unknown ones last, by name), then by sampler in
    the order of :data:`psda.domainbed.samplers.SAMPLERS`."""
    from .samplers import SAMPLERS, parse_algorithm

    def key(name):
        base, sampler = parse_algorithm(name)
        return (known.index(base) if base in known else len(known), base, SAMPLERS.index(sampler))

    return sorted(set(names), key=key)


def main(argv: Optional[List[str]] = None) -> None:
    """main registers psda into DomainBed and runs DomainBed's collect_results script
    with ``argv`` (default sys.argv[1:])."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from . import install

    install()
    from domainbed import algorithms
    from domainbed.lib import reporting

    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--input_dir")
    known, _ = p.parse_known_args(argv)
    if known.input_dir and "-h" not in argv and "--help" not in argv:
        recorded = reporting.load_records(known.input_dir).select("args.algorithm").unique()
        base = [a for a in algorithms.ALGORITHMS if " + " not in a]
        algorithms.ALGORITHMS[:] = order_algorithms(base + list(recorded), base)
    sys.argv = ["python -m psda.domainbed.collect_results"] + argv
    runpy.run_module("domainbed.scripts.collect_results", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
