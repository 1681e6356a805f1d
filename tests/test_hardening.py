"""Named regression tests for the twelve cases of issue 17 ("Hardening: no
crash, leak, stuck state or silent misuse"). Case 1 (the C ABI) is
tests/test_capi.py::test_c_hostile_use; the rest are here. Cases that need
an address-space limit run in a child process under resource.setrlimit, so
that an abort there fails the test instead of ending the test run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import psda

ROOT = Path(__file__).resolve().parent.parent


def run_limited(code: str, limit_bytes: int | None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter whose RLIMIT_AS is limit_bytes (None:
    the current size plus nothing, set by the child itself from VmSize)."""
    prelude = textwrap.dedent(
        """
        import resource, sys
        limit = %r
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
        """
        % (limit_bytes,)
    )
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(psda.__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)  # fmt: skip


needs_rlimit = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's"
)


@needs_rlimit
def test_case02_coral_wide_features_refused_not_aborted():
    # n = 8, d = 16,000: CORAL's d×d covariances need about 8 GB.
    res = run_limited(
        """
        import numpy as np, psda
        x = np.random.default_rng(0).random((8, 16000), dtype=np.float32)
        try:
            psda.match(x, x, batch_size=2, discrepancy="coral")
        except ValueError as e:
            print("ValueError:", e)
        """,
        6 << 30,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ValueError:" in res.stdout and "16000×16000 covariances" in res.stdout, res.stdout + res.stderr[-3000:]


@needs_rlimit
def test_case03_ulimit_v_dense_match_refused_not_aborted():
    res = run_limited(
        """
        import numpy as np, psda
        x = np.random.default_rng(0).random((16000, 4), dtype=np.float32)
        try:
            psda.match(x, x, batch_size=2, solver="dense")
        except ValueError as e:
            print("ValueError:", e)
        """,
        int(2.5e9),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ValueError:" in res.stdout and "ulimit -v" in res.stdout, res.stdout + res.stderr[-3000:]


@needs_rlimit
@pytest.mark.parametrize("limit", [150 << 20, 800 << 20])
def test_case03_ulimit_v_import_gives_the_real_error(limit):
    # Under a tight limit the Go runtime cannot load: psda must say so with
    # an ImportError naming the limit, never abort or raise a NameError.
    res = run_limited(
        """
        try:
            import numpy as np
        except BaseException as e:  # numpy itself may not fit; not ours
            print("numpy does not load:", type(e).__name__)
            raise SystemExit(0)
        import psda
        try:
            psda.match(np.zeros((4, 2)), np.ones((4, 2)), batch_size=2)
        except ImportError as e:
            print("ImportError:", e)
        """,
        limit,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "NameError" not in res.stdout + res.stderr
    if "numpy does not load" not in res.stdout:
        assert "ImportError:" in res.stdout and "ulimit -v" in res.stdout, res.stdout + res.stderr[-3000:]
