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


def _capi_match(lib, source, target, *, batch_size, stages, discrepancy, kernel, solver):
    """The matching of source and target through the C ABI's context calls."""
    import ctypes

    import numpy as np

    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    ctx = ctypes.c_size_t(0)
    assert lib.psda_ctx_new(ctypes.byref(ctx)) == 0
    try:
        h = ctx.value
        lib.psda_set_batch_size.argtypes = [ctypes.c_size_t, i64]
        lib.psda_set_stages.argtypes = [ctypes.c_size_t, ctypes.c_int32]
        for fn in ("psda_set_discrepancy", "psda_set_kernel", "psda_set_solver"):
            getattr(lib, fn).argtypes = [ctypes.c_size_t, ctypes.c_char_p]
        assert lib.psda_set_batch_size(h, batch_size) == 0
        assert lib.psda_set_stages(h, stages) == 0
        assert lib.psda_set_discrepancy(h, discrepancy.encode()) == 0
        assert lib.psda_set_kernel(h, kernel.encode()) == 0
        assert lib.psda_set_solver(h, solver.encode()) == 0
        compute = lib.psda_compute_f32 if source.dtype == np.float32 else lib.psda_compute_f64
        compute.argtypes = [ctypes.c_size_t, ptr, i64, ptr, i64, i64]
        st = compute(h, source.ctypes.data, source.shape[0], target.ctypes.data, target.shape[0], source.shape[1])
        assert st == 0, st
        n = [i64(), i64(), i64()]
        lib.psda_result_sizes.argtypes = [ctypes.c_size_t, ptr, ptr, ptr]
        assert lib.psda_result_sizes(h, *[ctypes.byref(v) for v in n]) == 0
        pairs = np.zeros((n[0].value, 2), np.int64)
        quads = np.zeros((n[1].value, 2), np.int64)
        singles = np.zeros(n[2].value, np.int64)
        for fn, a in (("psda_copy_pairs", pairs), ("psda_copy_quads", quads), ("psda_copy_singles", singles)):
            getattr(lib, fn).argtypes = [ctypes.c_size_t, ptr, i64]
            assert getattr(lib, fn)(h, a.ctypes.data, a.size) == 0
        obj = [ctypes.c_double(), ctypes.c_double(), ctypes.c_double()]
        lib.psda_objectives.argtypes = [ctypes.c_size_t, ptr, ptr, ptr]
        assert lib.psda_objectives(h, *[ctypes.byref(v) for v in obj]) == 0
        return pairs, quads, singles, [v.value for v in obj]
    finally:
        lib.psda_ctx_free.argtypes = [ctypes.c_size_t]
        lib.psda_ctx_free(ctx.value)


@pytest.mark.parametrize(
    "dtype, ns, nt, settings",
    [
        ("float64", 41, 33, dict(batch_size=4, stages=2, discrepancy="mmd", kernel="rbf", solver="auto")),
        ("float32", 41, 33, dict(batch_size=4, stages=2, discrepancy="mmd", kernel="rbf", solver="auto")),
        ("float64", 30, 45, dict(batch_size=3, stages=1, discrepancy="mmd", kernel="linear", solver="auto")),
        ("float64", 41, 33, dict(batch_size=4, stages=2, discrepancy="coral", kernel="rbf", solver="sparse")),
    ],
)
def test_bindings_agree(dtype, ns, nt, settings):
    """The C ABI's context (psda_compute_*) and psda.match (the gopy binding)
    give identical matchings on the same inputs: both run one Go function,
    internal/binding.Compute (issue 25)."""
    import ctypes

    import numpy as np

    import psda
    from psda import _native

    lib = ctypes.CDLL(str(Path(_native._gopy.__file__).resolve()))
    rng = np.random.default_rng(5)
    source = rng.normal(size=(ns, 6)).astype(dtype)
    target = (rng.normal(size=(nt, 6)) + 0.3).astype(dtype)
    pairs, quads, singles, objectives = _capi_match(lib, source, target, **settings)
    m = psda.match(source, target, **settings)
    np.testing.assert_array_equal(pairs, m.pairs)
    np.testing.assert_array_equal(quads, m.quads)
    np.testing.assert_array_equal(singles, m.singles)
    assert objectives == [m.stage1_cost, m.stage2_cost, m.stage2_bound]


def test_every_export_is_declared():
    """Every psda_* function the library exports is declared in psda.h, the
    one header of the C ABI (issue 25: psda_kmeans_f64 was exported, and
    called by the Python package through ctypes, but not declared)."""
    import re

    from psda import _native

    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm is not on PATH (binutils)")
    lib = Path(_native._gopy.__file__).resolve()
    out = subprocess.run([nm, "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    exported = set(re.findall(r" T (psda_\w+)$", out, re.M))
    declared = set(re.findall(r"^int (psda_\w+)\(", (ROOT / "capi" / "psda.h").read_text(), re.M))
    assert exported, "nm found no psda_* function in " + str(lib)
    assert sorted(exported - declared) == []
