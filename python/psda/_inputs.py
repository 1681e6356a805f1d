"""The conversion and checks of psda.match's and the samplers' inputs.

Features become C-contiguous float32 or float64 arrays the core reads in
place (torch tensors and lists included), after the checks Python must make
itself: types, finiteness and a scale the costs can square. The settings'
rules live in the Go core (psda/config.go); the checks here only turn
Python values into what it reads and raise its messages.
"""

from __future__ import annotations

import logging
import math
import numbers
import operator
from typing import Any, Sequence, Tuple

import numpy as np

logger = logging.getLogger("psda")

#: The paper's RBF mixture: the Go core's DefaultGammas (psda/config.go, the
#: home of the default; docs/method.md). Python needs it when a signature is
#: defined, before the core is loaded, so this is its one Python copy, which
#: tests/test_match.py checks against the core's; the rest of the package
#: imports it from psda._matching.
DEFAULT_GAMMAS: Tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0)

# Rows checked for NaN/Inf at a time, so that the check of a large array does
# not allocate a boolean array as large as the input.
_FINITE_CHUNK_ELEMENTS = 1 << 22




def _is_torch_tensor(x: Any) -> bool:
    # Duck-typed so that psda never imports torch to look at an input.
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach") and hasattr(x, "numpy")


def _torch_to_numpy(x: Any, name: str) -> np.ndarray:
    import torch  # present: x is a tensor

    t = x.detach()
    # Layouts and kinds .numpy() cannot read: say which argument and how to fix it,
    # rather than let torch's own message (which names neither) through.
    if getattr(t, "is_meta", False) or t.device.type == "meta":
        raise TypeError(f"{name} is a meta torch tensor: it has a shape but no values; pass a tensor with data")
    if getattr(t, "is_nested", False):
        raise TypeError(f"{name} is a nested torch tensor: features need one row per example of one length; "
                        f"pad or stack them into a 2-D tensor (e.g. {name}.to_padded_tensor(0.0))")
    if t.layout != torch.strided:
        raise TypeError(f"{name} is a torch tensor with layout {t.layout}: pass a dense tensor ({name}.to_dense())")
    if t.is_quantized:
        raise TypeError(f"{name} is a quantized torch tensor ({t.dtype}): pass {name}.dequantize()")
    if t.is_complex():
        raise TypeError(f"{name} is a complex torch tensor ({t.dtype}): features must be real; pass {name}.real or {name}.abs()")
    if t.dtype == torch.bool:
        raise TypeError(f"{name} is a bool torch tensor: features must be numbers; convert with {name}.float() if intended")
    if t.device.type != "cpu":
        logger.debug("copying %s from %s to the CPU", name, t.device)
        t = t.cpu()
    if t.dtype in (torch.float16, torch.bfloat16):
        # NumPy has no bfloat16; both halves convert exactly to float32.
        t = t.float()
    return t.resolve_conj().resolve_neg().numpy()


def _check_dtype(a: np.ndarray, name: str) -> None:
    """Raises TypeError naming name unless a holds real numbers (bool and complex refused): the one dtype
    rule of every psda entry that takes features (match, the samplers, distributed.broadcast_features)."""
    kind = a.dtype.kind
    if kind == "b":
        raise TypeError(f"{name} has dtype bool: features must be numbers; convert with {name}.astype(np.float32) if intended")
    if kind == "c":
        raise TypeError(f"{name} has dtype {a.dtype}: features must be real; pass np.real({name}) or np.abs({name})")
    if kind not in "fiu":
        raise TypeError(
            f"{name} has dtype {a.dtype}: features must be a real numeric array (float32 or float64 preferred)"
        )


def _as_features(x: Any, name: str, check_finite: bool = True) -> np.ndarray:
    """Returns x as a C-contiguous float32 or float64 2-D array with finite values.

    A C-contiguous float32/float64 NumPy array (or CPU torch tensor) in native
    byte order is returned without copying; anything else is converted once:
    float16 -> float32, integers and wider floats -> float64. Raises TypeError
    for non-numeric, bool and complex input, ValueError for the wrong shape or,
    with check_finite, non-finite values (the PSDA matching leaves that check
    to the Go core, which makes it as it reads the features). Time O(n·d).
    """
    if _is_torch_tensor(x):
        a = _torch_to_numpy(x, name)
    else:
        try:
            a = np.asarray(x)
        except (ValueError, TypeError) as e:
            raise TypeError(
                f"{name} could not be read as an array ({type(x).__name__}: {e}): pass a 2-D NumPy array or CPU torch tensor"
            ) from None
    _check_dtype(a, name)
    if a.ndim != 2:
        hint = f"use {name}.reshape(-1, 1) for one feature per example" if a.ndim == 1 else "flatten the features of each example into one row"
        raise ValueError(f"{name} has shape {tuple(a.shape)}: need a 2-D array (n_examples, n_features); {hint}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name} has shape {tuple(a.shape)}: need at least one example (row) and one feature (column)")

    if a.dtype == np.float16:
        target = np.dtype(np.float32)
    elif a.dtype in (np.float32, np.float64):
        target = a.dtype.newbyteorder("=")
    else:  # integers and long double
        target = np.dtype(np.float64)
    if a.dtype != target or not a.flags.c_contiguous:
        logger.debug("converting %s from %s%s to C-contiguous %s", name, a.dtype,
                     "" if a.flags.c_contiguous else " (non-contiguous)", target)
        a = np.ascontiguousarray(a, dtype=target)
    if check_finite:
        _check_finite(a, name)
    return a


def _check_finite(a: np.ndarray, name: str) -> None:
    rows = max(1, _FINITE_CHUNK_ELEMENTS // a.shape[1])
    for lo in range(0, a.shape[0], rows):
        ok = np.isfinite(a[lo : lo + rows])
        if not ok.all():
            i, j = np.argwhere(~ok)[0]
            bad_rows = sum(int((~np.isfinite(a[l : l + rows])).any(axis=1).sum()) for l in range(lo, a.shape[0], rows))
            raise ValueError(
                f"{name}[{lo + i}, {j}] = {a[lo + i, j]}: features must be finite, but {bad_rows} row(s) of {name} "
                f"contain NaN or Inf, the first is row {lo + i}; remove or impute them (e.g. np.nan_to_num)"
            )


# The largest squared norm the costs may meet: the costs sum and multiply a
# few such terms, so leave float64 headroom (its maximum is about 1.8e308).
_MAX_SQNORM = 1e300


def _check_scale(s: np.ndarray, t: np.ndarray, names: Tuple[str, str], discrepancy: str) -> None:
    """Refuses finite features so large that the costs overflow float64.

    The MMD costs hold squared norms and distances, about d·(2·max|x|)²; CORAL's
    hold their squares. Past float64's range the core would only report an
    infinite cost, naming neither the input nor the fix. Time O(n·d), no copy.
    """
    amax = [max(float(a.max()), -float(a.min())) for a in (s, t)]
    which = 0 if amax[0] >= amax[1] else 1
    if amax[which] == 0 or not math.isfinite(amax[which]):
        return  # NaN and Inf are the core's to report
    # In logarithms: the square itself may overflow a Python float.
    log_sq = math.log10(s.shape[1]) + 2 * math.log10(2.0 * amax[which])
    log_bound = math.log10(_MAX_SQNORM) / (2 if discrepancy == "coral" else 1)
    if log_sq > log_bound:
        power = "fourth powers" if discrepancy == "coral" else "squares"
        raise ValueError(
            f"{names[which]} has entries up to {amax[which]:.3g} in absolute value: the {discrepancy.upper()} costs "
            f"hold {power} of norms of such vectors, which overflow float64; rescale both feature sets by the same "
            f"factor (e.g. divide by {amax[which]:.3g}, or standardise them); the matching does not change under a "
            "common scale for the linear MMD and CORAL"
        )


# Features below this magnitude are scaled up for the linear MMD and CORAL (_tiny_exponent).
_TINY = 2.0**-100


def _tiny_exponent(s: np.ndarray, t: np.ndarray, discrepancy: str, kernel: str) -> int:
    """Returns p such that 2**p brings the largest |feature| into [0.5, 1) when the linear MMD's or
    CORAL's costs could fall out of float64's normal range, else 0.

    Those costs are squares (CORAL: fourth powers) of feature differences, which can be 2**-52 of the
    features: below 2**-100 they may reach the subnormal range, where rounding is absolute, and the
    matching came out arbitrary or failed its certificate on a rounding of 5e-324. Scaling both sets
    by a power of two is exact, leaves the optimum unchanged and scales the costs by 2**(2p) (CORAL:
    2**(4p)). The RBF kernel's costs are kernel values, near 1 at any scale: p = 0. Time O(n·d).
    """
    if discrepancy == "mmd" and kernel == "rbf":
        return 0
    amax = max(max(float(a.max()), -float(a.min())) for a in (s, t))
    if not 0 < amax < _TINY:  # all zero: every cost is exactly 0; NaN: the core's to report
        return 0
    return -math.frexp(amax)[1]


def _as_pair(source: Any, target: Any, names: Tuple[str, str], check_finite: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """Converts both feature sets and makes their dtypes equal (float64 if they differ)."""
    s = _as_features(source, names[0], check_finite)
    t = _as_features(target, names[1], check_finite)
    if s.shape[1] != t.shape[1]:
        raise ValueError(
            f"{names[0]} has {s.shape[1]} features per example but {names[1]} has {t.shape[1]}: "
            "both must come from the same feature extractor"
        )
    if s.dtype != t.dtype:
        logger.debug("%s is %s and %s is %s: converting both to float64", names[0], s.dtype, names[1], t.dtype)
        s = np.ascontiguousarray(s, dtype=np.float64)
        t = np.ascontiguousarray(t, dtype=np.float64)
    return s, t


def _check_int(value: Any, name: str, example: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} = {value!r} ({type(value).__name__}): must be an int, e.g. {name}={example}")
    return operator.index(value)


def _check_int64(value: int, name: str) -> None:
    """Raises ValueError unless value fits the 64-bit integers the core (and
    the fingerprint) hold; the core's rules then say the rest."""
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"{name} = {value}: out of range, the core reads 64-bit integers (|{name}| < 2**63)")


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} = {value!r} ({type(value).__name__}): must be True or False")
    return bool(value)


def _check_config(
    batch_size: Any, stages: Any, discrepancy: Any, kernel: Any, gammas: Any, solver: Any = "auto"
) -> Tuple[int, int, str, str, Tuple[float, ...], str]:
    """Converts the settings of a matching to the types the core reads and has
    the core check their values (psda.Config.Validate, the one home of those
    rules), before any feature is converted. Raises TypeError for a setting
    of the wrong type, ValueError with the core's message."""
    from . import _native

    batch_size = _check_int(batch_size, "batch_size", "32")
    stages = _check_int(stages, "stages", "2")
    _check_int64(batch_size, "batch_size")
    _check_int64(stages, "stages")
    for name, value in (("discrepancy", discrepancy), ("kernel", kernel), ("solver", solver)):
        if not isinstance(value, str):
            raise ValueError(f"{name} = {value!r} ({type(value).__name__}): want a name, e.g. {name}={ {'discrepancy': 'mmd', 'kernel': 'rbf', 'solver': 'auto'}[name]!r}")
    discrepancy, kernel, solver = discrepancy.lower(), kernel.lower(), solver.lower()
    if discrepancy == "coral" and kernel == "linear":
        # A rule of this API, not of the core: the default kernel ("rbf")
        # cannot be told from an explicit one; "linear" can, and says the
        # caller expects a kernel to act.
        raise ValueError(
            "kernel = 'linear' with discrepancy = 'coral': CORAL compares covariance matrices and uses no "
            "kernel, so kernel would be ignored; leave kernel at its default for CORAL, or use "
            "discrepancy='mmd' for the linear-kernel MMD"
        )
    if gammas is None:  # as the core reads a nil mixture: the paper's
        gammas = DEFAULT_GAMMAS
    if isinstance(gammas, (str, bytes)) or not isinstance(gammas, (Sequence, np.ndarray)):
        raise TypeError(f"gammas = {gammas!r}: want a sequence of floats > 0, e.g. gammas=(0.1, 1.0)")
    try:
        gammas = tuple(float(g) for g in gammas)
    except (TypeError, ValueError):
        raise TypeError(f"gammas = {gammas!r}: want a sequence of floats > 0, e.g. gammas=(0.1, 1.0)") from None
    # The mixture only matters for the MMD with the RBF kernel; otherwise the
    # core gets its default (and never an empty mixture, which it rejects).
    rbf = discrepancy == "mmd" and kernel == "rbf"
    _native.validate(batch_size=batch_size, stages=stages, discrepancy=discrepancy, kernel=kernel,
                     gammas=gammas if rbf else None, solver=solver)  # fmt: skip
    return batch_size, stages, discrepancy, kernel, gammas, solver


def _check_batch_fits(cfg: Tuple[int, int, str, str, Tuple[float, ...], str], n_source: int, n_target: int) -> None:
    """Has the core check that the batch fits max(n_source, n_target) pairs."""
    from . import _native

    batch_size, stages, discrepancy, kernel, gammas, solver = cfg
    rbf = discrepancy == "mmd" and kernel == "rbf"
    _native.validate(batch_size=batch_size, stages=stages, discrepancy=discrepancy, kernel=kernel,
                     gammas=gammas if rbf else None, solver=solver, n_source=n_source, n_target=n_target)  # fmt: skip
