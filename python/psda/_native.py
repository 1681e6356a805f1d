"""The only module that touches psda's shared library.

One file, ``_psdago*.so``, holds the whole Go side (Go allows one runtime per
process). Python reaches it two ways:

* as the gopy extension module ``psda._psdago`` (package ``pyapi``), for
  the stateful objects: :class:`Core`, a matching computed and then kept in
  Go, and the :class:`Schedule` built from it in Go. gopy's generated
  wrappers release the GIL;
* through :mod:`ctypes` on the *same* file, for the stateless bulk calls of
  the C ABI ``capi/psda.h`` (linear assignment, the comparison samplers'
  searches) and the library's version.

Data crosses once each way: the features go in as addresses of NumPy
buffers, read in place; the pairs come out once, into arrays allocated here,
for :class:`psda.Matching`; each epoch's batches come out of
``Schedule.fill``. The rules (validation, defaults, the solver choice, the
batch counts) live in Go; this module passes arguments through and turns
Go's messages into Python exceptions.

One file of about 500 lines on purpose: everything that knows the library's
symbols, status codes and threading (cancellation, progress, the GIL) is
here, so that no other module depends on how Go is reached.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple

import numpy as np

__all__ = ["version", "match", "validate", "linear_sum_assignment", "num_threads", "Core", "Schedule", "exchange",
           "kmeans", "kdpp_sample"]

# Must equal PSDA_ABI_VERSION in capi/psda.h; checked against the library below.
_ABI_VERSION = 1

# Matrices of at most this many entries are solved by a direct call to
# psda_lsap_f64: a worker thread and a context cost more than the whole solve
# of a small matrix, and such a solve ends soon after a Ctrl-C anyway.
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
    "psda_progress": [_ctx_t, _ptr, _ptr, _ptr],
    "psda_cancel": [_ctx_t],
    "psda_set_solver": [_ctx_t, ctypes.c_char_p],
    "psda_progress_view": [_ctx_t, _ptr],
    "psda_lsap_ctx_f64": [_ctx_t, _ptr, _i64, _i64, _ptr, _i64, _ptr],
    "psda_schedule": [_ctx_t, _i64, ctypes.c_uint64, _i32, _i64],
    "psda_schedule_num_batches": [_ctx_t, _ptr],
    "psda_schedule_batch_len": [_ctx_t, _i64, _i64, _ptr],
    "psda_schedule_fill": [_ctx_t, ctypes.c_uint64, _i64, _i64, _ptr, _i64, _ptr],
    # The comparison samplers' searches (capi/diverse.go, package psda/diverse).
    "psda_exchange_f64": [_ptr, _i64, _i64, _ptr, _ptr, _ptr, _ptr, _i64, _ptr, ctypes.c_double, _i64, _i64,
                          ctypes.c_uint64, _ptr, _i64, _ptr, _ptr, _ptr],
    "psda_kdpp_sample_f64": [_ptr, _i64, _ptr, _i64, _i64, _i64, ctypes.c_uint64, _ptr, _i64, _ptr, _ptr],
    "psda_kmeans_f64": [_ptr, _i64, _i64, _ptr, _ptr, _i64, _i64, _i64, ctypes.c_uint64, _ptr, _i64, _ptr, _ptr,
                        _ptr],
    "psda_num_threads": [_i32, _ptr],
}.items():
    _fn = getattr(_lib, _name)
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
if _abi.value != _ABI_VERSION:
    raise ImportError(
        "psda's library %s has ABI version %d, this module expects %d: reinstall psda (pip install .)"
        % (_gopy.__file__, _abi.value, _ABI_VERSION)
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


def num_threads(n: int = 0) -> int:
    """Set the Go core's thread count to n when n > 0 (the caller checked
    it), and return the count in effect (psda_num_threads)."""
    _same_process()
    out = ctypes.c_int32()
    _check(_lib.psda_num_threads(n, ctypes.byref(out)))
    return out.value


# An invalid PSDA_NUM_THREADS, read when the library loaded, fails here, at
# the first use of the core, with Go's message naming the variable.
num_threads()


def version() -> str:
    """Return the version the library was built as (pyproject's version)."""
    _same_process()
    buf = ctypes.create_string_buffer(64)
    _check(_lib.psda_version(buf, len(buf)))
    return buf.value.decode()


def _addr(a: np.ndarray) -> int:
    return a.ctypes.data


def _shape(msg: str, names: Tuple[str, str] = ("source", "target")) -> str:
    """Go's message as a Python exception's: without the "psda: " prefix, with
    the caller's names for the two feature sets (e.g. source_features)."""
    if msg.startswith("psda: "):
        msg = msg[len("psda: ") :]
    if names != ("source", "target"):
        msg = re.sub(r"\b(source|target)(?=\[| has | contain)", lambda m: names[m.group(1) == "target"], msg)
    return msg


def _new_matching(batch_size: int, stages: int, discrepancy: str, kernel: str, gammas: Optional[Sequence[float]], solver: str) -> int:
    """A new pyapi.Matching handle with these settings (gammas None: the core's
    default mixture), which the caller must release with _gopy.DecRef."""
    g = np.ascontiguousarray(gammas if gammas is not None else [], dtype=np.float64).ravel()
    h = _gopy.pyapi_NewMatching(int(batch_size), int(stages), str(discrepancy), str(kernel), _addr(g) if g.size else 0,
                                int(g.size), gammas is None, str(solver))  # fmt: skip
    _gopy.IncRef(h)  # gopy registers handles with count 0; the caller drops ours
    return h


def validate(
    *, batch_size: int, stages: int, discrepancy: str, kernel: str, gammas: Optional[Sequence[float]], solver: str,
    n_source: int = 0, n_target: int = 0,
) -> None:  # fmt: skip
    """Check the settings of a matching in the Go core (psda.Config.Validate,
    the one home of these rules), for n_source and n_target examples unless
    both are 0; raise ValueError with Go's message. Time O(len(gammas))."""
    _same_process()
    h = _new_matching(batch_size, stages, discrepancy, kernel, gammas, solver)
    try:
        err = _gopy.pyapi_Matching_Validate(h, int(n_source), int(n_target))
    finally:
        _gopy.DecRef(h)
    if err:
        raise ValueError(_shape(err))


def check_schedule(pairs: int, *, batch_size: int, num_replicas: int, drop_last: bool, stages: int, discrepancy: str) -> None:
    """Raise ValueError, with the Go core's message naming the fix, when a
    schedule would give a rank no batch (psda.ScheduleConfig.CheckFor)."""
    _same_process()
    err = _gopy.pyapi_CheckSchedule(int(pairs), int(batch_size), int(num_replicas), bool(drop_last), int(stages), str(discrepancy))
    if err:
        raise ValueError(_shape(err))


def batches_per_rank(pairs: int, batch_size: int, num_replicas: int, drop_last: bool) -> Tuple[int, int]:
    """(batches per epoch over all ranks, batches per rank), as the Go core's
    schedule counts them (psda.BatchesPerRank, the one home of the count)."""
    _same_process()
    args = (int(pairs), int(batch_size), int(num_replicas), bool(drop_last))
    return _gopy.pyapi_EpochBatches(*args), _gopy.pyapi_RankBatches(*args)


def default_gammas() -> Tuple[float, ...]:
    """The core's default RBF mixture, psda.DefaultGammas (the paper's)."""
    _same_process()
    return tuple(_gopy.pyapi_DefaultGamma(i) for i in range(_gopy.pyapi_NumDefaultGammas()))


class _Handle:
    """Owns one reference to a gopy handle and drops it when collected."""

    def __init__(self, h: int) -> None:
        self._h = h

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", 0), 0
        # In a forked child the handle is the parent's business (and Go may hang).
        if h and _gopy is not None and os is not None and os.getpid() == _PID:
            try:
                _gopy.DecRef(h)
            except Exception:  # interpreter shutdown
                pass


class Core(_Handle):
    """A matching held in Go (pyapi.Matching), the one a :class:`Schedule`
    is built from, so that the pairs never go back into Go.

    Made by :func:`match` or, for a matching restored from arrays, by
    :meth:`from_arrays`.
    """

    @classmethod
    def from_arrays(cls, pairs, quads, singles, n_source: int = -1, n_target: int = -1) -> "Core":
        """Copy a stored matching into Go once, checking it there
        (psda.Matching.Check: pairs index n_source and n_target examples,
        each pair in exactly one quadruplet or single; with n_source < 0
        only the latter). ValueError with Go's message."""
        _same_process()
        p = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
        q = np.ascontiguousarray(quads, dtype=np.int64).reshape(-1, 2)
        s = np.ascontiguousarray(singles, dtype=np.int64).ravel()
        h = _gopy.pyapi_MatchingFromArrays(_addr(p), len(p), _addr(q), len(q), _addr(s), len(s), int(n_source), int(n_target))
        _gopy.IncRef(h)
        core = cls(h)
        err = _gopy.pyapi_Matching_Err(h)
        if err:
            raise ValueError(_shape(err))
        return core

    def arrays(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pairs (P, 2), quads (Q, 2), singles (S,)) as new int64 arrays: the
        one copy of the result out of Go."""
        _same_process()
        h = self._h
        pairs = np.empty((_gopy.pyapi_Matching_NumPairs(h), 2), dtype=np.int64)
        quads = np.empty((_gopy.pyapi_Matching_NumQuads(h), 2), dtype=np.int64)
        singles = np.empty(_gopy.pyapi_Matching_NumSingles(h), dtype=np.int64)
        err = _gopy.pyapi_Matching_Copy(h, _addr(pairs), _addr(quads), _addr(singles))
        if err:
            raise RuntimeError(_shape(err))
        return pairs, quads, singles

    def objectives(self) -> Tuple[float, float, float]:
        """(stage1_cost, stage2_cost, stage2_bound)."""
        return tuple(_gopy.pyapi_Matching_Objective(self._h, i) for i in range(3))  # type: ignore[return-value]

    def schedule(self, *, batch_size: int, seed: int, drop_last: bool, num_replicas: int) -> "Schedule":
        """The epoch schedule of this matching, built in Go (Schedule)."""
        return Schedule._of(self, batch_size=batch_size, seed=seed, drop_last=drop_last, num_replicas=num_replicas)


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
    names: Tuple[str, str] = ("source", "target"),
) -> Core:
    """Compute the PSDA matching of two feature matrices in the Go core.

    source and target must be C-contiguous 2-D ndarrays of one dtype, float32
    or float64 (the public API converts); Go reads them in place, with the GIL
    released. gammas None means the core's default mixture. Every setting is
    passed through and checked by the core, whose message (with names for
    the two feature sets) a ValueError carries.

    The Go call runs in a worker thread while the calling thread waits in
    steps of _POLL seconds, so that Ctrl-C is delivered: a KeyboardInterrupt
    (or any exception raised by progress) cancels the Go work, waits the few
    milliseconds it takes to stop, and propagates. progress, when given, is
    called from the calling thread as progress(done, total, phase) with phase
    one of PHASES, whenever the progress changed, and once with done == total
    at the end; it reads memory the core refreshes, without calling into Go.

    Returns the :class:`Core` holding the result in Go.
    """
    _same_process()
    for name, a in (("source", source), ("target", target)):
        if not (isinstance(a, np.ndarray) and a.ndim == 2 and a.flags.c_contiguous):
            raise TypeError("_native.match: %s must be a C-contiguous 2-D ndarray" % name)
    if source.dtype != target.dtype or source.dtype not in (np.float32, np.float64):
        raise TypeError("_native.match: source and target must both be float32 or both float64, got %s and %s" % (source.dtype, target.dtype))
    core = Core(_new_matching(batch_size, stages, discrepancy, kernel, gammas, solver))
    h = core._h
    read = None
    if progress is not None:
        view = (ctypes.c_int64 * 3).from_address(_gopy.pyapi_Matching_ProgressView(h))

        def read() -> Tuple[int, int, str]:
            return view[0], view[1], _phase_name(view[2])

    status = _run(
        lambda: _gopy.pyapi_Matching_Compute(h, _addr(source), source.shape[0], _addr(target), target.shape[0],
                                             source.shape[1], source.dtype == np.float32),
        lambda: _gopy.pyapi_Matching_Cancel(h, False), read, progress,
    )  # fmt: skip
    if status == _STATUS_CANCELLED:
        # Nobody in this process cancels the matching but _run's handler.
        raise KeyboardInterrupt
    if status != _STATUS_OK:
        err = _shape(_gopy.pyapi_Matching_Err(h), names)
        raise ValueError(err) if status == _STATUS_INVALID else RuntimeError(err)
    return core


# pyapi's status codes of Matching.Compute.
_STATUS_OK, _STATUS_INVALID, _STATUS_CANCELLED, _STATUS_INTERNAL = range(4)


def _phase_name(phase: int) -> str:
    """The name in PHASES of a PSDA_PHASE_* value (its number if unknown)."""
    return PHASES[phase] if 0 <= phase < len(PHASES) else str(phase)


# Events that cancel the Go work run by a given thread (cancel_when): how a
# thread other than the waiting one (psda.refresh's wait(), on Ctrl-C) stops it.
_CANCEL_EVENTS: Dict[int, threading.Event] = {}


@contextlib.contextmanager
def cancel_when(event: threading.Event) -> Iterator[None]:
    """Within the block, Go work this thread runs (match, the searches, assignment) is
    cancelled, raising KeyboardInterrupt here, within _POLL seconds of event being set."""
    me = threading.get_ident()
    _CANCEL_EVENTS[me] = event
    try:
        yield
    finally:
        _CANCEL_EVENTS.pop(me, None)


def _run(call: Callable[[], int], cancel: Callable[[], Any], read: Optional[Callable[[], Tuple[int, int, str]]] = None,
         progress: Optional[Callable[[int, int, str], None]] = None) -> int:  # fmt: skip
    """Run call() in a worker thread, the GIL released by the binding; see match.

    Returns its status; on an exception in the waiting thread (Ctrl-C, or
    whatever progress raised) calls cancel(), waits for the worker and
    re-raises.
    """
    out = {}

    def work() -> None:
        out["status"] = call()

    worker = threading.Thread(target=work, name="psda-match", daemon=True)
    stop = _CANCEL_EVENTS.get(threading.get_ident())
    worker.start()
    last = None
    try:
        while worker.is_alive():
            worker.join(_POLL)
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt  # cancel_when's event: handled as Ctrl-C
            if read is not None:
                now = read()
                if now != last and (worker.is_alive() or now[0] == now[1]):
                    progress(*now)
                    last = now
    except BaseException:
        cancel()
        _join(worker)
        raise
    if read is not None:
        # A call that ended before the first poll has reported nothing yet.
        now = read()
        if now != last and now[0] == now[1]:
            progress(*now)
    return out.get("status", -1)


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
    if rows * cols > _LSAP_DIRECT:
        handle = _ctx_t()
        _check(_lib.psda_ctx_new(ctypes.byref(handle)))
        ctx = handle.value
        try:
            status = _run(lambda: _lib.psda_lsap_ctx_f64(ctx, *args), lambda: _lib.psda_cancel(ctx))
            if status == _ERR_CANCELLED:
                # Nobody in this process cancels ctx but _run's handler.
                raise KeyboardInterrupt
            _check(status, ctx)
        finally:
            _lib.psda_ctx_free(ctx)
    else:
        _check(_lib.psda_lsap_f64(*args))
    if not tall:
        return np.arange(nr, dtype=np.int64), col4row, obj.value
    order = np.argsort(col4row)
    return col4row[order], order.astype(np.int64), obj.value


class Schedule(_Handle):
    """The epoch's batches of a matching, cut in Go (pyapi.Schedule) from a
    :class:`Core`.

    Args:
        pairs: (P, 2) int64-convertible source/target index pairs.
        quads: (Q, 2) indices into pairs.
        singles: (S,) indices into pairs.
        batch_size, seed, drop_last, num_replicas: as psda.ScheduleConfig.

    Constructed from arrays it copies them into a Core first; the package
    uses Core.schedule, which sends nothing back into Go. ValueError with
    Go's message on invalid input.
    """

    def __init__(self, pairs, quads, singles, *, batch_size: int, seed: int, drop_last: bool, num_replicas: int):
        core = Core.from_arrays(pairs, quads, singles)
        self._init(core, batch_size=batch_size, seed=seed, drop_last=drop_last, num_replicas=num_replicas)

    @classmethod
    def _of(cls, core: Core, *, batch_size: int, seed: int, drop_last: bool, num_replicas: int) -> "Schedule":
        self = cls.__new__(cls)
        self._init(core, batch_size=batch_size, seed=seed, drop_last=drop_last, num_replicas=num_replicas)
        return self

    def _init(self, core: Core, *, batch_size: int, seed: int, drop_last: bool, num_replicas: int) -> None:
        self._h = 0
        _same_process()
        seed = int(seed)
        if not 0 <= seed < 2**64:
            raise ValueError("seed = %d: must be in [0, 2**64)" % seed)
        h = _gopy.pyapi_Matching_NewSchedule(core._h, int(batch_size), seed, bool(drop_last), int(num_replicas))
        _gopy.IncRef(h)
        self._h = h
        err = _gopy.pyapi_Schedule_Err(h)
        if err:
            raise ValueError(_shape(err))
        self.num_replicas = int(num_replicas)
        self.num_batches: int = _gopy.pyapi_Schedule_NumBatches(h)

    def batch_lens(self, rank: int) -> np.ndarray:
        """Return the number of pairs in each of rank's batches (int64)."""
        self._check_rank(rank)
        out = np.empty(self.num_batches, dtype=np.int64)
        err = _gopy.pyapi_Schedule_BatchLens(self._h, int(rank), _addr(out), len(out))
        if err:
            raise ValueError(_shape(err))
        return out

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
            raise ValueError(_shape(err))
        return out

    def _check_rank(self, rank: int) -> None:
        _same_process()
        if not 0 <= rank < self.num_replicas:
            raise ValueError("rank = %d: want 0 <= rank < num_replicas = %d" % (rank, self.num_replicas))


# -- the comparison samplers' searches (psda/diverse) --------------------------


def _run_counted(call: Callable[[], int], on_count: Optional[Callable[[int], None]], each: bool) -> None:
    """Runs a psda/diverse entry through _run (the one poll/cancel loop).

    call(cancel, done) makes the C call with the addresses of a cancel flag
    (int32) and a counter (int64) the core advances; on_count gets every
    count from 1 to the last (each=True: passes) or the latest at each poll
    (each=False: draws, which come by the thousand). KeyboardInterrupt, or
    what on_count raises, cancels the search.
    """
    cancel, done = np.zeros(1, np.int32), np.zeros(1, np.int64)
    reported = [0]

    def progress(now: int, total: int, phase: str) -> None:
        while on_count is not None and reported[0] < now:
            reported[0] = reported[0] + 1 if each else now
            on_count(reported[0])

    def read() -> Tuple[int, int, str]:
        now = int(done[0])
        return now, now, "search"  # done == total: reported also after the worker ends

    status = _run(lambda: call(_addr(cancel), _addr(done)), lambda: cancel.__setitem__(0, 1),
                  read if on_count is not None else None, progress)
    if status == _ERR_CANCELLED:
        raise KeyboardInterrupt
    _check(status if status != -1 else _ERR_INTERNAL)


def kdpp_sample(lam: np.ndarray, v: np.ndarray, k: int, nb: int, seed: int,
                on_count: Optional[Callable[[int], None]] = None) -> np.ndarray:
    """nb k-DPP draws by the Go core (psda/diverse.SampleKDPP): (nb, k) int64; on_count(draws done) at each poll."""
    _same_process()
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    out = np.empty((nb, k), np.int64)
    _run_counted(lambda c, d: _lib.psda_kdpp_sample_f64(_addr(lam), len(lam), _addr(v), v.shape[0], k, nb,
                                                        int(seed) % (1 << 64), _addr(out), out.size, c, d),
                 on_count, each=False)
    return out


def _search(call: Callable[..., int], passes: int,
            on_pass: Optional[Callable[[int, float], None]]) -> list:
    """Runs a search entry whose last arguments are (history, history_cap, history_len, cancel, done);
    returns the objective at the start and after each pass."""
    hist = np.zeros(passes + 1)
    hlen = np.zeros(1, np.int64)
    cb = None if on_pass is None else (lambda now: on_pass(now, float("nan")))
    _run_counted(lambda c, d: call(_addr(hist), len(hist), _addr(hlen), c, d), cb, each=True)
    return hist[: int(hlen[0])].tolist()


def exchange(X, w, group, cls, centre, omega, *, sign: float, passes: int, partners: Optional[int], seed: int,
             on_pass: Optional[Callable[[int, float], None]] = None) -> Tuple[np.ndarray, list]:
    """The exchange search of psda/diverse.Exchange (see psda.samplers.exchange): (group, history)."""
    _same_process()
    X = np.ascontiguousarray(X, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    group = np.array(group, dtype=np.int64)
    cls = np.ascontiguousarray(cls, dtype=np.int64)
    centre = np.ascontiguousarray(centre, dtype=np.float64)
    omega = np.ascontiguousarray(omega, dtype=np.float64)
    m, d = X.shape
    hist = _search(lambda *tail: _lib.psda_exchange_f64(
        _addr(X), m, d, _addr(w), _addr(group), _addr(cls), _addr(centre), len(omega), _addr(omega), float(sign),
        int(passes), int(partners or 0), int(seed) % (1 << 64), *tail), passes, on_pass)
    return group, hist


def kmeans(X, w, group, k: int, min_size: int, *, passes: int, seed: int,
           on_pass: Optional[Callable[[int, float], None]] = None) -> Tuple[np.ndarray, list]:
    """Weighted k-means with a minimum size, psda/diverse.WeightedKMeans (see psda.samplers.kmeans)."""
    _same_process()
    X = np.ascontiguousarray(X, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    group = np.array(group, dtype=np.int64)
    m, d = X.shape
    hist = _search(lambda *tail: _lib.psda_kmeans_f64(_addr(X), m, d, _addr(w), _addr(group), int(k),
                                                      int(min_size), int(passes), int(seed) % (1 << 64), *tail),
                   passes, on_pass)
    return group, hist
