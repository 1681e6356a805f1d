"""The Go core's exchange search (capi/diverse.go, psda/diverse) through ctypes.

Runs in a worker thread with the GIL released (ctypes releases it), so that
Ctrl-C in the main thread cancels the search (the Go loop polls a flag every
64 visits) and progress can be reported after every pass, as psda.match does.
Falls back to the NumPy search of psda.samplers.exchange when the compiled
core is missing or predates psda_exchange_f64.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Callable, List, Optional, Tuple

import numpy as np

__all__ = ["available", "exchange"]

_POLL = 0.05


def _lib():
    try:
        from .. import _native
    except (ImportError, OSError):
        return None
    fn = getattr(_native._lib, "psda_exchange_f64", None)
    if fn is None:
        return None
    if fn.argtypes is None:
        p, i64 = ctypes.c_void_p, ctypes.c_int64
        fn.argtypes = [p, i64, i64, p, p, p, p, i64, p, ctypes.c_double, i64, i64, ctypes.c_uint64, p, i64, p, p, p]
        fn.restype = ctypes.c_int
    return _native, fn


def available() -> bool:
    """True when the compiled core has the exchange search."""
    return _lib() is not None


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
    hist = np.zeros(passes + 1)
    hlen = np.zeros(1, np.int64)
    cancel = np.zeros(1, np.int32)
    done = np.zeros(1, np.int64)
    a = native._addr
    out = {}

    def work() -> None:
        out["status"] = fn(a(X), m, d, a(w), a(group), a(cls), a(centre), len(omega), a(omega), float(sign),
                           int(passes), int(partners or 0), int(seed) % (1 << 64), a(hist), len(hist), a(hlen),
                           a(cancel), a(done))

    worker = threading.Thread(target=work, name="psda-exchange", daemon=True)
    worker.start()
    reported = 0
    try:
        while worker.is_alive():
            worker.join(_POLL)
            if on_pass is not None:
                now = int(done[0])
                for p in range(reported + 1, now + 1):
                    on_pass(p, float("nan"))
                reported = now
    except BaseException:
        cancel[0] = 1
        native._join(worker)
        raise
    status = out.get("status", native._ERR_INTERNAL)
    if status == native._ERR_CANCELLED:
        raise KeyboardInterrupt
    native._check(status)
    return group, hist[: int(hlen[0])].tolist()
