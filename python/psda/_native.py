"""The only module that touches psda's shared library.

One file, ``_psdago*.so``, holds the whole Go side (Go allows one runtime per
process). Python reaches it two ways:

* as the gopy extension module ``psda._psdago``, for the stateful
  :class:`Schedule` (gopy's generated wrappers release the GIL);
* through :mod:`ctypes` on the *same* file, for the C ABI of ``capi/psda.h``
  (ctypes releases the GIL during each call, so matching runs without it).

Bulk data crosses only as addresses of NumPy buffers that Python allocated:
inputs are read in place, outputs are allocated here and filled by Go.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

__all__ = ["version", "match", "linear_sum_assignment", "Schedule"]

# Must equal PSDA_ABI_VERSION in capi/psda.h; checked against the library below,
# as is PSDA_ABI_MINOR >= _ABI_MINOR (progress and cancellation).
_ABI_VERSION = 1
_ABI_MINOR = 1
# psda_set_solver came with minor 2; an older library still loads and runs
# solver "auto" (its only behaviour).
_SOLVER_MINOR = 2
# psda_progress_view came with minor 3; with an older library progress is
# polled through psda_progress, which slows the computation down.
_VIEW_MINOR = 3
# psda_lsap_ctx_f64 (cancellable), PSDA_ERR_INFEASIBLE and +inf entries came
# with minor 4; an older library solves finite matrices only, uninterruptibly.
_LSAP_MINOR = 4

# Matrices of at most this many entries are solved by a direct call to
# psda_lsap_f64: a worker thread and a context cost about 150 us a call, more
# than the whole solve of a small matrix, and such a solve ends within
# milliseconds of a Ctrl-C anyway.
_LSAP_DIRECT = 1 << 16

# Status codes of capi/psda.h.
_OK, _ERR_NULL, _ERR_HANDLE, _ERR_SIZE, _ERR_INVALID, _ERR_NO_RESULT, _ERR_INTERNAL, _ERR_CANCELLED, _ERR_INFEASIBLE = range(9)

#: Names of capi/psda.h's PSDA_PHASE_* values, as passed to progress callbacks.
PHASES = ("idle", "stage 1 costs", "stage 1 assignment", "stage 2 costs", "stage 2 matching", "done")

# Seconds between two looks at a running matching: the latency of Ctrl-C and
# of progress updates.
_POLL = 0.05

# The Go runtime reserves address space when the library loads and aborts
# the whole process (no exception) when it cannot: under `ulimit -v`
# (RLIMIT_AS) with less room than this above the current size, loading it
# fails that way. Measured with Go 1.26 on linux/amd64 after numpy: aborts
# with 0.7 and 1.06 GB of room, loads with 1.36 GB and more.
_GO_ADDRESS_SPACE = 3 << 29  # 1.5 GiB


def _check_address_space() -> None:
    """Raise ImportError, instead of letting the Go runtime abort the process,
    when an address-space limit leaves too little room to load it."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        with open("/proc/self/status") as f:
            vm = next((int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:")), 0)
    except (ImportError, OSError, ValueError):  # not Linux: nothing to check
        return
    if soft == resource.RLIM_INFINITY or vm <= 0 or soft - vm >= _GO_ADDRESS_SPACE:
        return
    raise ImportError(
        "psda's Go core needs about %.1f GB of address space to load, but the address-space limit "
        "(ulimit -v / RLIMIT_AS = %.2f GB) leaves %.2f GB above this process's %.2f GB: raise the limit "
        "(ulimit -v %d or more), or run psda in a process without it"
        % (_GO_ADDRESS_SPACE / 1e9, soft / 1e9, max(soft - vm, 0) / 1e9, vm / 1e9, (vm + _GO_ADDRESS_SPACE) // 1024 + 1)
    )


_check_address_space()
from . import _psdago as _gopy  # noqa: E402  (after the check: loading starts the Go runtime)

# dlopen of an already loaded file returns the same handle: this is the Go
# runtime the extension module started, not a second one.
_lib = ctypes.CDLL(_gopy.__file__)
_ctx_t = ctypes.c_size_t  # psda_ctx is uintptr_t
_int, _i32, _i64, _sz, _ptr = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t, ctypes.c_void_p
for _name, _args in {
    "psda_abi_version": [_ptr],
    "psda_version": [_ptr, _sz],
    "psda_last_error": [_ctx_t, _ptr, _sz],
    "psda_ctx_new": [_ptr],
    "psda_ctx_free": [_ctx_t],
    "psda_set_batch_size": [_ctx_t, _i64],
    "psda_set_stages": [_ctx_t, _i32],
    "psda_set_discrepancy": [_ctx_t, ctypes.c_char_p],
    "psda_set_kernel": [_ctx_t, ctypes.c_char_p],
    "psda_set_gammas": [_ctx_t, _ptr, _sz],
    "psda_compute_f32": [_ctx_t, _ptr, _i64, _ptr, _i64, _i64],
    "psda_compute_f64": [_ctx_t, _ptr, _i64, _ptr, _i64, _i64],
    "psda_result_sizes": [_ctx_t, _ptr, _ptr, _ptr],
    "psda_copy_pairs": [_ctx_t, _ptr, _i64],
    "psda_copy_quads": [_ctx_t, _ptr, _i64],
    "psda_copy_singles": [_ctx_t, _ptr, _i64],
    "psda_objectives": [_ctx_t, _ptr, _ptr, _ptr],
    "psda_lsap_f64": [_ptr, _i64, _i64, _ptr, _i64, _ptr],
    "psda_abi_minor": [_ptr],
    "psda_progress": [_ctx_t, _ptr, _ptr, _ptr],
    "psda_cancel": [_ctx_t],
    "psda_set_solver": [_ctx_t, ctypes.c_char_p],
    "psda_progress_view": [_ctx_t, _ptr],
    "psda_lsap_ctx_f64": [_ctx_t, _ptr, _i64, _i64, _ptr, _i64, _ptr],
}.items():
    _fn = getattr(_lib, _name, None)
    if _fn is not None:  # functions after minor 1 may be absent from an older build
        _fn.argtypes, _fn.restype = _args, _int


def _message(ctx: int) -> str:
    buf = ctypes.create_string_buffer(4096)
    _lib.psda_last_error(ctx, buf, len(buf))
    return buf.value.decode("utf-8", "replace")


def _check(status: int, ctx: int = 0) -> None:
    """Raise for a failed C ABI call: ValueError for bad input or an
    infeasible assignment problem (Go's message)."""
    if status == _OK:
        return
    msg = _message(ctx)
    if status in (_ERR_NULL, _ERR_SIZE, _ERR_INVALID, _ERR_INFEASIBLE):
        raise ValueError(msg)
    raise RuntimeError("%s (status %d)" % (msg, status))


_abi = ctypes.c_int32()
_check(_lib.psda_abi_version(ctypes.byref(_abi)))
_minor = ctypes.c_int32()
if getattr(_lib, "psda_abi_minor", None) is not None:
    _check(_lib.psda_abi_minor(ctypes.byref(_minor)))
if _abi.value != _ABI_VERSION or _minor.value < _ABI_MINOR:
    raise ImportError(
        "psda's library %s has ABI version %d.%d, this module expects %d.%d or a later minor: reinstall psda (pip install .)"
        % (_gopy.__file__, _abi.value, _minor.value, _ABI_VERSION, _ABI_MINOR)
    )


# The Go runtime does not survive fork(): in a forked child its other threads
# are gone and calls that need them hang. Refuse instead of hanging.
_PID = os.getpid()


def _same_process() -> None:
    if os.getpid() != _PID:
        raise RuntimeError(
            "psda's Go core cannot run in a process forked from the one that loaded it "
            "(the Go runtime does not survive fork and would hang): call psda in the parent, "
            "e.g. iterate the sampler there as DataLoader does, or start workers with the "
            "'spawn' or 'forkserver' multiprocessing method"
        )


def version() -> str:
    """Return the version the library was built as (pyproject's version)."""
    _same_process()
    buf = ctypes.create_string_buffer(64)
    _check(_lib.psda_version(buf, len(buf)))
    return buf.value.decode()


def _addr(a: np.ndarray) -> int:
    return a.ctypes.data


def match(
    source: np.ndarray,
    target: np.ndarray,
    *,
    batch_size: int,
    stages: int,
    discrepancy: str,
    kernel: str,
    gammas: Optional[Sequence[float]],
    progress: Optional[Callable[[int, int, str], None]] = None,
    solver: str = "auto",
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, float, float, float]:
    """Compute the PSDA matching of two feature matrices through the C ABI.

    source and target must be C-contiguous 2-D ndarrays of one dtype, float32
    or float64 (the public API converts); Go reads them in place, with the GIL
    released. gammas None means the paper's mixture. solver ("auto", "dense"
    or "sparse") goes to psda_set_solver (ABI minor 2); with a library older
    than that, "auto" runs its built-in solver and the others raise
    RuntimeError.

    The Go call runs in a worker thread while the calling thread waits in
    steps of _POLL seconds, so that Ctrl-C is delivered: a KeyboardInterrupt
    (or any exception raised by progress) cancels the Go work through
    psda_cancel, waits the few milliseconds it takes to stop, and propagates.
    progress, when given, is called from the calling thread as
    progress(done, total, phase) with phase one of PHASES, whenever the
    progress changed, and once with done == total at the end.

    Returns (pairs (P, 2), quads (Q, 2), singles (S,)) as int64 arrays and the
    floats stage1_cost, stage2_cost, stage2_bound. Raises ValueError with Go's
    message for invalid input.
    """
    _same_process()
    for name, a in (("source", source), ("target", target)):
        if not (isinstance(a, np.ndarray) and a.ndim == 2 and a.flags.c_contiguous):
            raise TypeError("_native.match: %s must be a C-contiguous 2-D ndarray" % name)
    if source.dtype != target.dtype or source.dtype not in (np.float32, np.float64):
        raise TypeError("_native.match: source and target must both be float32 or both float64, got %s and %s" % (source.dtype, target.dtype))
    compute = _lib.psda_compute_f32 if source.dtype == np.float32 else _lib.psda_compute_f64
    if _minor.value < _SOLVER_MINOR and solver != "auto":
        raise RuntimeError(
            "solver = %r: psda's library %s has ABI minor %d, older than psda_set_solver (minor %d), so it "
            "cannot choose a solver: pass solver='auto' or reinstall psda (pip install .)"
            % (solver, _gopy.__file__, _minor.value, _SOLVER_MINOR)
        )
    # NULL means the default mixture; an empty one is passed as a non-NULL
    # address with n = 0 (a 1-element buffer guarantees a real address).
    g = np.ascontiguousarray(gammas if gammas is not None else [], dtype=np.float64).ravel()
    g_buf = g if g.size else np.zeros(1)
    g_addr = 0 if gammas is None else _addr(g_buf)

    handle = _ctx_t()
    _check(_lib.psda_ctx_new(ctypes.byref(handle)))
    ctx = handle.value
    try:
        _check(_lib.psda_set_batch_size(ctx, int(batch_size)), ctx)
        _check(_lib.psda_set_stages(ctx, int(stages)), ctx)
        _check(_lib.psda_set_discrepancy(ctx, str(discrepancy).encode()), ctx)
        _check(_lib.psda_set_kernel(ctx, str(kernel).encode()), ctx)
        _check(_lib.psda_set_gammas(ctx, g_addr, g.size), ctx)
        if _minor.value >= _SOLVER_MINOR:
            _check(_lib.psda_set_solver(ctx, str(solver).encode()), ctx)
        _check(_run(ctx, progress, compute, ctx, _addr(source), source.shape[0], _addr(target), target.shape[0], source.shape[1]), ctx)
        sizes = np.zeros(3, dtype=np.int64)
        _check(_lib.psda_result_sizes(ctx, _addr(sizes), _addr(sizes[1:]), _addr(sizes[2:])), ctx)
        pairs = np.empty((sizes[0], 2), dtype=np.int64)
        quads = np.empty((sizes[1], 2), dtype=np.int64)
        singles = np.empty(sizes[2], dtype=np.int64)
        _check(_lib.psda_copy_pairs(ctx, _addr(pairs), pairs.size), ctx)
        _check(_lib.psda_copy_quads(ctx, _addr(quads), quads.size), ctx)
        _check(_lib.psda_copy_singles(ctx, _addr(singles), singles.size), ctx)
        obj = np.zeros(3, dtype=np.float64)
        _check(_lib.psda_objectives(ctx, _addr(obj), _addr(obj[1:]), _addr(obj[2:])), ctx)
    finally:
        _lib.psda_ctx_free(ctx)
    return pairs, quads, singles, float(obj[0]), float(obj[1]), float(obj[2])


def _progress_reader(ctx: int) -> Callable[[], Tuple[int, int, str]]:
    """Return a function giving (done, total, phase) of the computation on ctx.

    It reads the progress view (memory the library refreshes every 20 ms)
    when the library has one: a call into Go from this thread while the
    computation runs waits for one of the cores it keeps busy, about 5 ms a
    poll, which made an n = 4000 matching 15% slower at one poll per 50 ms.
    """
    if _minor.value >= _VIEW_MINOR:
        addr = ctypes.c_void_p()
        _check(_lib.psda_progress_view(ctx, ctypes.byref(addr)))
        view = (ctypes.c_int64 * 3).from_address(addr.value)

        def read() -> Tuple[int, int, str]:
            return view[0], view[1], _phase_name(view[2])

        return read

    return lambda: _progress(ctx)


def _progress(ctx: int) -> Tuple[int, int, str]:
    """(done, total, phase) of ctx through psda_progress, a call into Go."""
    v = np.zeros(2, dtype=np.int64)
    phase = ctypes.c_int32()
    _check(_lib.psda_progress(ctx, _addr(v), _addr(v[1:]), ctypes.byref(phase)))
    return int(v[0]), int(v[1]), _phase_name(phase.value)


def _phase_name(phase: int) -> str:
    """The name in PHASES of a PSDA_PHASE_* value (its number if unknown)."""
    return PHASES[phase] if 0 <= phase < len(PHASES) else str(phase)


def _run(ctx: int, progress: Optional[Callable[[int, int, str], None]], fn, *args) -> int:
    """Run the C call fn(*args) on ctx in a worker thread; see match.

    Returns its status; raises KeyboardInterrupt when it was cancelled because
    of one, or whatever progress raised.
    """
    out = {}

    def work() -> None:
        out["status"] = fn(*args)

    read = _progress_reader(ctx) if progress is not None else None
    worker = threading.Thread(target=work, name="psda-match", daemon=True)
    worker.start()
    last = None
    try:
        while worker.is_alive():
            worker.join(_POLL)
            if read is not None:
                now = read()
                if now != last and (worker.is_alive() or now[0] == now[1]):
                    progress(*now)
                    last = now
    except BaseException:
        _lib.psda_cancel(ctx)
        _join(worker)
        raise
    status = out.get("status", _ERR_INTERNAL)
    if status == _ERR_CANCELLED:
        # Nobody in this process cancels ctx but the handler above.
        raise KeyboardInterrupt
    return status


def _join(worker: threading.Thread) -> None:
    """Wait for the cancelled worker, ignoring further Ctrl-C (it stops in milliseconds)."""
    while worker.is_alive():
        try:
            worker.join(_POLL)
        except KeyboardInterrupt:
            pass


def linear_sum_assignment(cost: np.ndarray) -> Tuple[np.ndarray, np.ndarray, float]:
    """Solve the dense linear assignment problem like SciPy's function.

    cost must be a 2-D float64 ndarray with at least one row and one column
    whose entries are finite or +inf (forbidden); the public API converts and
    validates. Returns (row_ind, col_ind, objective) with row_ind sorted, as
    scipy.optimize.linear_sum_assignment returns (row_ind, col_ind), plus the
    minimal total cost. A tall matrix (rows > columns) is solved transposed.

    Above _LSAP_DIRECT entries the Go call runs in a worker thread on a
    context of its own while the calling thread waits in steps of _POLL
    seconds, so that Ctrl-C cancels it (psda_cancel) and raises
    KeyboardInterrupt, as match does; smaller problems, solved in
    milliseconds, are called directly, without the thread's and the
    context's overhead. Raises
    ValueError with Go's message when the forbidden entries leave no
    assignment (it says "cost matrix is infeasible") or for invalid input.
    """
    _same_process()
    if not (isinstance(cost, np.ndarray) and cost.ndim == 2 and cost.dtype == np.float64 and cost.size > 0):
        raise TypeError("_native.linear_sum_assignment: cost must be a non-empty 2-D float64 ndarray")
    nr, nc = cost.shape
    tall = nr > nc
    c = np.ascontiguousarray(cost.T if tall else cost)
    rows, cols = c.shape
    col4row = np.empty(rows, dtype=np.int64)
    obj = ctypes.c_double()
    args = (_addr(c), rows, cols, _addr(col4row), rows, ctypes.addressof(obj))
    if _minor.value >= _LSAP_MINOR and rows * cols > _LSAP_DIRECT:
        handle = _ctx_t()
        _check(_lib.psda_ctx_new(ctypes.byref(handle)))
        ctx = handle.value
        try:
            _check(_run(ctx, None, _lib.psda_lsap_ctx_f64, ctx, *args), ctx)
        finally:
            _lib.psda_ctx_free(ctx)
    else:
        _check(_lib.psda_lsap_f64(*args))
    if not tall:
        return np.arange(nr, dtype=np.int64), col4row, obj.value
    order = np.argsort(col4row)
    return col4row[order], order.astype(np.int64), obj.value


class Schedule:
    """The epoch's batches of a matching, computed in Go (pyapi.Schedule).

    Args:
        pairs: (P, 2) int64-convertible source/target index pairs.
        quads: (Q, 2) indices into pairs.
        singles: (S,) indices into pairs.
        batch_size, seed, drop_last, num_replicas: as psda.ScheduleConfig.

    The index arrays are copied into Go memory once; ValueError with Go's
    message on invalid input.
    """

    def __init__(self, pairs, quads, singles, *, batch_size: int, seed: int, drop_last: bool, num_replicas: int):
        self._h = 0
        _same_process()
        p = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
        q = np.ascontiguousarray(quads, dtype=np.int64).reshape(-1, 2)
        s = np.ascontiguousarray(singles, dtype=np.int64).ravel()
        seed = int(seed)
        if not 0 <= seed < 2**64:
            raise ValueError("seed = %d: must be in [0, 2**64)" % seed)
        self._h = _gopy.pyapi_NewSchedule(
            _addr(p), len(p), _addr(q), len(q), _addr(s), len(s),
            int(batch_size), seed, bool(drop_last), int(num_replicas),
        )  # fmt: skip
        _gopy.IncRef(self._h)  # gopy registers handles with count 0; __del__ drops ours
        err = _gopy.pyapi_Schedule_Err(self._h)
        if err:
            raise ValueError(err)
        self.num_replicas = int(num_replicas)
        self.num_batches: int = _gopy.pyapi_Schedule_NumBatches(self._h)

    def batch_lens(self, rank: int) -> np.ndarray:
        """Return the number of pairs in each of rank's batches (int64)."""
        self._check_rank(rank)
        return np.array([_gopy.pyapi_Schedule_BatchLen(self._h, rank, b) for b in range(self.num_batches)], dtype=np.int64)

    def fill(self, epoch: int, rank: int, start: int = 0) -> np.ndarray:
        """Return batches start, ... of rank for epoch as one flat int64 array.

        Each batch of length L contributes its L source indices, then the L
        target indices (un-offset) of the same pairs in the same order.
        """
        self._check_rank(rank)
        if not 0 <= start <= self.num_batches:
            raise ValueError("start = %d: want 0 <= start <= %d batches per epoch" % (start, self.num_batches))
        if not 0 <= epoch < 2**64:
            raise ValueError("epoch = %d: must be in [0, 2**64)" % epoch)
        n = 2 * int(self.batch_lens(rank)[start:].sum())
        out = np.empty(n, dtype=np.int64)
        err = _gopy.pyapi_Schedule_Fill(self._h, int(epoch), int(rank), int(start), _addr(out), n)
        if err:
            raise ValueError(err)
        return out

    def _check_rank(self, rank: int) -> None:
        _same_process()
        if not 0 <= rank < self.num_replicas:
            raise ValueError("rank = %d: want 0 <= rank < num_replicas = %d" % (rank, self.num_replicas))

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", 0), 0
        # In a forked child the handle is the parent's business (and Go may hang).
        if h and _gopy is not None and os is not None and os.getpid() == _PID:
            try:
                _gopy.DecRef(h)
            except Exception:  # interpreter shutdown
                pass
