"""The C ABI works from C: compile tests/c/psda_abi_test.c against
capi/psda.h, link it to the installed extension library, run it."""

import importlib.metadata
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "c" / "psda_abi_test.c"


def libpython_flags():
    """Return the link flags for libpython, or None when there is no shared one.

    The library is also the Python extension; its CPython glue refers to a few
    data symbols of the interpreter (Py_None, PyExc_ValueError) that the
    dynamic loader must resolve even though a C program never calls into it.
    """
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
    if ldlib.endswith(".so") or ".so." in ldlib:
        if os.path.exists(os.path.join(libdir, ldlib)):
            name = ldlib[3:].split(".so")[0]
            return ["-L" + libdir, "-l" + name, "-Wl,-rpath," + libdir]
    return None


@pytest.fixture(scope="module")
def abi_test(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc or $CC) on PATH: cannot compile the C ABI test program")
    flags = libpython_flags()
    if flags is None:
        pytest.skip("this Python has no shared libpython to supply the interpreter symbols the library references")
    from psda import _native

    lib = Path(_native._gopy.__file__).resolve()
    exe = tmp_path_factory.mktemp("capi") / "psda_abi_test"
    cmd = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "capi"), str(SOURCE), str(lib),
           "-Wl,-rpath," + str(lib.parent), *flags, "-lm", "-pthread", "-o", str(exe)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, "compiling the C test failed:\n%s\n%s" % (" ".join(cmd), res.stderr)
    return exe


def test_c_program(abi_test):
    want = importlib.metadata.version("psda")
    res = subprocess.run([str(abi_test), want], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    # The last line is the summary; a "note:" line may come before it.
    assert res.stdout.strip().splitlines()[-1].startswith("ok:"), res.stdout


HOSTILE = ROOT / "tests" / "c" / "psda_hostile_test.c"


@pytest.fixture(scope="module")
def hostile_test(tmp_path_factory):
    """tests/c/psda_hostile_test.c, under AddressSanitizer where the compiler has it."""
    cc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc or $CC) on PATH: cannot compile the C ABI hostile-use test")
    flags = libpython_flags()
    if flags is None:
        pytest.skip("this Python has no shared libpython to supply the interpreter symbols the library references")
    from psda import _native

    lib = Path(_native._gopy.__file__).resolve()
    exe = tmp_path_factory.mktemp("capi") / "psda_hostile_test"
    base = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-I", str(ROOT / "capi"), str(HOSTILE), str(lib),
            "-Wl,-rpath," + str(lib.parent), *flags, "-lm", "-pthread", "-o", str(exe)]  # fmt: skip
    asan = base[:1] + ["-fsanitize=address", "-fno-omit-frame-pointer"] + base[1:]
    res = subprocess.run(asan, capture_output=True, text=True)
    if res.returncode == 0:
        return exe, True
    res = subprocess.run(base, capture_output=True, text=True)
    assert res.returncode == 0, "compiling the C hostile-use test failed:\n%s\n%s" % (" ".join(base), res.stderr)
    return exe, False


def test_c_hostile_use(hostile_test):
    """Issue 17 case 1: hostile arguments and concurrent use (a free racing
    a waiting compute, concurrent double frees, n*dim overflow) end in
    psda.h's documented status codes, with no crash and no ASan report."""
    exe, asan = hostile_test
    env = dict(os.environ)
    # The Go runtime and the interpreter's library keep allocations for the
    # life of the process; leak reports about them are not ours.
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0:halt_on_error=1"
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, ("asan " if asan else "") + res.stdout + res.stderr[-4000:]
    assert "AddressSanitizer" not in res.stderr, res.stderr[-4000:]
    assert res.stdout.strip().splitlines()[-1].startswith("ok:"), res.stdout
