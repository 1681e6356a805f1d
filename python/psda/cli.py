"""The ``psda`` command: ``psda variance`` (the paper's estimator-variance experiment)
and ``psda bench`` (speed against NumPy + SciPy; source checkout only).

``psda variance`` estimates E||D_hat - D||^2 by Monte Carlo for several batch
samplers and batch sizes k, each discrepancy in its own norm (see
``psda.variance``), and prints a table of method x k with the ratio to uniform
sampling. Its defaults are the paper's setup (section "Estimator variance"):
2-D standard normal source and target, n_s = n_t = 4000, MMD with the linear
kernel, k in {2, 4, ..., 128}.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._progress import Progress
from .samplers.registry import REGISTRY, SAMPLERS as SAMPLER_METHODS
from .samplers.imbalance import IMBALANCE
from .variance import DEFAULT_GAMMAS, DiscrepancyError, ErrorEstimate, expected_error, pooled_bias2

__all__ = ["main", "make_data"]

# psda.SAMPLERS, then the NumPy + SciPy reference PSDA (source checkout only).
METHODS = SAMPLER_METHODS + ("ref-paired", "ref-double-paired")
DEFAULT_METHODS = ("uniform", "kmeans++", "vardass", "ordered", "paired", "double-paired")
DEFAULT_KS = (2, 4, 8, 16, 32, 64, 128)
MIN_BATCHES = 2000   # relative standard error about 2-3% for every method (measured)
MIN_EPOCHS = 5       # so that the standard error can come from the spread of epoch means
# A k-DPP batch costs O(n k^2) in Python (every other method's batches are
# nearly free once set up): fewer batches, a larger relative standard error.
MIN_BATCHES_DPP = 200

_DESCRIPTIONS = {**{name: e.description for name, e in REGISTRY.items()},
                 "ref-paired": "Paired from the NumPy+SciPy reference (benchmarks/scipy_psda.py)",
                 "ref-double-paired": "Double-paired from the NumPy+SciPy reference"}


def make_data(kind: str, n_source: int, n_target: int, dim: int,
              seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """make_data returns (source, target) float64 feature arrays for ``psda variance``.

    ``gaussian``: both domains standard normal in R^dim (the paper's setup).
    ``mixture``: two shifted Gaussian mixtures: components N(-1.5 e_1, I) and
    N(+1.5 e_1, I) with weights 1/2, 1/2 in the source and 0.3, 0.7 in the
    target, whose points are also shifted by 0.5 along (1, ..., 1)/sqrt(dim).
    """
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        return rng.standard_normal((n_source, dim)), rng.standard_normal((n_target, dim))
    if kind != "mixture":
        raise ValueError(f"data = {kind!r}: want 'gaussian' or 'mixture'")
    centre = np.zeros(dim)
    centre[0] = 1.5

    def mixture(n, w_plus):
        sign = np.where(rng.random(n) < w_plus, 1.0, -1.0)
        return rng.standard_normal((n, dim)) + sign[:, None] * centre

    shift = 0.5 * np.ones(dim) / math.sqrt(dim)
    return mixture(n_source, 0.5), mixture(n_target, 0.7) + shift


def _int_list(text: str) -> List[int]:
    try:
        vals = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want integers such as 2,4,8") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: want one or more integers >= 1")
    return vals


def _float_list(text: str) -> List[float]:
    try:
        vals = [float(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want numbers such as 0.1,1,10") from None
    if not vals or not all(math.isfinite(v) and v > 0 for v in vals):
        raise argparse.ArgumentTypeError(f"{text!r}: want one or more finite numbers > 0")
    return vals


def _seed(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want an integer") from None
    if not 0 <= v < 1 << 63:
        raise argparse.ArgumentTypeError(f"{text}: want an integer with 0 <= seed < 2**63")
    return v


def _method_list(text: str) -> List[str]:
    if text.strip() == "all":
        return list(SAMPLER_METHODS)
    vals = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in vals if v not in METHODS]
    if bad or not vals:
        raise argparse.ArgumentTypeError(
            f"{text!r}: unknown method(s) {bad}; choose from {', '.join(METHODS)}")
    return vals


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text}: want an integer >= 1")
    return v


def _checkout_dir() -> Optional[Path]:
    """The source checkout this package runs from, or None when installed."""
    root = Path(__file__).resolve().parents[2]
    if (root / "benchmarks").is_dir() and (root / "go.mod").is_file():
        return root
    return None


def _load_benchmark_module(name: str):
    root = _checkout_dir()
    if root is None:
        return None
    path = root / "benchmarks" / f"{name}.py"
    if not path.is_file():
        return None
    bdir = str(path.parent)
    if bdir not in sys.path:
        sys.path.insert(0, bdir)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


def _variance_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "variance", help="reproduce the paper's estimator-variance experiment",
        description="Monte Carlo estimate of E||D_hat - D||^2 per sampler and batch size k "
                    "(paper, section 'Estimator variance'). Defaults reproduce the paper.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n-source", type=_positive, default=4000, help="source rows n_s")
    p.add_argument("--n-target", type=_positive, default=4000, help="target rows n_t")
    p.add_argument("--dim", type=_positive, default=2, help="feature dimension d")
    # String defaults, parsed by their type as a user's would be: --help then shows them as typed.
    p.add_argument("--k", type=_int_list, default=",".join(map(str, DEFAULT_KS)),
                   help="per-domain batch sizes, comma separated")
    p.add_argument("--epochs", type=_positive, default=None,
                   help=f"epochs per (method, k); default: enough for >= {MIN_BATCHES} batches "
                        f"and at least {MIN_EPOCHS} epochs")
    p.add_argument("--seed", type=_seed, default=0, help="seed for the data and every sampler")
    p.add_argument("--discrepancy", choices=("mmd", "coral"), default="mmd",
                   help="the discrepancy whose minibatch estimate is measured")
    p.add_argument("--kernel", choices=("linear", "rbf"), default="linear",
                   help="MMD kernel (ignored for CORAL)")
    p.add_argument("--gammas", type=_float_list, default=",".join(map(repr, DEFAULT_GAMMAS)),
                   help="RBF mixture bandwidths")
    p.add_argument("--solver", choices=("auto", "dense", "sparse"), default="auto",
                   help="how psda computes the paired and double-paired matchings (both exact); "
                        "auto picks per stage, as docs/design.md ('Solver choice') says")
    p.add_argument("--data", choices=("gaussian", "mixture"), default="gaussian",
                   help="gaussian: N(0, I) in both domains; mixture: two shifted "
                        "Gaussian mixtures")
    p.add_argument("--methods", type=_method_list, default=",".join(DEFAULT_METHODS),
                   help="'all' (every sampler of psda.SAMPLERS) or comma separated, from: " + ", ".join(METHODS))
    p.add_argument("--imbalance", nargs="+", choices=IMBALANCE, default=["cost"],
                   help="for paired and double-paired with n_source != n_target: who chooses the smaller "
                        "domain's extra uses, one row per value: 'cost' (the paper's, biased), 'random' or "
                        "'systematic' (drawn anew per plan, unbiased over plans); see --plans")
    p.add_argument("--plans", type=_positive, default=1,
                   help="independent runs per cell, each of the cell's epochs divided by it: a new draw of "
                        "the extra uses for 'random'/'systematic', new epochs of the same plan otherwise. With "
                        ">= 2 the tables split the error into bias^2 (its Monte Carlo noise removed) and "
                        "variance")
    p.add_argument("--plot", metavar="PATH", default=None,
                   help="write a PNG of error vs k (needs matplotlib)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _epochs_for(args, k: int, method: str = "") -> int:
    if args.epochs is not None:
        return args.epochs
    per_epoch = max(args.n_source, args.n_target) // k
    want = MIN_BATCHES_DPP if method == "dpp" else MIN_BATCHES
    return max(MIN_EPOCHS, -(-want // max(per_epoch, 1)))


def _na_reason(method: str, k: int, args) -> Optional[str]:
    if k > max(args.n_source, args.n_target):
        return "k > max(n_s, n_t)"
    if method in ("kmeans++", "dpp", "anticlustering", "vardass", "ordered") and k > min(args.n_source, args.n_target):
        return "k > min(n_s, n_t)"
    if (method.endswith("double-paired") or method == "random-pairs") and k % 2:
        return "odd k"
    if args.discrepancy == "coral" and k < 2:
        return "CORAL needs k >= 2"
    return None


def _kernel_kwargs(args) -> dict:
    """The kernel argument for psda's matchings: MMD only (CORAL takes none)."""
    return {"kernel": args.kernel} if args.discrepancy == "mmd" else {}


def check_variance_args(parser: argparse.ArgumentParser, args) -> None:
    """Refuses, before any work, what would fail or mean nothing at the end of a run.

    parser.error exits with status 2 and a usage line, without a traceback.
    """
    p = max(args.n_source, args.n_target)
    too_big = [k for k in args.k if k > p]
    if too_big:
        parser.error(f"--k {','.join(map(str, too_big))}: a batch size k must be at most max(n_source, n_target) "
                     f"= {p} (there are only {p} pairs); use smaller --k or larger --n-source/--n-target")
    if args.plot:
        try:
            has_matplotlib = importlib.util.find_spec("matplotlib") is not None
        except (ImportError, ValueError):  # a broken or blocked install
            has_matplotlib = False
        if not has_matplotlib:
            parser.error(f"--plot {args.plot}: needs matplotlib, which is not installed; install it with "
                         "'pip install \"psda[plot]\"' or 'pip install matplotlib', or drop --plot "
                         "(checked now so that the run is not lost at the end)")
        out = Path(args.plot).expanduser()
        parent = out.resolve().parent
        if out.is_dir():
            parser.error(f"--plot {args.plot}: is a directory; give a file name such as {out / 'variance.png'}")
        if not parent.is_dir():
            parser.error(f"--plot {args.plot}: the directory {parent} does not exist; create it first "
                         "(checked now so that the run is not lost at the end)")
        if not os.access(parent, os.W_OK):
            parser.error(f"--plot {args.plot}: the directory {parent} is not writable")


class _Reference:
    """Caches reference matchings: for MMD the matching does not depend on k
    (every cost scales by 1/k^2), so one solve serves every batch size."""

    def __init__(self, args, s, t):
        self.mod = _load_benchmark_module("scipy_psda")
        if self.mod is None:
            raise SystemExit("psda variance: the ref-* methods need a source checkout "
                             "(benchmarks/scipy_psda.py) and SciPy")
        self.args, self.s, self.t = args, s, t
        self.cache: Dict[Optional[int], object] = {}

    def matching(self, k: int):
        key = k if self.args.discrepancy == "coral" else None
        if key not in self.cache:
            a = self.args
            self.cache[key] = self.mod.match(self.s, self.t, batch_size=k, stages=2,
                                             discrepancy=a.discrepancy, gammas=a.gammas,
                                             **_kernel_kwargs(a))
        return self.cache[key]


def _rows(args) -> List[str]:
    """The table's rows: each method, paired and double-paired once per --imbalance value ("double-paired/random")."""
    rows = []
    for m in args.methods:
        if m in ("paired", "double-paired") and args.imbalance != ["cost"]:
            rows += [m if v == "cost" else f"{m}/{v}" for v in args.imbalance]
        else:
            rows.append(m)
    return rows


def _sampler(row: str, k: int, args, s, t, ref_holder: dict):
    n_s, n_t = len(s), len(t)
    method, _, imbalance = row.partition("/")
    if method in SAMPLER_METHODS:
        from .samplers import batch_sampler

        opts: dict = {"seed": args.seed, "num_replicas": 1, "rank": 0}
        if method in ("paired", "double-paired"):
            opts.update(discrepancy=args.discrepancy, gammas=tuple(args.gammas), solver=args.solver,
                        imbalance=imbalance or "cost", **_kernel_kwargs(args))
        elif method == "random-pairs":
            opts.update(discrepancy=args.discrepancy, gammas=tuple(args.gammas), **_kernel_kwargs(args))
        elif method in ("anticlustering", "vardass", "ordered"):
            opts.update(discrepancy=args.discrepancy, gammas=tuple(args.gammas), **_kernel_kwargs(args))
        elif method == "dpp":
            opts.update(gammas=tuple(args.gammas))
        try:
            return batch_sampler(method, s, t, k, **opts)
        except (ImportError, OSError) as exc:
            raise SystemExit(f"psda variance: method {method!r} needs the compiled psda core "
                             f"({exc}); install psda with 'pip install .'") from None
    if "ref" not in ref_holder:
        ref_holder["ref"] = _Reference(args, s, t)
    m = ref_holder["ref"].matching(k)
    return ref_holder["ref"].mod.batch_sampler(m, n_s, n_t, k, stages=1 if method == "ref-paired" else 2,
                                                seed=args.seed, discrepancy=args.discrepancy,
                                                gammas=tuple(args.gammas), **_kernel_kwargs(args))


def _fmt_table(title: str, methods: Sequence[str], ks: Sequence[int],
               cell: Dict[Tuple[str, int], str]) -> str:
    width = max(11, max(len(v) for v in cell.values()) + 2) if cell else 11
    mw = max(len("method"), max(len(m) for m in methods)) + 2
    lines = [title, "method".ljust(mw) + "".join(f"k={k}".rjust(width) for k in ks)]
    for m in methods:
        lines.append(m.ljust(mw) + "".join(cell.get((m, k), "n/a").rjust(width) for k in ks))
    return "\n".join(lines)


def _ratio_cell(r: float) -> str:
    if not (r > 0) or not math.isfinite(r):
        return "n/a"
    return f"1/{1 / r:.0f}" if r < 0.1 else f"{r:.2f}"


def run_variance(args) -> int:
    # Import the sampler classes (and so torch, when installed) before anything is timed: psda.samplers
    # imports them lazily, so the first sampler's set-up time held torch's import (1.7 s of a 0 s uniform).
    from .samplers.registry import sampler_class
    for name in SAMPLER_METHODS:
        sampler_class(name)
    s, t = make_data(args.data, args.n_source, args.n_target, args.dim, args.seed)
    kname = f"{args.kernel} kernel" if args.discrepancy == "mmd" else "Frobenius norm"
    ev = DiscrepancyError(s, t, discrepancy=args.discrepancy, kernel=args.kernel,
                          gammas=args.gammas)
    plan = []
    rows = _rows(args)
    for k in args.k:
        for m in rows:
            if _na_reason(m.partition("/")[0], k, args) is None:
                plan.append((m, k, _epochs_for(args, k, m)))
    plans = args.plans
    prog = Progress(sum(e + plans for _, _, e in plan), "psda variance",
                    enabled=not args.no_progress)
    results: Dict[Tuple[str, int], object] = {}
    seconds: Dict[Tuple[str, int], float] = {}
    setup: Dict[Tuple[str, int], float] = {}
    ref_holder: dict = {}
    t_start = time.perf_counter()
    for m, k, epochs in plan:
        t_cell = time.perf_counter()
        prog.set_label(f"{m} k={k}: matching" if "paired" in m else f"{m} k={k}")
        sampler = _sampler(m, k, args, s, t, ref_holder)
        setup[m, k] = time.perf_counter() - t_cell
        prog.advance()
        prog.set_label(f"{m} k={k}")
        per_plan = -(-epochs // plans)
        runs = []
        for p in range(plans):
            if p and "/" in m:
                sampler.update(s, t)  # a new draw of the extra uses, in force from the next epoch
                prog.advance()
            elif p:
                prog.advance()
            runs.append(expected_error(s, t, sampler, epochs=per_plan, evaluator=ev, first_epoch=p * per_plan,
                                       on_epoch=lambda e: prog.advance()))
        results[m, k] = _combine(runs, ev)
        seconds[m, k] = time.perf_counter() - t_cell
    prog.close()
    elapsed = time.perf_counter() - t_start

    print(f"E||D_hat - D||^2: {args.discrepancy.upper()} ({kname}), {args.data} data, "
          f"n_s={args.n_source} n_t={args.n_target} d={args.dim}, seed={args.seed}, "
          f"{elapsed:.1f} s")
    for m in rows:
        method, _, imbalance = m.partition("/")
        extra = f"; extra uses drawn '{imbalance}' per plan" if imbalance else ""
        if imbalance and args.n_source == args.n_target:
            extra += " (n_s = n_t: there are no extra uses, so the same matching as the paper's)"
        print(f"  {m}: {_DESCRIPTIONS[method]}{extra}")
    err = {key: f"{r.mean:.3e}" for key, r in results.items()}
    print()
    print(_fmt_table("error (mean over batches)", rows, args.k, err))
    if plans >= 2:
        print()
        print(f"bias^2 = ||E D_hat - D||^2, E over the {plans} plans' draws (--imbalance random/systematic) "
              "or, for a fixed plan, over its epochs' shuffles; the plug-in value over all batches less its "
              "Monte Carlo noise (psda.variance.pooled_bias2); variance = error - bias^2")
        print(_fmt_table("bias^2", rows, args.k, {key: f"{r.bias2:.3e}" for key, r in results.items()}))
        print()
        print(_fmt_table("bias^2 / error", rows, args.k,
                         {key: f"{r.bias2 / r.mean:.3f}" if r.mean > 0 else "n/a" for key, r in results.items()}))
        print()
        print(_fmt_table("variance (error - bias^2)", rows, args.k,
                         {key: f"{r.mean - r.bias2:.3e}" for key, r in results.items()}))
        print()
        print(_fmt_table("bias^2 noise removed (tr Cov / plans)", rows, args.k,
                         {key: f"{r.bias2_noise:.1e}" for key, r in results.items()}))
    rse = {key: f"{100 * r.stderr / r.mean:.1f}%" if r.mean > 0 else "n/a"
           for key, r in results.items()}
    print()
    print(_fmt_table("relative standard error", rows, args.k, rse))
    if "uniform" in args.methods:
        # A batch of the whole data set (k = n) has no error: uniform's
        # mean is then 0 and the ratio undefined ("n/a"), not a crash.
        ratio = {(m, k): _ratio_cell(r.mean / results["uniform", k].mean if results["uniform", k].mean > 0
                                     else math.nan)
                 for (m, k), r in results.items() if ("uniform", k) in results}
        print()
        print(_fmt_table("ratio to uniform", rows, args.k, ratio))
    print()
    print(_fmt_table("set-up seconds (strata, partition, eigenvectors or matching)", rows, args.k,
                     {key: f"{v:.2f}" for key, v in setup.items()}))
    timing = {(m, k): f"{plans * -(-e // plans)}/{seconds[m, k]:.1f}s" for m, k, e in plan}
    print()
    print(_fmt_table("epochs/seconds (sampler set-up, matching included, and evaluation)",
                     rows, args.k, timing))
    if args.plot:
        return _plot(args, results)
    return 0


class _Combined(ErrorEstimate):
    """An ErrorEstimate over several plans, with bias2 pooled (noise removed) and the noise removed."""

    bias2_noise: float = math.nan


def _combine(runs: List[ErrorEstimate], ev: DiscrepancyError) -> ErrorEstimate:
    """One estimate from the plans' runs (equal numbers of epochs): the mean of their means, their SE."""
    means = np.array([r.mean for r in runs])
    if len(runs) >= 5:
        se = float(means.std(ddof=1) / math.sqrt(len(runs)))
    else:
        se = float(math.sqrt(sum(r.stderr ** 2 for r in runs)) / len(runs))
    bias2, noise = pooled_bias2(runs, ev)
    out = _Combined(float(means.mean()), se, sum(r.n_batches for r in runs), sum(r.epochs for r in runs), bias2)
    out.bias2_noise = noise
    return out


def _plot(args, results) -> int:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"psda variance: --plot {args.plot} needs matplotlib, which is not installed; "
              "install it with 'pip install \"psda[plot]\"' or 'pip install matplotlib' "
              "(the table above is complete)",
              file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    markers = "os^vD<>PX*hp"
    names = {"paired": "PSDA Paired", "double-paired": "PSDA Double-paired",
             "ref-paired": "PSDA Paired (SciPy reference)", "ref-double-paired": "PSDA Double-paired (SciPy reference)",
             "kmeans++": "k-means++", "dpp": "k-DPP", "vardass": "VaRDASS", "ordered": "ORDERED"}
    rows = _rows(args)
    # tab10's ten colours, then their light variants: a colour of its own for up to 20 rows
    # (matplotlib's default cycle repeats after ten, e.g. with --methods all --imbalance ...).
    tab20 = plt.get_cmap("tab20").colors
    colours = tab20[0::2] + tab20[1::2]
    for i, m in enumerate(rows):
        ks = [k for k in args.k if (m, k) in results]
        if ks:
            base, _, variant = m.partition("/")  # "paired/systematic": one row per --imbalance choice
            # PSDA's rows and their SciPy references, not random-pairs: it is PSDA's control.
            psda_method = base in ("paired", "double-paired", "ref-paired", "ref-double-paired")
            display = REGISTRY[base].display if base in REGISTRY else base
            label = names.get(base, display) + (f" ({variant})" if variant else "")
            ax.errorbar(ks, [results[m, k].mean for k in ks], yerr=[results[m, k].stderr for k in ks],
                        marker=markers[i % len(markers)], color=colours[i % len(colours)], capsize=3,
                        linewidth=2.2 if psda_method else 1.2, linestyle="-" if psda_method else "--",
                        label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch size k (per domain)")
    ax.set_ylabel(r"$E\,\|\hat D - D\|^2$")
    name = f"MMD ({args.kernel} kernel)" if args.discrepancy == "mmd" else "CORAL"
    ax.set_title(f"{name}, {args.data}, n_s={args.n_source}, n_t={args.n_target}, d={args.dim}")
    ax.grid(True, which="both", alpha=0.3)
    # Outside the axes, so that it hides no data.
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=9)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    print(f"\nplot written to {os.path.abspath(args.plot)}")
    return 0


def run_bench(argv: Sequence[str]) -> int:
    bench = _load_benchmark_module("bench")
    if bench is None:
        print("psda bench: the benchmark lives in the source checkout (benchmarks/bench.py) and "
              "is not installed with the package; from a checkout run "
              "'python benchmarks/bench.py' or 'pip install -e .' and 'psda bench'",
              file=sys.stderr)
        return 2
    return bench.main(list(argv))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """main runs the ``psda`` command line with ``argv`` (default sys.argv[1:]); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="psda", description="Paired Sampling for Domain "
                                     "Adaptation: experiments and benchmarks.")
    sub = parser.add_subparsers(dest="command", metavar="{variance,bench}")
    _variance_parser(sub)
    sub.add_parser("bench", add_help=False,
                   help="time psda against NumPy + SciPy (source checkout; "
                        "'psda bench --help' for options)")
    if argv and argv[0] == "bench":
        return run_bench(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "variance":
        check_variance_args(sub.choices["variance"], args)
        try:
            return run_variance(args)
        except MemoryError:
            # NumPy's _ArrayMemoryError is one: the sizes asked for do not fit.
            print(f"psda variance: out of memory for n_s={args.n_source}, n_t={args.n_target}, d={args.dim} "
                  f"(the data alone is {8 * (args.n_source + args.n_target) * args.dim / 2**30:.3g} GiB): use "
                  "smaller --dim, --n-source or --n-target", file=sys.stderr)
            return 1
    parser.print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
