"""VaRDASS (stratified sampling), ORDERED (optimised order) and anticlustering samplers.

All three find their set-up with the exchange search of psda.samplers.exchange
on the features of psda.samplers.features; docs/samplers.md lists, per
method, the paper, the equations followed and every deviation.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .._matching import DEFAULT_GAMMAS
from .base import DABatchSampler, groups_to_batches, strata_to_batches
from .exchange import exchange
from .features import feature_map, pack_groups, unpack_groups

__all__ = ["VaRDASSSampler", "OrderedSampler", "AnticlusteringSampler", "vardass_strata"]


def _check_discrepancy(discrepancy: str, kernel: str, gammas: Sequence[float]):
    if discrepancy not in ("mmd", "coral"):
        raise ValueError(f"discrepancy = {discrepancy!r}: want 'mmd' or 'coral'")
    if kernel not in ("linear", "rbf"):
        raise ValueError(f"kernel = {kernel!r}: want 'linear' or 'rbf'")
    gammas = tuple(float(g) for g in gammas)
    if not gammas or min(gammas) <= 0:
        raise ValueError(f"gammas = {gammas!r}: want at least one bandwidth > 0")
    return discrepancy, kernel, gammas


def _principal_split(x: np.ndarray, idx: np.ndarray, m: int) -> List[np.ndarray]:
    """m balanced cells (sizes differ by <= 1) by recursive cuts along principal directions."""
    from ..baselines import _equal_strata

    return _equal_strata(x, idx, m)


def vardass_strata(phi: np.ndarray, k: int, *, passes: int = 20, partners: Optional[int] = None,
                   rng: np.random.Generator, on_pass=None, engine: str = "auto"):
    """VaRDASS's strata of one domain: k strata of sizes n // k or n // k + 1.

    Minimises the within-stratum sum of squares sum_h SSE_h in feature space
    (k times the variance of the one-row-per-stratum batch mean, for equal
    sizes), starting from balanced principal-direction cuts and improving by
    exchanges (psda.samplers.exchange with sign = -1).

    Returns:
        (strata, history): a list of k index arrays, and sum_h SSE_h at the
        start and after every pass (non-increasing).
    """
    n = len(phi)
    x = phi - phi.mean(0)
    cells = _principal_split(x, np.arange(n), k)
    group = np.empty(n, np.int64)
    for h, c in enumerate(cells):
        group[c] = h
    sizes = np.bincount(group, minlength=k).astype(np.float64)
    total = float(np.einsum("id,id->", x, x))
    cb = None if on_pass is None else (lambda p, F: on_pass(p, total - F))
    group, hist = exchange(x, np.ones(n), group, np.zeros(n, np.int64), np.zeros((k, x.shape[1])), 1.0 / sizes,
                           sign=-1.0, passes=passes, partners=partners, rng=rng, on_pass=cb, engine=engine)
    strata = [np.flatnonzero(group == h) for h in range(k)]
    return strata, [total - F for F in hist]


def _default_partners(n: int, dim: int) -> Optional[int]:
    # All candidates while a pass costs at most about 2e8 multiply-adds, else a
    # random subset per visit (Papenberg & Klau's fast exchange).
    return None if n * n * dim <= 2e8 else max(32, int(2e8 // (n * dim)))


class _FeatureSampler(DABatchSampler):
    """Shared options of the samplers that search in the discrepancy's feature space."""

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *, discrepancy: str = "mmd",
                 kernel: str = "linear", gammas: Sequence[float] = DEFAULT_GAMMAS, passes: int = 20,
                 partners: Optional[int] = None, rff_per_gamma: int = 128, progress: bool = False,
                 engine: str = "auto", **kwargs: Any) -> None:
        self.discrepancy, self.kernel, self.gammas = _check_discrepancy(discrepancy, kernel, gammas)
        if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
            raise ValueError(f"passes = {passes!r}: want an int >= 0 (exchange passes)")
        if partners is not None and (not isinstance(partners, int) or partners < 1):
            raise ValueError(f"partners = {partners!r}: want None (all) or an int >= 1")
        if engine not in ("auto", "go", "numpy"):
            raise ValueError(f"engine = {engine!r}: want 'auto' (the Go core when built), 'go' or 'numpy'")
        self.passes, self.partners, self.rff_per_gamma, self.progress = passes, partners, int(rff_per_gamma), progress
        self.engine = engine
        self.setup_seconds = 0.0
        super().__init__(source_features, target_features, batch_size, **kwargs)

    def _config(self):
        return {"discrepancy": self.discrepancy, "kernel": self.kernel, "passes": self.passes}

    def _phi(self, s, t):
        return feature_map(s, t, self.discrepancy, self.kernel, self.gammas, self.seed, self.rff_per_gamma)

    def _partners(self, n, dim):
        return self.partners if self.partners is not None else _default_partners(n, dim)

    def _reporter(self, what: str):
        if not self.progress:
            return None
        import sys

        def report(p, F):
            obj = "" if F != F else f": objective {F:.6g}"
            print(f"psda {self.name}: {what} pass {p}/{self.passes}{obj}", file=sys.stderr, flush=True)

        return report

    def _build(self, s, t):
        t0 = time.perf_counter()
        plan = self._search(s, t)
        self.setup_seconds = time.perf_counter() - t0
        return plan


class VaRDASSSampler(_FeatureSampler):
    """VaRDASSSampler: stratified sampling with discrepancy-specific strata (Napoli & White, arXiv 2512.05226).

    Each domain is cut into k strata that minimise the within-stratum sum of
    squares of the discrepancy's feature map (linear MMD: x; RBF MMD: random
    Fourier features of the mixture; CORAL: centred outer products); each batch
    takes one row from every stratum, so the batch mean of each domain is an
    unbiased stratified estimator whose variance is the objective over k^2 n/k.
    Strata have sizes n // k or n // k + 1 (equal allocation keeps the plain,
    unweighted batch mean unbiased up to that one row); each epoch walks a
    fresh permutation of every stratum. See docs/samplers.md for deviations.

    Args:
        discrepancy, kernel, gammas: the loss the strata serve.
        passes: exchange passes (k-means-style iterations) per domain.
        partners: exchange candidates per visit (None: automatic).
        progress: print every finished pass to stderr.
        engine: "auto" (the Go core's psda/diverse when built, else NumPy),
            "go" or "numpy" (the reference implementation).

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(40, 2))
        >>> s = psda.batch_sampler("vardass", x, x + 1, 4, num_replicas=1, rank=0)
        >>> len(s), [len(h) for h in s.strata("source")]
        (10, [10, 10, 10, 10])
    """

    name = "vardass"

    def _search(self, s, t):
        ps, pt = self._phi(s, t)
        rng = np.random.default_rng([self.seed, 0x7a5d])
        plan: Dict[str, Any] = {}
        for side, phi in (("source", ps), ("target", pt)):
            strata, hist = vardass_strata(phi, self.batch_size, passes=self.passes,
                                          partners=self._partners(len(phi), phi.shape[1]), rng=rng,
                                          on_pass=self._reporter(side))
            plan[side] = pack_groups(strata)
            plan[side + "_objective"] = np.array(hist)
        return plan

    def strata(self, side: str) -> List[np.ndarray]:
        """The k strata of "source" or "target" in force, as index arrays."""
        return unpack_groups(self._plan[side])

    @property
    def strata_s(self) -> List[np.ndarray]:
        """The source strata in force (``strata("source")``)."""
        return self.strata("source")

    @property
    def strata_t(self) -> List[np.ndarray]:
        """The target strata in force (``strata("target")``)."""
        return self.strata("target")

    def _draw(self, plan, rng, num_batches):
        return (strata_to_batches(unpack_groups(plan["source"]), num_batches, rng),
                strata_to_batches(unpack_groups(plan["target"]), num_batches, rng))


class AnticlusteringSampler(_FeatureSampler):
    """AnticlusteringSampler: fixed batches that are k-means anticlusters (Papenberg & Klau 2021).

    Each domain is partitioned into n // k groups of k rows (the n mod k rows
    left over sit out, chosen by the search) whose means are as close as possible to the domain mean in the
    discrepancy's feature space, the k-means anticlustering criterion
    (maximal within-group sum of squares), found by the exchange method from
    a random balanced partition. Each epoch serves the groups in a random
    order (source and target groups paired at random; the smaller domain's
    groups repeat in back-to-back random orders).

    Args: as VaRDASSSampler.

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(40, 2))
        >>> s = psda.batch_sampler("anticlustering", x, x + 1, 4, num_replicas=1, rank=0)
        >>> len(s)
        10
    """

    name = "anticlustering"

    def _search(self, s, t):
        ps, pt = self._phi(s, t)
        rng = np.random.default_rng([self.seed, 0xa4c1])
        plan: Dict[str, Any] = {}
        k = self.batch_size
        for side, phi in (("source", ps), ("target", pt)):
            groups, hist = anticlusters(phi, k, passes=self.passes, partners=self._partners(len(phi), phi.shape[1]),
                                        rng=rng, on_pass=self._reporter(side), engine=self.engine)
            plan[side] = pack_groups(groups)
            plan[side + "_objective"] = np.array(hist)
        return plan

    def groups(self, side: str) -> List[np.ndarray]:
        """The anticlusters of "source" or "target" in force, as index arrays."""
        return unpack_groups(self._plan[side])

    def _draw(self, plan, rng, num_batches):
        k = self.batch_size
        return (groups_to_batches(unpack_groups(plan["source"]), k, num_batches, rng),
                groups_to_batches(unpack_groups(plan["target"]), k, num_batches, rng))


def anticlusters(phi: np.ndarray, k: int, *, passes: int = 20, partners: Optional[int] = None,
                 rng: np.random.Generator, on_pass=None, engine: str = "auto"):
    """k-means anticlusters of one domain: n // k groups of exactly k rows.

    The n mod k rows left over sit in a spare group that counts in no batch
    (the search chooses them). Returns (groups, history): history holds
    F = sum_g ||mean_g - mean||^2 at the start (a random balanced partition)
    and after each exchange pass.
    """
    n = len(phi)
    x = phi - phi.mean(0)
    G = n // k
    group = np.empty(n, np.int64)
    group[rng.permutation(n)] = np.minimum(np.arange(n) // k, G)
    omega = np.full(G + 1, 1.0 / k**2)
    omega[G] = 0.0
    group, hist = exchange(x, np.ones(n), group, np.zeros(n, np.int64), np.zeros((G + 1, x.shape[1])), omega,
                           sign=1.0, passes=passes, partners=partners, rng=rng, on_pass=on_pass, engine=engine)
    return [np.flatnonzero(group == g) for g in range(G)], hist


class OrderedSampler(_FeatureSampler):
    """OrderedSampler: stratified batches in an optimised order (ORDERED, Napoli & White, arXiv 2605.05084).

    Both domains are stratified as in VaRDASS (k strata each); every batch
    takes one row from each stratum of each domain, and which row of stratum h
    goes to which batch (the sampling order) is optimised: starting from a
    random order, rows of the same stratum and domain are exchanged between
    batches while that lowers the summed error of the epoch's batches,
    sum_b ||(mean_s,b - mu_s) - (mean_t,b - mu_t)||^2 in the discrepancy's
    feature space. The batches are then fixed; each epoch serves them in a
    random order. With n not a multiple of k, n mod k rows per domain sit in
    a spare slot that the search may swap in (they are not served); the
    smaller domain's strata are repeated to fill max(n_s, n_t) // k batches.

    Args: as VaRDASSSampler (``passes`` applies to the strata and to the order).

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(40, 2))
        >>> s = psda.batch_sampler("ordered", x, x + 1, 4, num_replicas=1, rank=0)
        >>> len(s)
        10
    """

    name = "ordered"

    def _search(self, s, t):
        ps, pt = self._phi(s, t)
        rng = np.random.default_rng([self.seed, 0x0de4])
        k = self.batch_size
        G = max(self.n_source, self.n_target) // k
        xs_, ws_, gs_, cs_ = [], [], [], []
        plan: Dict[str, Any] = {}
        for dom, (side, phi) in enumerate((("source", ps), ("target", pt))):
            strata, hist = vardass_strata(phi, k, passes=self.passes, partners=self._partners(len(phi), phi.shape[1]),
                                          rng=rng, on_pass=self._reporter(side + " strata"), engine=self.engine)
            plan[side + "_strata_objective"] = np.array(hist)
            x = phi - phi.mean(0)
            rows, group, cls = [], [], []
            for h, st in enumerate(strata):
                # G slots per stratum (rows repeated in the smaller domain),
                # the rest in the spare group G; the start is a random order.
                slot = st[rng.permutation(len(st))] if len(st) >= G else np.concatenate(
                    [st, st[(np.arange(G - len(st)) + rng.integers(len(st))) % len(st)]])
                rows.append(slot)
                g = np.full(len(slot), G, np.int64)
                g[:G] = rng.permutation(G)
                group.append(g)
                cls.append(np.full(len(slot), 2 * h + dom, np.int64))
            rows_a = np.concatenate(rows)
            xs_.append(x[rows_a])
            ws_.append(np.full(len(rows_a), (1.0 if dom == 0 else -1.0) / k))
            gs_.append(np.concatenate(group))
            cs_.append(np.concatenate(cls))
            plan[side + "_rows"] = rows_a
        X = np.concatenate(xs_)
        omega = np.ones(G + 1)
        omega[G] = 0.0  # the spare slots count in no batch
        group, hist = exchange(X, np.concatenate(ws_), np.concatenate(gs_), np.concatenate(cs_),
                               np.zeros((G + 1, X.shape[1])), omega, sign=1.0, passes=self.passes,
                               partners=self._partners(len(X) // k, X.shape[1]), rng=rng,
                               on_pass=self._reporter("order"), engine=self.engine)
        plan["order_objective"] = np.array(hist)
        m = len(plan["source_rows"])
        for side, rows, g in (("source", plan["source_rows"], group[:m]), ("target", plan["target_rows"], group[m:])):
            keep = g < G
            # batches[b] = the k rows with group b, in stratum order.
            order = np.lexsort((np.arange(keep.sum()), g[keep]))
            plan[side] = rows[keep][order].reshape(G, k)
            del plan[side + "_rows"]
        return plan

    def batches(self) -> np.ndarray:
        """The fixed batches in force: (source (G, k), target (G, k)) un-offset indices."""
        return self._plan["source"], self._plan["target"]

    def _draw(self, plan, rng, num_batches):
        order = rng.permutation(len(plan["source"]))[:num_batches]
        return plan["source"][order], plan["target"][order]
