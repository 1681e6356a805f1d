"""Progress reports and cancellation of long matchings (issue 6).

psda.match runs the Go core in a worker thread and polls it, so that a
progress callback sees non-decreasing values ending at completion, and a
KeyboardInterrupt (Ctrl-C) or a psda_cancel from another thread stops the Go
work within milliseconds, leaving nothing running and the library usable.
"""

from __future__ import annotations

import _thread
import ctypes
import threading
import time

import numpy as np
import pytest

import psda
from psda import _native


def features(n: int, d: int, seed: int, shift: float = 0.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(shift, 1.0, size=(n, d)).astype(np.float32)


# Large enough to take a few seconds on the 2-core test machine.
BIG = dict(source=features(3000, 32, 1), target=features(2800, 32, 2, 0.3))


def no_worker_left() -> bool:
    return not any(t.name == "psda-match" and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize(
    "ns, nt, stages, discrepancy, kernel",
    [
        pytest.param(400, 150, 2, "mmd", "rbf", id="rbf-imbalanced-2stages"),
        pytest.param(300, 300, 1, "mmd", "linear", id="linear-balanced-1stage"),
        pytest.param(120, 350, 2, "coral", "rbf", id="coral-tall-target"),
    ],
)
def test_progress_monotone_and_complete(ns, nt, stages, discrepancy, kernel):
    seen = []
    m = psda.match(
        features(ns, 8, 3), features(nt, 8, 4, 0.5), batch_size=4, stages=stages,
        discrepancy=discrepancy, kernel=kernel, progress=lambda *a: seen.append(a),
    )  # fmt: skip
    plain = psda.match(features(ns, 8, 3), features(nt, 8, 4, 0.5), batch_size=4, stages=stages,
                       discrepancy=discrepancy, kernel=kernel, progress=False)  # fmt: skip
    np.testing.assert_array_equal(m.pairs, plain.pairs)
    np.testing.assert_array_equal(m.quads, plain.quads)
    assert seen, "the callback was never called"
    done = [d for d, _, _ in seen]
    assert all(b >= a for a, b in zip(done, done[1:])), done
    assert all(0 <= d <= t for d, t, _ in seen)
    assert seen[-1][0] == seen[-1][1] and seen[-1][2] == "done"
    assert {p for _, _, p in seen} <= set(_native.PHASES)


def test_progress_of_a_long_match_passes_through_the_phases():
    seen = []
    psda.match(BIG["source"][:1500], BIG["target"][:1200], batch_size=8, progress=lambda *a: seen.append(a))
    phases = [p for _, _, p in seen]
    # Phases appear in order (each possibly skipped when too short to see).
    order = [_native.PHASES.index(p) for p in phases]
    assert order == sorted(order), phases
    assert len(seen) >= 3 and phases[-1] == "done"


def test_progress_argument(capsys):
    s, t = features(60, 4, 5), features(50, 4, 6)
    psda.match(s, t, batch_size=4, progress=False)
    psda.match(s, t, batch_size=4)  # None: a short matching draws nothing
    assert capsys.readouterr().err == ""
    psda.match(s, t, batch_size=4, progress=True)
    err = capsys.readouterr().err
    assert "psda.match" in err and "100/100" in err
    with pytest.raises(TypeError, match="progress = 'yes'"):
        psda.match(s, t, batch_size=4, progress="yes")


def test_exception_in_callback_cancels():
    class Stop(Exception):
        pass

    calls = []

    def cb(done, total, phase):
        calls.append(phase)
        raise Stop

    t0 = time.perf_counter()
    with pytest.raises(Stop):
        psda.match(BIG["source"], BIG["target"], batch_size=8, progress=cb)
    assert time.perf_counter() - t0 < 2.0
    assert len(calls) == 1 and no_worker_left()


def test_keyboard_interrupt_stops_the_match_quickly():
    timer = threading.Timer(0.3, _thread.interrupt_main)
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            psda.match(BIG["source"], BIG["target"], batch_size=8, progress=False)
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.3 + 1.5, "KeyboardInterrupt took %.2f s to stop the match" % (elapsed - 0.3)
    assert no_worker_left()
    # The library is usable afterwards and gives the same result as before.
    s, t = features(80, 4, 7), features(70, 4, 8)
    a = psda.match(s, t, batch_size=4)
    b = psda.match(s, t, batch_size=4)
    np.testing.assert_array_equal(a.pairs, b.pairs)


def c_progress(ctx):
    """(done, total, phase) of a C ABI context through psda_progress."""
    v = np.zeros(2, dtype=np.int64)
    phase = ctypes.c_int32()
    _native._check(_native._lib.psda_progress(ctx, v.ctypes.data, v[1:].ctypes.data, ctypes.byref(phase)))
    return int(v[0]), int(v[1]), _native._phase_name(phase.value)


def c_progress_view(ctx):
    """(done, total, phase) of a C ABI context read from psda_progress_view's memory."""
    addr = ctypes.c_void_p()
    _native._check(_native._lib.psda_progress_view(ctx, ctypes.byref(addr)))
    view = (ctypes.c_int64 * 3).from_address(addr.value)
    return view[0], view[1], _native._phase_name(view[2])


def test_cancel_from_another_thread_through_the_c_abi():
    lib = _native._lib
    s, t = BIG["source"], BIG["target"]
    handle = _native._ctx_t()
    _native._check(lib.psda_ctx_new(ctypes.byref(handle)))
    ctx = handle.value
    try:
        _native._check(lib.psda_set_batch_size(ctx, 8), ctx)
        timer = threading.Timer(0.3, lambda: lib.psda_cancel(ctx))
        timer.start()
        t0 = time.perf_counter()
        status = lib.psda_compute_f32(ctx, s.ctypes.data, len(s), t.ctypes.data, len(t), s.shape[1])
        elapsed = time.perf_counter() - t0
        timer.join()
        if status == _native._OK:
            pytest.skip("the matching finished in %.2f s, before the cancel" % elapsed)
        assert status == _native._ERR_CANCELLED
        assert "cancel" in _native._message(ctx)
        assert elapsed < 0.3 + 1.5
        done, total, phase = c_progress(ctx)
        assert 0 < done < total and phase == "done"
        # The view (psda_progress_view) holds what psda_progress reports.
        assert c_progress_view(ctx) == (done, total, phase)
        # The context stays usable.
        small_s, small_t = features(40, 32, 9), features(30, 32, 10)
        _native._check(lib.psda_compute_f32(ctx, small_s.ctypes.data, 40, small_t.ctypes.data, 30, 32), ctx)
        sizes = np.zeros(3, dtype=np.int64)
        _native._check(lib.psda_result_sizes(ctx, sizes.ctypes.data, sizes[1:].ctypes.data, sizes[2:].ctypes.data), ctx)
        assert sizes[0] == 40
        assert c_progress(ctx)[0] == total
        assert c_progress_view(ctx) == c_progress(ctx)
    finally:
        lib.psda_ctx_free(ctx)
