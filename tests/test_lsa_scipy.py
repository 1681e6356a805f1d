"""SciPy's own tests for linear_sum_assignment, run unchanged against psda's.

The test module ships inside the installed SciPy
(scipy/optimize/tests/test_linear_assignment.py). It is read from there at
test time, never copied: this file loads it under another name, rebinds its
module global ``linear_sum_assignment`` to :func:`psda.linear_sum_assignment`
and exposes its test functions, whose parametrizations pytest collects as
they are. Its test functions look the name up in the loaded module's globals
when they run, so every call goes to psda. The whole file is skipped when
SciPy or its tests are not installed.
"""

import importlib.util
from pathlib import Path

import pytest

import psda

scipy = pytest.importorskip("scipy")

SCIPY_TESTS = Path(scipy.__file__).resolve().parent / "optimize" / "tests" / "test_linear_assignment.py"
if not SCIPY_TESTS.is_file():
    pytest.skip(f"SciPy {scipy.__version__} is installed without its tests ({SCIPY_TESTS} is missing)",
                allow_module_level=True)


def _load():
    spec = importlib.util.spec_from_file_location("_scipy_test_linear_assignment", SCIPY_TESTS)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:  # e.g. SciPy's csgraph tests are absent too
        pytest.skip(f"cannot import SciPy's {SCIPY_TESTS}: {e}", allow_module_level=True)
    assert callable(getattr(module, "linear_sum_assignment", None)), \
        f"{SCIPY_TESTS} no longer imports linear_sum_assignment as a module global"
    module.linear_sum_assignment = psda.linear_sum_assignment
    return module


_scipy_tests = _load()
_names = [name for name in vars(_scipy_tests) if name.startswith("test_")]
globals().update({name: getattr(_scipy_tests, name) for name in _names})


def test_scipy_tests_were_found():
    """Guards against a SciPy release that renames or moves its tests: the
    module above must have contributed its tests, all bound to psda."""
    assert len(_names) >= 8, _names
    assert _scipy_tests.linear_sum_assignment is psda.linear_sum_assignment
