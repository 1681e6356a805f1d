"""psda.set_num_threads / get_num_threads and PSDA_NUM_THREADS: the one
thread setting of the Go core (capi psda_num_threads, par.Workers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import psda

PYTHON_DIR = str(Path(psda.__file__).resolve().parent.parent)


@pytest.fixture
def restore_threads():
    before = psda.get_num_threads()
    yield
    psda.set_num_threads(before)


def test_set_get_round_trip(restore_threads):
    assert psda.get_num_threads() >= 1
    for n in (1, 3, 2, np.int64(5)):
        psda.set_num_threads(n)
        assert psda.get_num_threads() == n


@pytest.mark.parametrize("bad,error", [(0, ValueError), (-2, ValueError), (2**31, ValueError),
                                       (1.5, TypeError), ("2", TypeError), (True, TypeError), (None, TypeError)])
def test_bad_count_names_argument(restore_threads, bad, error):
    psda.set_num_threads(2)
    with pytest.raises(error, match=r"\bn must be"):
        psda.set_num_threads(bad)
    assert psda.get_num_threads() == 2  # a refused value changes nothing


def _run(code: str, env_value: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    env.pop("PSDA_NUM_THREADS", None)
    if env_value is not None:
        env["PSDA_NUM_THREADS"] = env_value
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_env_var_read_at_load():
    code = "import psda, os; print(psda.get_num_threads(), os.cpu_count())"
    r = _run(code, "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "3"
    r = _run(code, None)  # the default: every core the process may use
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[0]) == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("value", ["zero", "0", "-1", ""])
def test_bad_env_var_raises_naming_it(value):
    code = "import numpy as np, psda\npsda.match(np.ones((4, 2)), np.ones((4, 2)), batch_size=2)"
    r = _run(code, value)
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "PSDA_NUM_THREADS" in r.stderr, r.stderr


def test_one_thread_same_matching_as_two(restore_threads):
    rng = np.random.default_rng(26)
    # Clustered, rectified, rounded: many ties; above the 1024 rows at which
    # the dense warm start splits its passes into parts.
    centres = rng.normal(size=(6, 8)) * 3
    src = np.maximum(0, np.round(centres[rng.integers(6, size=1200)] + rng.normal(size=(1200, 8)), 1))
    tgt = np.maximum(0, np.round(centres[rng.integers(6, size=1100)] + rng.normal(size=(1100, 8)), 1))
    got = {}
    for n in (1, 2):
        psda.set_num_threads(n)
        m = psda.match(src, tgt, batch_size=8, solver="dense")
        got[n] = (m.pairs.copy(), m.quads.copy())
    np.testing.assert_array_equal(got[1][0], got[2][0])
    np.testing.assert_array_equal(got[1][1], got[2][1])
