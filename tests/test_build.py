"""The build: one extension library, no libpython, the C ABI exported from it,
and the _native layer on top (zero-copy inputs, GIL released, SciPy-compatible
assignment, the Go batch schedule), plus a wheel that installs elsewhere."""

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest

from psda import _native

ROOT = Path(__file__).resolve().parent.parent
LIB = Path(_native._gopy.__file__).resolve()


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip("%s is not on PATH (binutils)" % name)
    return path


def header_functions():
    """Return the function names declared in capi/psda.h."""
    return re.findall(r"^int (psda_\w+)\(", (ROOT / "capi" / "psda.h").read_text(), re.M)


# --- the library -----------------------------------------------------------


def test_one_library_in_package():
    libs = [p.name for p in LIB.parent.iterdir() if p.suffix == ".so" or ".so." in p.name]
    assert libs == [LIB.name]


def test_does_not_link_libpython():
    out = subprocess.run([tool("readelf"), "-d", str(LIB)], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
    assert needed, "readelf found no NEEDED entries at all:\n" + out
    assert not [n for n in needed if "python" in n.lower()], needed


def test_c_abi_exported():
    out = subprocess.run([tool("nm"), "-D", "--defined-only", str(LIB)], capture_output=True, text=True, check=True).stdout
    exported = set(re.findall(r" T (\w+)$", out, re.M))
    declared = header_functions()
    assert len(declared) >= 18
    assert sorted(set(declared) - exported) == []
    assert "PyInit__psdago" in exported


def other_interpreters():
    """Yield interpreters of this Python version other than the running one."""
    ours = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    name = "python%d.%d" % sys.version_info[:2]
    for d in ("/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"):
        p = os.path.join(d, name)
        if os.path.exists(p) and os.path.realpath(p) != ours:
            yield p


def test_loads_in_another_interpreter_of_the_same_version():
    others = list(other_interpreters())
    if not others:
        pytest.skip("no other python%d.%d build on this machine" % sys.version_info[:2])
    code = "import ctypes, _psdago; b = ctypes.create_string_buffer(32); ctypes.CDLL(_psdago.__file__).psda_version(b, 32); print(b.value.decode())"
    for py in others:
        res = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=LIB.parent, env={"PATH": os.environ.get("PATH", "")})
        assert res.returncode == 0, "%s: %s" % (py, res.stderr)
        assert res.stdout.strip() == _native.version()


def test_version_matches_package_metadata():
    assert _native.version() == importlib.metadata.version("psda")


# --- _native: zero copy and the GIL ------------------------------------------


def peak_bytes(fn):
    """Return the peak of memory traced by tracemalloc (NumPy reports its
    buffers to it) while fn runs, above the level when fn started."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_contiguous_input_is_not_copied(dtype):
    rng = np.random.default_rng(0)
    n, d = 48, 12000  # 2.3 MB (float32) per matrix; outputs are < 2 KB
    src = rng.normal(size=(n, d)).astype(dtype)
    tgt = rng.normal(size=(n, d)).astype(dtype)

    def run():
        _native.match(src, tgt, batch_size=4, stages=1, discrepancy="mmd", kernel="linear", gammas=None)

    # The observable works: a single conversion of one input shows up.
    assert peak_bytes(lambda: np.ascontiguousarray(np.asfortranarray(src))) >= src.nbytes
    assert peak_bytes(run) < src.nbytes // 4


def test_match_rejects_what_it_would_have_to_copy():
    x = np.zeros((4, 3), dtype=np.float32)
    for bad in (np.asfortranarray(np.ones((4, 3), np.float32)), x.astype(np.float64), x[:, :2], x.ravel()):
        with pytest.raises(TypeError):
            _native.match(x, bad, batch_size=2, stages=1, discrepancy="mmd", kernel="linear", gammas=None)


def spinner_share(call):
    """Run call while another thread spins; return (seconds call took, the
    spinner's progress during the call relative to its rate with the main
    thread asleep). With the GIL held throughout, the spinner only runs in
    the switch intervals (5 ms) around the call, so the share stays near 0."""
    count, done = [0], threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        c0 = count[0]
        time.sleep(0.2)
        rate = (count[0] - c0) / 0.2
        before, start = count[0], time.perf_counter()
        call()
        elapsed, during = time.perf_counter() - start, count[0] - before
    finally:
        done.set()
        t.join()
    return elapsed, during / (rate * elapsed)


def test_match_releases_the_gil():
    # Grow the problem until the call is long enough to tell, whatever the
    # machine's speed.
    rng = np.random.default_rng(1)
    for n in (1000, 2000, 4000, 8000):
        src, tgt = rng.normal(size=(n, 64)), rng.normal(size=(n, 64))
        elapsed, share = spinner_share(
            lambda: _native.match(src, tgt, batch_size=8, stages=1, discrepancy="mmd", kernel="rbf", gammas=None)
        )
        if elapsed > 0.15:
            break
    assert elapsed > 0.15, "the problem is too small to tell (%.3f s)" % elapsed
    # Go may keep both cores busy, so the spinner need not get a full one.
    assert share > 0.2, "the spinner ran %.0f%% of the time during a %.2f s match" % (100 * share, elapsed)


def test_match_error_is_value_error_with_go_message():
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="kernel = 'cosine'"):
        _native.match(x, x, batch_size=2, stages=1, discrepancy="mmd", kernel="cosine", gammas=None)
    x[1, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        _native.match(x, x + 1, batch_size=2, stages=1, discrepancy="mmd", kernel="linear", gammas=None)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_gets_an_error_not_a_hang():
    # A large match in a forked child hangs the Go runtime; _native refuses.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            _native.match(np.zeros((4, 2)), np.ones((4, 2)), batch_size=2, stages=1, discrepancy="mmd", kernel="linear", gammas=None)
            os.write(w, b"no error")
        except RuntimeError as e:
            os.write(w, str(e).encode()[:500])
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    msg = os.read(r, 1000).decode()
    os.close(r)
    assert "fork" in msg and "spawn" in msg, msg


# --- _native.linear_sum_assignment ------------------------------------------


def brute_force_min(c):
    nr, nc = c.shape
    if nr <= nc:
        return min(sum(c[i, p[i]] for i in range(nr)) for p in permutations(range(nc), nr))
    return brute_force_min(c.T)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (4, 6), (6, 4), (5, 5), (2, 7)])
def test_linear_sum_assignment_is_optimal(shape):
    rng = np.random.default_rng(sum(shape))
    c = np.round(rng.uniform(-5, 5, size=shape), 1)  # ties on purpose
    rows, cols, obj = _native.linear_sum_assignment(c)
    k = min(shape)
    assert len(rows) == len(cols) == k
    assert list(rows) == sorted(set(rows.tolist())) and len(set(cols.tolist())) == k
    assert c[rows, cols].sum() == pytest.approx(obj)
    assert obj == pytest.approx(brute_force_min(c))


def test_linear_sum_assignment_matches_scipy_layout():
    scipy_opt = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(5)
    for shape in [(30, 30), (20, 45), (45, 20)]:
        c = rng.normal(size=shape)
        r, k, obj = _native.linear_sum_assignment(np.asfortranarray(c))
        sr, sk = scipy_opt.linear_sum_assignment(c)
        np.testing.assert_array_equal(r, sr)
        assert c[r, k].sum() == pytest.approx(c[sr, sk].sum())


def test_linear_sum_assignment_errors():
    # The internal entry takes a validated non-empty 2-D float64 array (the
    # public psda.linear_sum_assignment converts); the Go core still checks
    # the values and the feasibility of the forbidden entries.
    with pytest.raises(TypeError, match="2-D float64"):
        _native.linear_sum_assignment([[1.0, 2.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match="2-D float64"):
        _native.linear_sum_assignment(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="finite"):
        _native.linear_sum_assignment(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="finite"):
        _native.linear_sum_assignment(np.array([[1.0, -np.inf], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="infeasible"):
        _native.linear_sum_assignment(np.array([[np.inf, np.inf], [0.0, 1.0]]))
    r, k, obj = _native.linear_sum_assignment(np.array([[np.inf, 1.0], [2.0, 5.0]]))
    assert list(k) == [1, 0] and obj == 3.0


# --- _native.Schedule -------------------------------------------------------


def toy_matching(p):
    """p pairs (r, p-1-r), quadruplets (0,1), (2,3), ..., one single if p is odd."""
    pairs = np.stack([np.arange(p), p - 1 - np.arange(p)], axis=1)
    quads = np.arange(p - p % 2).reshape(-1, 2)
    singles = np.arange(p - p % 2, p)
    return pairs, quads, singles


@pytest.mark.parametrize("p,k,drop_last,replicas", [(11, 4, False, 1), (11, 4, True, 1), (16, 2, True, 3), (9, 2, False, 2)])
def test_schedule_covers_pairs(p, k, drop_last, replicas):
    pairs, quads, singles = toy_matching(p)
    s = _native.Schedule(pairs, quads, singles, batch_size=k, seed=7, drop_last=drop_last, num_replicas=replicas)
    seen = []
    for rank in range(replicas):
        lens = s.batch_lens(rank)
        assert len(lens) == s.num_batches and lens.dtype == np.int64
        flat = s.fill(3, rank)
        assert len(flat) == 2 * lens.sum()
        off = 0
        for L in lens:
            src, tgt = flat[off : off + L], flat[off + L : off + 2 * L]
            off += 2 * L
            rows = [int(np.flatnonzero(pairs[:, 0] == i)[0]) for i in src]
            np.testing.assert_array_equal(pairs[rows, 1], tgt)  # position m pairs source m with target m
            for m in range(0, L - 1, 2):  # quadruplets sit at 2m, 2m+1
                if rows[m] < p - p % 2:
                    assert {rows[m], rows[m + 1]} in [set(q) for q in quads.tolist()]
            seen += rows
        np.testing.assert_array_equal(s.fill(3, rank, start=1), flat[2 * lens[0] :])
    if drop_last:
        assert len(seen) == len(set(seen)) == s.num_batches * replicas * k
    else:
        assert set(seen) == set(range(p))


def test_schedule_epochs_differ_and_repeat():
    s = _native.Schedule(*toy_matching(40), batch_size=4, seed=1, drop_last=True, num_replicas=1)
    assert np.array_equal(s.fill(0, 0), s.fill(0, 0))
    assert not np.array_equal(s.fill(0, 0), s.fill(1, 0))


def test_schedule_errors():
    pairs, quads, singles = toy_matching(7)
    with pytest.raises(ValueError, match="batch_size"):
        _native.Schedule(pairs, quads, singles, batch_size=0, seed=0, drop_last=True, num_replicas=1)
    with pytest.raises(ValueError, match="pair 6"):
        _native.Schedule(pairs, quads, [], batch_size=2, seed=0, drop_last=True, num_replicas=1)
    with pytest.raises(ValueError, match="seed"):
        _native.Schedule(pairs, quads, singles, batch_size=2, seed=-1, drop_last=True, num_replicas=1)
    handles = _native._gopy.NumHandles()
    s = _native.Schedule(pairs, quads, singles, batch_size=2, seed=0, drop_last=True, num_replicas=2)
    assert _native._gopy.NumHandles() == handles + 1
    with pytest.raises(ValueError, match="rank"):
        s.fill(0, 2)
    with pytest.raises(ValueError, match="start"):
        s.fill(0, 0, start=s.num_batches + 1)
    del s
    assert _native._gopy.NumHandles() == handles  # the Go object is released


# --- the wheel --------------------------------------------------------------


def copy_sources(dst):
    """Copy the working tree without build outputs into dst."""
    ignore = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".pytest_cache", "*.whl")
    shutil.copytree(ROOT, dst, ignore=ignore)


@pytest.mark.slow
def test_wheel_installs_in_fresh_venv(tmp_path):
    if shutil.which("go") is None and not os.environ.get("GO"):
        pytest.skip("Go is not installed: cannot build the wheel")
    src, dist, venv = tmp_path / "src", tmp_path / "dist", tmp_path / "venv"
    copy_sources(src)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(src)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (wheel,) = dist.glob("psda-*.whl")
    tag = "cp%d%d" % sys.version_info[:2]
    assert re.search(r"-%s-%s-linux_\w+\.whl$" % (tag, tag), wheel.name), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if n.endswith(".so")] == ["psda/" + LIB.name]
    modules = sorted(p.relative_to(ROOT / "python").as_posix() for p in (ROOT / "python" / "psda").rglob("*.py"))
    assert sorted(n for n in names if n.endswith(".py")) == modules
    assert "psda/py.typed" in names
    assert not [n for n in names if n.endswith((".h", ".c", ".go"))], names
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry and "psda = psda.cli:main" in zipfile.ZipFile(wheel).read(entry[0]).decode()

    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300)
    # NumPy, the only dependency, comes from this environment, linked in
    # alone so that no other copy of psda is importable.
    deps = tmp_path / "deps"
    deps.mkdir()
    np_dir = Path(np.__file__).parent
    for p in np_dir.parent.iterdir():
        if p.name == "numpy" or p.name.startswith("numpy.libs"):
            (deps / p.name).symlink_to(p)
    code = "import psda, psda._native as n; print(psda.__file__); print(n.version())"
    res = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(deps)))
    assert res.returncode == 0, res.stderr
    where, version = res.stdout.split()
    assert Path(where).is_relative_to(venv)
    assert version == importlib.metadata.version("psda")
