"""``python -m psda.domainbed.test [-v] [--all]``: DomainBed's own tests with psda registered.

Runs, from the DomainBed checkout on ``PYTHONPATH`` (it needs the ``parameterized``
package, as DomainBed's tests do):

- ``domainbed.test.test_hparams_registry`` for psda's algorithms (and the recorded
  "<algorithm> + <Sampler>" names of UDA_MMD) on every DomainBed dataset;
- ``domainbed.test.test_models`` (init, three ``update`` steps without unlabelled data,
  ``predict``) for psda's algorithms on Debug28 and psda's datasets;
- ``domainbed.test.test_datasets`` for psda's datasets (one ERM step).

RotatedDigits needs no data; the Fashion-MNIST datasets need Debian's
``dataset-fashion-mnist`` package, and without it their model and dataset tests are left
out with a note on stderr (their hparams tests, which need no data, still run).

On a machine without CUDA, ``.cuda()`` (which DomainBed's tests call) leaves tensors and
modules on the CPU. ``--all`` runs the same three test modules for every algorithm and
dataset DomainBed knows (slow: Debug224 builds ResNet-50s). Other arguments go to
``unittest`` (e.g. ``-v``, ``-k``). The exit status is unittest's.
"""

from __future__ import annotations

import os
import sys
import unittest
from typing import List, Optional

__all__ = ["main", "suite"]

_MODULES = ("domainbed.test.test_hparams_registry", "domainbed.test.test_models", "domainbed.test.test_datasets")


def _cpu_cuda() -> None:
    import torch

    if torch.cuda.is_available():
        return
    torch.nn.Module.cuda = lambda self, device=None: self  # type: ignore[method-assign]
    torch.Tensor.cuda = lambda self, *args, **kwargs: self  # type: ignore[method-assign]


def _without_data(names: List[str]) -> List[str]:
    """The datasets among ``names`` whose data is not on this machine, said on stderr.

    DomainBed's test_models builds every dataset with root '' (so Fashion-MNIST must be in
    Debian's directory, :data:`psda.domainbed.fashion.DEBIAN_DIR`); a missing file would
    turn each of its tests into an error about the machine, not about the code.
    """
    from .fashion import DEBIAN_DIR, find_fashion_mnist

    fashion = [n for n in names if "FashionMNIST" in n]
    if not fashion:
        return []
    try:
        find_fashion_mnist("")
    except FileNotFoundError:
        # Not find_fashion_mnist's message: its --data_dir is no option of this suite.
        print("psda.domainbed.test: leaving out the model and dataset tests of %s: Fashion-MNIST is not "
              "in %s, where DomainBed's model tests (root '') look for it; install Debian's package "
              "(apt-get install dataset-fashion-mnist) to run them" % (", ".join(fashion), DEBIAN_DIR),
              file=sys.stderr)
        return fashion
    return []


def suite(everything: bool = False) -> unittest.TestSuite:
    """suite installs psda into DomainBed and returns DomainBed's hparams-registry,
    model and dataset tests, parameterized over psda's algorithms and datasets (over
    all of DomainBed's when ``everything``)."""
    import importlib

    from . import PSDA_ALGORITHMS, PSDA_DATASETS, display_name, install

    install()
    _cpu_cuda()
    os.environ.setdefault("DATA_DIR", "")  # test_datasets skips without it; RotatedDigits needs none
    from domainbed import algorithms, datasets
    from domainbed.test import helpers

    saved = list(algorithms.ALGORITHMS), list(datasets.DATASETS), list(helpers.DEBUG_DATASETS)
    # The tests are parameterized when their modules are imported: narrow the lists first.
    missing = _without_data(list(PSDA_DATASETS))
    ours = [d for d in PSDA_DATASETS if d not in missing]
    if not everything:
        names = list(PSDA_ALGORITHMS) + [display_name("UDA_MMD", s) for s in ("paired", "double-paired")]
        algorithms.ALGORITHMS[:] = names
        helpers.DEBUG_DATASETS[:] = ["Debug28", *ours]
    else:
        helpers.DEBUG_DATASETS[:] = [*helpers.DEBUG_DATASETS, *ours]
    from . import register_name

    for name in algorithms.ALGORITHMS:
        if " + " in name:
            register_name(name)
    tests = unittest.TestSuite()
    try:
        for module in _MODULES:
            if module.endswith("test_datasets"):
                keep = ours if not everything else saved[1]
                datasets.DATASETS[:] = [d for d in keep if d not in missing]
            if module in sys.modules:
                del sys.modules[module]
            tests.addTests(unittest.defaultTestLoader.loadTestsFromModule(importlib.import_module(module)))
            datasets.DATASETS[:] = saved[1]
    finally:
        algorithms.ALGORITHMS[:], datasets.DATASETS[:], helpers.DEBUG_DATASETS[:] = saved
    return tests


def main(argv: Optional[List[str]] = None) -> None:
    """main runs :func:`suite` with unittest's text runner and exits with its status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    everything = "--all" in argv
    verbosity = 2 if "-v" in argv else 1
    patterns = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-k"]
    tests = suite(everything)
    if patterns:
        flat: List[unittest.TestCase] = []

        def walk(s):
            for t in s:
                walk(t) if isinstance(t, unittest.TestSuite) else flat.append(t)

        walk(tests)
        tests = unittest.TestSuite(t for t in flat if any(p in t.id() for p in patterns))
    result = unittest.TextTestRunner(verbosity=verbosity).run(tests)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
