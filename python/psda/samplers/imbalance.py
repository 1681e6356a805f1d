"""Who takes the extra uses: PSDA's matching of domains of different sizes, unbiased.

With n_s = q n_t + r (n_s > n_t; the other way round alike) the paper's
Stage 1 (eqs 4-5) serves every target q or q + 1 times, and its cost chooses
*which* r targets take the extra use. Over an epoch the batches' target mean
is then sum_j c_j t_j / n_s, not mean(t): the estimator is biased, by the
same amount every epoch (docs/method.md, "Unbiased imbalanced pairing").

``imbalance`` chooses the r extra uses:

- ``"cost"``: the paper's (the cost chooses; biased, least error at fixed plan);
- ``"random"``: r distinct rows of the smaller domain drawn uniformly;
- ``"systematic"``: r rows by systematic sampling along a chain of the smaller
  domain's features (as psda.samplers.fixed.systematic): each row with
  probability r / n exactly, as ``"random"``, but spread over the domain, so
  the drawn set's mean, the error's offset until the next draw, is closer to
  the domain's. Successive plans rotate the offset U by the golden ratio
  (:func:`rotation`), so the extra uses move along the chain and every row's
  cumulative count over a run's plans stays close to its expectation.

For the two drawn variants every row of the smaller domain is used
q + r / n = P / n times in expectation over the draw, so the epoch's batch
means are unbiased. The counts fixed, the rows of the smaller domain are
repeated by their counts and the *balanced* problem is solved on
(larger, smaller[rep]) by psda's core; for MMD that is exactly the paper's
Stage 1 and Stage 2 restricted to those counts (docs/method.md). A new draw
is made for every plan (at construction and at every ``update``).
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from .._matching import Matching, _match_arrays

__all__ = ["IMBALANCE", "check_imbalance", "draw_uses", "rotation", "match_with_uses", "match_counts"]

#: The values of the samplers' ``imbalance`` option, the paper's first.
IMBALANCE: Tuple[str, ...] = ("cost", "random", "systematic")


def check_imbalance(imbalance: Any) -> str:
    """Returns imbalance; ValueError naming the argument and the choices otherwise."""
    if not isinstance(imbalance, str) or imbalance not in IMBALANCE:
        raise ValueError(f"imbalance = {imbalance!r}: want one of {', '.join(map(repr, IMBALANCE))} ('cost': the "
                         "paper's cost-chosen extra uses, biased when n_source != n_target; 'random' or "
                         "'systematic': extra uses drawn, unbiased)")
    return imbalance


def rotation(seed: int, plan: int) -> float:
    """The systematic draw's U for the plan-th plan: frac(V + plan * golden ratio), V uniform from seed.

    Each plan's U is uniform (V is), so each plan's counts are unbiased; successive
    plans' U fill [0, 1) evenly (a low-discrepancy sequence), so the extra uses
    rotate over the chain and every row's *cumulative* count over m plans is
    within O(log m) of m r / n, where independent draws wander by O(sqrt(m)).
    """
    v = np.random.default_rng([seed, _ROTATION_TAG]).random()
    return float((v + plan * _GOLDEN) % 1.0)


_GOLDEN = (5 ** 0.5 - 1) / 2
_ROTATION_TAG = 0x5EED_607A


def draw_uses(x: np.ndarray, P: int, imbalance: str, rng: np.random.Generator, u: Any = None) -> np.ndarray:
    """The rows of the smaller domain x repeated by their use counts: every row floor(P / n) times, plus
    P mod n distinct rows drawn with probability (P mod n) / n each (uniformly, or systematically along
    a chain of x, at offset u in [0, 1): None draws it from rng). Returns P row indices, sorted.
    O(n D log n) for "systematic", O(P) otherwise.

    Args:
        x: (n, D) features of the smaller domain (the chain's order for "systematic").
        P: max(n_source, n_target), the number of pairs.
        imbalance: "random" or "systematic".
        rng: the generator of the draw.
        u: the systematic offset (see :func:`rotation`); None draws it from rng.

    Example:
        >>> import numpy as np
        >>> x = np.arange(10.0)[:, None]
        >>> rep = draw_uses(x, 13, "random", np.random.default_rng(0))
        >>> len(rep), sorted(set(np.bincount(rep).tolist()))
        (13, [1, 2])
    """
    n = len(x)
    q, r = divmod(P, n)
    if imbalance == "random":
        extra = rng.choice(n, r, replace=False)
    elif imbalance == "systematic":
        from .stratified import _chain

        if not r:
            extra = np.zeros(0, np.int64)
        else:
            chain = _chain(x)
            u = rng.random() if u is None else float(u)
            extra = chain[np.floor((np.arange(r) + u) * n / r).astype(np.int64)]  # fixed.systematic at this u
    else:
        raise ValueError(f"imbalance = {imbalance!r}: draw_uses draws for 'random' or 'systematic' only")
    return np.sort(np.concatenate([np.repeat(np.arange(n, dtype=np.int64), q), np.asarray(extra, np.int64)]))


def match_with_uses(s: np.ndarray, t: np.ndarray, batch_size: int, stages: int, discrepancy: str, kernel: str,
                    gammas: Tuple[float, ...], *, imbalance: str, rng: np.random.Generator, u: Any = None,
                    solver: str = "auto", names: Tuple[str, str] = ("source", "target")) -> Matching:
    """PSDA's matching with the smaller domain's use counts drawn (``draw_uses``), not cost-chosen.

    Solves the balanced problem on the larger domain and the smaller one's
    rows repeated by their counts, then maps the pairs back to the smaller
    domain's rows. The result has PSDA's coverage (each row of the smaller
    domain floor(P / n) or ceil(P / n) times) and costs of the repeated
    problem (for MMD, the paper's objective at those counts). Balanced
    inputs give psda.match's matching. Arguments as :func:`psda.match`'s,
    plus ``imbalance``, ``rng`` and ``u`` as :func:`draw_uses`'s.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> s, t = rng.normal(size=(10, 2)), rng.normal(size=(4, 2))
        >>> m = match_with_uses(s, t, 2, 2, "mmd", "linear", (), imbalance="random", rng=rng)
        >>> m.imbalance, sorted(np.bincount(m.pairs[:, 1]).tolist())  # which two get 3 uses is drawn
        ('random', [2, 2, 3, 3])
    """
    ns, nt = len(s), len(t)
    if ns == nt:
        return _match_arrays(s, t, batch_size, stages, discrepancy, kernel, gammas, solver=solver, names=names)
    rep = draw_uses(t if ns > nt else s, max(ns, nt), imbalance, rng, u)
    return match_counts(s, t, rep, batch_size, stages, discrepancy, kernel, gammas, imbalance=imbalance,
                        solver=solver, names=names)


def match_counts(s: np.ndarray, t: np.ndarray, rep: np.ndarray, batch_size: int, stages: int, discrepancy: str,
                 kernel: str, gammas: Tuple[float, ...], *, imbalance: str, solver: str = "auto",
                 names: Tuple[str, str] = ("source", "target")) -> Matching:
    """PSDA's matching with the smaller domain's rows used as listed in rep (P = max(n_s, n_t) row indices).

    The balanced problem on the larger domain and smaller[rep]; the pairs
    are mapped back to the smaller domain's rows. ``imbalance`` is recorded.
    """
    ns, nt = len(s), len(t)
    small = 1 if ns > nt else 0
    rep = np.asarray(rep, np.int64)
    s2, t2 = (s, np.ascontiguousarray(t[rep])) if small else (np.ascontiguousarray(s[rep]), t)
    m = _match_arrays(s2, t2, batch_size, stages, discrepancy, kernel, gammas, solver=solver, names=names)
    pairs = np.array(m.pairs)
    pairs[:, small] = rep[pairs[:, small]]
    return Matching(pairs=pairs, quads=m.quads, singles=m.singles, stage1_cost=m.stage1_cost,
                    stage2_cost=m.stage2_cost, stage2_bound=m.stage2_bound, n_source=ns, n_target=nt,
                    batch_size=batch_size, stages=stages, discrepancy=discrepancy, kernel=kernel, gammas=gammas,
                    imbalance=imbalance)
