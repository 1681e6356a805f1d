"""The binary wheel: tools/build-wheels.sh builds a manylinux2014 wheel for
this Python from the sdist, and tools/smoke_wheel.py installs it into a fresh
venv with no Go on PATH and runs match, the sampler and a DataLoader there.

Marked ``wheel``: it needs Go and PyPI (the tools venv, pip's build
isolation, NumPy in the fresh venv) and takes a few minutes; deselect it
with ``-m "not wheel"``.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TAG = "cp%d%d" % sys.version_info[:2]
ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(os.uname().machine, os.uname().machine)

pytestmark = pytest.mark.wheel


def copy_sources(dst):
    """Copy the working tree without build outputs into dst."""
    ignore = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".pytest_cache", "*.whl")
    shutil.copytree(ROOT, dst, ignore=ignore)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """Build this Python's wheel once for the module; return its path."""
    if shutil.which("go") is None and not os.environ.get("GO"):
        pytest.skip("Go is not installed: cannot build the wheel")
    if sys.platform != "linux" or ARCH not in ("x86_64", "aarch64"):
        pytest.skip("manylinux wheels are built on Linux x86_64/aarch64 only")
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("free-threaded CPython is not a wheel target")
    tmp = tmp_path_factory.mktemp("wheel")
    # A copy, so that the build cannot depend on or leave files in the tree.
    copy_sources(tmp / "src")
    out = tmp / "dist"
    res = subprocess.run(["bash", str(tmp / "src" / "tools" / "build-wheels.sh"), sys.executable],
                         capture_output=True, text=True, timeout=900, env=dict(os.environ, WHEEL_DIR=str(out)))  # fmt: skip
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    print(res.stdout[-600:])
    wheels = sorted(out.glob("psda-*.whl"))
    assert len(wheels) == 1, wheels
    assert len(list(out.glob("psda-*.tar.gz"))) == 1  # the sdist the wheel was built from
    return wheels[0]


def test_wheel_is_manylinux2014_for_this_python(wheel):
    assert re.fullmatch(r"psda-[\w.]+-%s-%s-manylinux2014_%s\.manylinux_2_17_%s\.whl" % (TAG, TAG, ARCH, ARCH), wheel.name), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    libs = [n for n in names if n.endswith(".so") or ".so." in n]
    # One library, nothing grafted by auditwheel (no psda.libs/).
    assert libs == ["psda/_psdago.cpython-%s-%s-linux-gnu.so" % (TAG[2:], ARCH)], libs
    assert not [n for n in names if n.endswith((".h", ".c", ".go"))]


def test_library_needs_glibc_2_17_at_most(wheel, tmp_path):
    """Read the symbol versions ourselves (auditwheel is the other check)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump is not on PATH (binutils)")
    (lib,) = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so")]
    zipfile.ZipFile(wheel).extract(lib, tmp_path)
    out = subprocess.run([objdump, "-T", str(tmp_path / lib)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", out)}
    assert versions, "no GLIBC symbol versions found:\n" + out[:2000]
    assert max(versions) <= (2, 17), sorted(versions)
    needed = subprocess.run([shutil.which("readelf") or "readelf", "-d", str(tmp_path / lib)], capture_output=True, text=True, check=True).stdout
    assert sorted(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", needed)) == ["libc.so.6", "libpthread.so.0"]


def test_smoke_in_fresh_venv_without_go(wheel):
    cmd = [sys.executable, str(ROOT / "tools" / "smoke_wheel.py"), str(wheel)]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        # The real torch of this environment, reached from the fresh venv
        # after its own site-packages; psda itself must come from the wheel.
        cmd += ["--torch-site", str(Path(torch.__file__).resolve().parent.parent)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert "smoke: all checks passed" in res.stdout
    assert ("smoke: DataLoader ok" in res.stdout) == (torch is not None), res.stdout
