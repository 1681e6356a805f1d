"""The Go core's exchange search (capi/diverse.go, psda/diverse) through ctypes.

Runs in a worker thread with the GIL released (ctypes releases it), so that
Ctrl-C in the main thread cancels the search (the Go loop polls a flag every
64 visits) and progress can be reported after every pass, as psda.match does.
Falls back to the NumPy searches of psda.samplers.exchange and kmeans when
the compiled core cannot be loaded.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Callable, List, Optional, Tuple

import numpy as np

__all__ = ["available", "exchange", "kdpp_sample", "kmeans"]

_POLL = 0.05


_P, _I64 = ctypes.c_void_p, ctypes.c_int64
_SIGNATURES = {
    "psda_exchange_f64": [_P, _I64, _I64, _P, _P, _P, _P, _I64, _P, ctypes.c_double, _I64, _I64, ctypes.c_uint64,
                          _P, _I64, _P, _P, _P],
    "psda_kdpp_sample_f64": [_P, _I64, _P, _I64, _I64, _I64, ctypes.c_uint64, _P, _I64, _P, _P],
    "psda_kmeans_f64": [_P, _I64, _I64, _P, _P, _I64, _I64, _I64, ctypes.c_uint64, _P, _I64, _P, _P, _P],
}


def _lib(name: str = "psda_exchange_f64"):
    try:
        from .. import _native
    except (ImportError, OSError):
        return None
    fn = getattr(_native._lib, name)
    if fn.argtypes is None:
        fn.argtypes, fn.restype = _SIGNATURES[name], ctypes.c_int
    return _native, fn


def available(name: str = "psda_exchange_f64") -> bool:
    """True when the compiled core has the C entry ``name``."""
    return _lib(name) is not None


def _run(native, call, on_count: Optional[Callable[[int], None]], done: np.ndarray, cancel: np.ndarray,
         each: bool = True) -> None:
    """Runs call() in a worker thread; Ctrl-C sets cancel and re-raises; reports done's changes.

    on_count gets every count from 1 to the last (each=True: passes) or the
    latest count at each poll (each=False: draws, which come by the thousand).
    """
    out = {}

    def work() -> None:
        out["status"] = call()

    worker = threading.Thread(target=work, name="psda-diverse", daemon=True)
    worker.start()
    reported = 0

    def report() -> None:
        # Every count reached since the last poll (a fast search finishes
        # several passes between polls), and the last one after the worker ends.
        nonlocal reported
        now = int(done[0])
        while on_count is not None and reported < now:
            reported = reported + 1 if each else now
            on_count(reported)

    try:
        while worker.is_alive():
            worker.join(_POLL)
            report()
        report()
    except BaseException:
        cancel[0] = 1
        native._join(worker)
        raise
    status = out.get("status", native._ERR_INTERNAL)
    if status == native._ERR_CANCELLED:
        raise KeyboardInterrupt
    native._check(status)


def kdpp_sample(lam: np.ndarray, v: np.ndarray, k: int, nb: int, seed: int,
                on_count: Optional[Callable[[int], None]] = None) -> np.ndarray:
    """nb k-DPP draws by the Go core (psda/diverse.SampleKDPP): (nb, k) int64; on_count(draws done) at each poll."""
    native, fn = _lib("psda_kdpp_sample_f64")
    lam = np.ascontiguousarray(lam, dtype=np.float64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    out = np.empty((nb, k), np.int64)
    cancel, done = np.zeros(1, np.int32), np.zeros(1, np.int64)
    a = native._addr
    _run(native, lambda: fn(a(lam), len(lam), a(v), v.shape[0], k, nb, int(seed) % (1 << 64), a(out), out.size,
                            a(cancel), a(done)), on_count, done, cancel, each=False)
    return out


def exchange(X, w, group, cls, centre, omega, *, sign: float, passes: int, partners: Optional[int],
             seed: int, on_pass: Optional[Callable[[int, float], None]] = None) -> Tuple[np.ndarray, List[float]]:
    """Same contract as psda.samplers.exchange.exchange, run by the Go core."""
    native, fn = _lib()
    X = np.ascontiguousarray(X, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    group = np.array(group, dtype=np.int64)
    cls = np.ascontiguousarray(cls, dtype=np.int64)
    centre = np.ascontiguousarray(centre, dtype=np.float64)
    omega = np.ascontiguousarray(omega, dtype=np.float64)
    m, d = X.shape
    return _search(native, lambda a, tail: fn(a(X), m, d, a(w), a(group), a(cls), a(centre), len(omega), a(omega),
                                              float(sign), int(passes), int(partners or 0), int(seed) % (1 << 64),
                                              *tail), group, passes, on_pass)


def kmeans(X, w, group, k: int, min_size: int, *, passes: int, seed: int,
           on_pass: Optional[Callable[[int, float], None]] = None) -> Tuple[np.ndarray, List[float]]:
    """Same contract as psda.samplers.kmeans.weighted_kmeans, run by the Go core (psda/diverse.WeightedKMeans)."""
    native, fn = _lib("psda_kmeans_f64")
    X = np.ascontiguousarray(X, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    group = np.array(group, dtype=np.int64)
    m, d = X.shape
    return _search(native, lambda a, tail: fn(a(X), m, d, a(w), a(group), int(k), int(min_size), int(passes),
                                              int(seed) % (1 << 64), *tail), group, passes, on_pass)


def _search(native, call, group: np.ndarray, passes: int,
            on_pass: Optional[Callable[[int, float], None]]) -> Tuple[np.ndarray, List[float]]:
    """Runs a search entry whose last arguments are (history, history_cap, history_len, cancel, done).

    call(addr, tail) makes the C call with tail as those arguments; returns
    (group, the objective after each pass).
    """
    hist = np.zeros(passes + 1)
    hlen = np.zeros(1, np.int64)
    cancel = np.zeros(1, np.int32)
    done = np.zeros(1, np.int64)
    a = native._addr
    cb = None if on_pass is None else (lambda now: on_pass(now, float("nan")))
    _run(native, lambda: call(a, (a(hist), len(hist), a(hlen), a(cancel), a(done))), cb, done, cancel)
    return group, hist[: int(hlen[0])].tolist()
