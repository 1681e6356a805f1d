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
from .base import BatchSampler, check_rows, stream
from .fixed import check_partition, redraw_extras, sit_out
from .exchange import exchange
from .features import feature_map, pack_groups, unpack_groups

__all__ = ["VaRDASSSampler", "OrderedSampler", "AnticlusteringSampler", "vardass_strata", "ordered_strata", "deal"]


def _check_discrepancy(discrepancy: str, kernel: str, gammas: Sequence[float]):
    if discrepancy not in ("mmd", "coral"):
        raise ValueError(f"discrepancy = {discrepancy!r}: want 'mmd' or 'coral'")
    if kernel not in ("linear", "rbf"):
        raise ValueError(f"kernel = {kernel!r}: want 'linear' or 'rbf'")
    gammas = tuple(float(g) for g in gammas)
    if not gammas or min(gammas) <= 0:
        raise ValueError(f"gammas = {gammas!r}: want at least one bandwidth > 0")
    return discrepancy, kernel, gammas


def _principal_direction(x: np.ndarray, iters: int = 12) -> np.ndarray:
    """Approximate top principal direction of the rows of x by power iteration (O(iters n d))."""
    xc = x - x.mean(0)
    v = np.zeros(x.shape[1])
    v[np.argmax(np.einsum("ij,ij->j", xc, xc))] = 1.0
    for _ in range(iters):
        w = xc.T @ (xc @ v)
        nrm = np.linalg.norm(w)
        if nrm == 0.0:
            break
        v = w / nrm
    return v


def _equal_strata(x: np.ndarray, idx: np.ndarray, m: int) -> List[np.ndarray]:
    """Split rows idx of x into m strata of sizes differing by at most one.

    Recursive median-style cuts along each cell's principal direction (a
    balanced k-d tree on principal axes): a cell for m strata is cut at the
    fraction floor(m/2)/m of its rows.
    """
    if m == 1:
        return [idx]
    m1 = m // 2
    proj = x[idx] @ _principal_direction(x[idx])
    order = idx[np.argsort(proj, kind="stable")]
    cut = (len(idx) * m1) // m
    return _equal_strata(x, order[:cut], m1) + _equal_strata(x, order[cut:], m - m1)


def _chain(x: np.ndarray) -> np.ndarray:
    """The rows of x in an order where neighbours are similar: the leaves of balanced principal cuts
    into cells of about two rows (psda.samplers.fixed's systematic sampling walks it). O(n D log n)."""
    n = len(x)
    return np.concatenate(_equal_strata(x, np.arange(n), max(1, n // 2))).astype(np.int64)


def _principal_split(x: np.ndarray, idx: np.ndarray, m: int) -> List[np.ndarray]:
    """m balanced cells (sizes differ by <= 1) by recursive cuts along principal directions."""
    return _equal_strata(x, idx, m)


def vardass_strata(phi: np.ndarray, k: int, *, passes: int = 20, partners: Optional[int] = None,
                   rng: np.random.Generator, on_pass=None):
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
                           sign=-1.0, passes=passes, partners=partners, rng=rng, on_pass=cb)
    strata = [np.flatnonzero(group == h) for h in range(k)]
    return strata, [total - F for F in hist]


def _default_partners(n: int, dim: int) -> Optional[int]:
    # All candidates while a pass costs at most about 2e8 multiply-adds, else a
    # random subset per visit (Papenberg & Klau's fast exchange).
    return None if n * n * dim <= 2e8 else max(32, int(2e8 // (n * dim)))


class _FeatureSampler(BatchSampler):
    """Shared options of the samplers that search in the discrepancy's feature space."""

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *, discrepancy: str = "mmd",
                 kernel: str = "linear", gammas: Sequence[float] = DEFAULT_GAMMAS, passes: int = 20,
                 partners: Optional[int] = None, rff_per_gamma: int = 128, progress: bool = False,
                 **kwargs: Any) -> None:
        self.discrepancy, self.kernel, self.gammas = _check_discrepancy(discrepancy, kernel, gammas)
        if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
            raise ValueError(f"passes = {passes!r}: want an int >= 0 (exchange passes)")
        if partners is not None and (not isinstance(partners, int) or partners < 1):
            raise ValueError(f"partners = {partners!r}: want None (all) or an int >= 1")
        self.passes, self.partners, self.rff_per_gamma, self.progress = passes, partners, int(rff_per_gamma), progress
        self.setup_seconds = 0.0
        super().__init__(source_features, target_features, batch_size, **kwargs)

    def _config(self):
        return {"discrepancy": self.discrepancy, "kernel": self.kernel, "passes": self.passes}

    def _options(self):
        return {**self._config(), "gammas": self.gammas, "partners": self.partners,
                "rff_per_gamma": self.rff_per_gamma}

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

    def _check_plan(self, plan, where):
        for side, n in (("source", self.n_source), ("target", self.n_target)):
            sizes = np.asarray(plan[side]["sizes"])
            if len(sizes) != self.batch_size or (sizes.size and (sizes.min() < n // self.batch_size)):
                raise ValueError(f"{where}[{side!r}] holds strata of sizes {sizes.tolist()[:8]}..., not "
                                 f"{self.batch_size} strata of n // k or more rows: pass an unmodified state_dict()")
            check_partition(plan[side]["rows"], n, f"{where}[{side!r}]")

    def _draw(self, plan, rng, count):
        out = []
        for side in ("source", "target"):
            b = _strata_batches(unpack_groups(plan[side]), count, rng)
            # The epoch's last batch may be served short (its first N mod k
            # columns): which strata it takes must be random, not the first.
            b[-1] = rng.permutation(b[-1])
            out.append(b)
        return tuple(out)


def _check_mover(plan: Dict[str, Any], side: str, n: int, need: bool, where: str) -> None:
    """Checks the chain and features the rows that do not fit need (psda.samplers.fixed), present iff need."""
    chain, x = np.asarray(plan[side + "_chain"]), np.asarray(plan[side + "_phi"])
    if not need:
        if len(chain) or len(x):
            raise ValueError(f"{where}[{side + '_chain'!r}] is not empty where every row fits the batches: pass an "
                             "unmodified state_dict()")
        return
    if x.ndim != 2 or len(x) != n:
        raise ValueError(f"{where}[{side + '_phi'!r}] has shape {x.shape}, not ({n}, D): pass an unmodified "
                         "state_dict()")
    check_partition(chain, n, f"{where}[{side + '_chain'!r}]")


def _strata_batches(strata: List[np.ndarray], count: int, rng: np.random.Generator) -> np.ndarray:
    """count batches with one row from each stratum: column h walks back-to-back permutations of stratum h."""
    cols = [st[stream(rng, len(st), count)] for st in strata]
    return np.stack(cols, 1).astype(np.int64)


class _FixedBatches(_FeatureSampler):
    """The option of the samplers whose batches are fixed at set-up (anticlustering, ORDERED)."""

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *, epoch_passes: int = 2,
                 **kwargs: Any) -> None:
        if isinstance(epoch_passes, bool) or not isinstance(epoch_passes, int) or epoch_passes < 0:
            raise ValueError(f"epoch_passes = {epoch_passes!r}: want an int >= 0 (exchange passes per epoch)")
        self.epoch_passes = epoch_passes
        super().__init__(source_features, target_features, batch_size, **kwargs)

    def _config(self):
        return {**super()._config(), "epoch_passes": self.epoch_passes}


class AnticlusteringSampler(_FixedBatches):
    """AnticlusteringSampler: fixed batches that are k-means anticlusters (Papenberg & Klau 2021).

    Each domain is partitioned into n // k groups of k rows (the n mod k rows
    left over in a spare group, chosen by the search) whose means are as close
    as possible to the domain mean in the discrepancy's feature space, the
    k-means anticlustering criterion (maximal within-group sum of squares),
    found by the exchange method from a random balanced partition. Each epoch,
    n mod k rows sit out, drawn so that every row sits out with probability
    (n mod k)/n and spread over the domain, the spare rows take the places of
    the most similar leaving ones, and ``epoch_passes`` exchange passes
    restore the groups' balance (psda.samplers.fixed; every row is served
    equally often over epochs), and the groups are served in a random order (source and
    target groups paired at random; the smaller domain's groups repeat in
    back-to-back random orders). With drop_last=False the larger domain's
    rows that sit out form the epoch's short last batch: each row exactly once.

    Args: as VaRDASSSampler, and
        epoch_passes: exchange passes over each epoch's groups after the
            left-over rows moved in (only when k does not divide n; 0: none).

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
                                        rng=rng, on_pass=self._reporter(side))
            plan[side] = np.array(groups[:-1], np.int64).reshape(-1, k)
            plan[side + "_spare"] = np.asarray(groups[-1], np.int64)
            plan[side + "_objective"] = np.array(hist)
            # What the rows left over need to move every epoch (psda.samplers.fixed): kept only then.
            need = len(phi) % k > 0
            x = phi - phi.mean(0)
            plan[side + "_chain"] = _chain(x) if need else np.zeros(0, np.int64)
            plan[side + "_phi"] = x if need else x[:0]
        return plan

    def groups(self, side: str) -> List[np.ndarray]:
        """The anticlusters of "source" or "target" in force, as index arrays (the spare rows not among them)."""
        return list(self._plan[side])

    def _check_plan(self, plan, where):
        k = self.batch_size
        for side, n in (("source", self.n_source), ("target", self.n_target)):
            g, spare = np.asarray(plan[side]), np.asarray(plan[side + "_spare"])
            if g.ndim != 2 or g.shape != (n // k, k) or spare.shape != (n % k,):
                raise ValueError(f"{where}[{side!r}] holds groups of shape {g.shape} and {spare.shape} spare rows, "
                                 f"not ({n // k}, {k}) and {n % k}: pass an unmodified state_dict()")
            check_partition(np.concatenate([g.ravel(), spare]), n, f"{where}[{side!r}]")
            _check_mover(plan, side, n, n % k > 0, where)

    def _rebalance(self, groups: np.ndarray, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A few exchange passes over this epoch's served rows (swaps between groups: the rows served,
        so every row's inclusion, stay as drawn), to restore the balance the incoming rows disturbed."""
        G, k = groups.shape
        rows = groups.ravel()
        X = x[rows]
        g, _ = exchange(X, np.ones(len(rows)), np.repeat(np.arange(G), k), np.zeros(len(rows), np.int64),
                        np.zeros((G, X.shape[1])), np.full(G, 1.0 / k**2), sign=1.0, passes=self.epoch_passes,
                        partners=self._partners(len(rows), X.shape[1]), rng=rng)
        return rows[np.argsort(g, kind="stable")].reshape(G, k)

    def _draw(self, plan, rng, count):
        N = max(self.n_source, self.n_target)
        out = []
        for side, n in (("source", self.n_source), ("target", self.n_target)):
            x = plan[side + "_phi"] if len(plan[side + "_phi"]) else None
            groups, spare = sit_out(plan[side], plan[side + "_spare"], rng, plan[side + "_chain"], x)
            if x is not None and self.epoch_passes:
                groups = self._rebalance(groups, x, rng)
            # Random column order: a short last batch takes a random part of its group.
            groups = rng.permuted(groups, axis=1)
            G = len(groups)
            if n == N and count == G + 1:
                # drop_last=False: the rows that sit out are the short last batch.
                last = np.resize(spare, (1, self.batch_size))
                out.append(np.concatenate([groups[rng.permutation(G)], last]))
            else:
                out.append(groups[stream(rng, G, count)])
        return tuple(out)


def anticlusters(phi: np.ndarray, k: int, *, passes: int = 20, partners: Optional[int] = None,
                 rng: np.random.Generator, on_pass=None):
    """k-means anticlusters of one domain: n // k groups of exactly k rows.

    The n mod k rows left over sit in a spare group that counts in no batch
    (the search chooses them). Returns (groups, history): groups holds the
    G groups, then the spare group (possibly empty); history holds
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
                           sign=1.0, passes=passes, partners=partners, rng=rng, on_pass=on_pass)
    return [np.flatnonzero(group == g) for g in range(G + 1)], hist


def ordered_strata(phi: np.ndarray, strata: int, min_size: int, *, passes: int = 20, rng: np.random.Generator,
                   on_pass=None):
    """ORDERED's strata of one domain: weighted kernel k-means with a minimum cluster size.

    ``strata`` clusters of at least ``min_size`` rows minimising (3) of
    psda.samplers.kmeans (unit weights) in the kernel's feature map, from
    balanced principal-direction cuts, by the single-row moves (4).

    Returns:
        (group, history): each row's stratum, and the SSE at the start and
        after every pass (non-increasing).
    """
    from .kmeans import weighted_kmeans

    n = len(phi)
    x = phi - phi.mean(0)
    group = np.empty(n, np.int64)
    for h, c in enumerate(_principal_split(x, np.arange(n), strata)):
        group[c] = h
    return weighted_kmeans(x, np.ones(n), group, strata, min_size, passes=passes, rng=rng, on_pass=on_pass)


def allocation(sizes: np.ndarray, k: int) -> np.ndarray:
    """Rows per batch of each stratum: proportional to its size, at least one each, summing to k.

    Largest remainders of q_h = N_h k / n on top of max(1, floor(q_h)).
    """
    sizes = np.asarray(sizes, np.float64)
    q = sizes * k / sizes.sum()
    c = np.maximum(1, np.floor(q)).astype(np.int64)
    while c.sum() < k:
        c[np.argmax(q - c)] += 1
    while c.sum() > k:
        r = np.where(c > 1, q - c, np.inf)
        c[np.argmin(r)] -= 1
    return c


def round_strata(x: np.ndarray, group: np.ndarray, H: int, G: int, k: int) -> np.ndarray:
    """Moves rows between strata until stratum h holds at least c_h G rows (c = allocation(sizes, k)).

    Then every batch can take exactly c_h rows of stratum h (the same
    composition in every batch: proportional allocation with the plain batch
    mean). Each stratum short of c_h G rows takes, from strata with rows to
    spare, those whose move raises the SSE (3) least by (4) at the current
    centroids. Returns the per-batch counts c; ``group`` is changed in place.
    """
    sizes = np.bincount(group, minlength=H)
    c = allocation(sizes, k)
    need = c * G
    for h in np.flatnonzero(sizes < need):
        sizes = np.bincount(group, minlength=H)
        short = int(need[h] - sizes[h])
        if short <= 0:
            continue
        W = sizes.astype(np.float64)
        C = np.zeros((H, x.shape[1]))
        np.add.at(C, group, x)
        C /= np.maximum(W, 1)[:, None]
        spare = sizes - need
        cand = np.flatnonzero(spare[group] > 0)
        a = group[cand]
        cost = (W[h] / (W[h] + 1) * ((x[cand] - C[h]) ** 2).sum(1)
                - W[a] / np.maximum(W[a] - 1, 1) * ((x[cand] - C[a]) ** 2).sum(1))
        taken = np.zeros(H, np.int64)
        for i in cand[np.argsort(cost, kind="stable")]:
            if short == 0:
                break
            g = group[i]
            if taken[g] < spare[g]:
                taken[g] += 1
                group[i] = h
                short -= 1
    return c


def deal(strata: List[np.ndarray], counts: np.ndarray, G: int, rng: np.random.Generator):
    """Lays a domain's strata into G batches (and a spare group G): stratum h gives counts[h] rows to every batch.

    Stratum h's slots, in random order: slot j < counts[h] G goes to batch
    j mod G, the rest to the spare group (not served; the order search may
    swap them in).

    Returns:
        (slots, group, stratum): each slot's index into the strata's rows, its batch (G = spare) and stratum.
    """
    slots, group, stratum = [], [], []
    for h, st in enumerate(strata):
        st = st[rng.permutation(len(st))]
        g = np.full(len(st), G, np.int64)
        g[: counts[h] * G] = np.arange(counts[h] * G) % G
        slots.append(st)
        group.append(g)
        stratum.append(np.full(len(st), h, np.int64))
    return np.concatenate(slots), np.concatenate(group), np.concatenate(stratum)


def _repair_duplicates(rows: np.ndarray, group: np.ndarray, cls: np.ndarray, G: int) -> None:
    """Swaps slots of one class so that no batch holds a row twice (the repeated rows of the smaller domain).

    The exchange search may move two copies of a row into one batch; each
    such copy swaps with a slot of its class in a batch holding neither row.
    In place; a no-op when the rows are distinct.
    """
    if len(np.unique(rows)) == len(rows):
        return
    for _ in range(len(rows)):
        live = group < G
        key = group[live] * (rows.max() + 1) + rows[live]
        u, first, cnt = np.unique(key, return_index=True, return_counts=True)
        dup = u[cnt > 1]
        if len(dup) == 0:
            return
        idx = np.flatnonzero(live)
        i = idx[np.flatnonzero(key == dup[0])[1]]
        a = group[i]
        in_a = set(rows[(group == a)].tolist())
        for j in np.flatnonzero((cls == cls[i]) & (group != a) & (group < G)):
            b = group[j]
            if rows[j] not in in_a and rows[i] not in set(rows[group == b].tolist()):
                group[i], group[j] = b, a
                break
        else:
            return  # no fix found: leave the duplicate (a batch still holds k rows)


class OrderedSampler(_FixedBatches):
    """OrderedSampler: stratified batches in an optimised order (ORDERED, Napoli & White, arXiv 2605.05084).

    Per domain, with G = max(n_s, n_t) // k batches: (1) strata by weighted
    kernel k-means with a minimum cluster size (``strata`` clusters of at
    least ``min_cluster_size`` rows, eqs. (3)-(4) of psda.samplers.kmeans, in
    the discrepancy's feature map); (2) proportional allocation: stratum h
    gives c_h rows to every batch (sum c_h = k), its size rounded to c_h G
    rows by the cheapest moves; (3) the order: starting from a random
    order, rows of one stratum and domain are exchanged between batches
    while that lowers the summed error of the epoch's batches,
    sum_b ||(mean_s,b - mu_s) - (mean_t,b - mu_t)||^2 in feature space
    (psda.samplers.exchange). The batches are then fixed; each epoch serves
    them in a random order. n - G k rows of the larger domain sit in a spare
    group the search may swap in; the smaller domain's rows repeat to fill
    the G k places. So that every row is served equally often over epochs,
    each epoch a uniform random n - G k rows sit out (the spare rows take
    their places) and the repeats are re-drawn (psda.samplers.fixed).
    docs/samplers.md lists the deviations from the paper.

    Args: as VaRDASSSampler, and
        strata: clusters per domain, at most batch_size (default: batch_size).
        min_cluster_size: the fewest rows a stratum may hold in the k-means
            (default: G // 2, at least 1).
        ``passes`` applies to the k-means and to the order.

    Example:
        >>> import numpy as np, psda
        >>> x = np.random.default_rng(0).normal(size=(40, 2))
        >>> s = psda.batch_sampler("ordered", x, x + 1, 4, num_replicas=1, rank=0)
        >>> len(s), [len(h) for h in s.strata("source")], s.plan["source_counts"].tolist()
        (10, [10, 10, 10, 10], [1, 1, 1, 1])
    """

    name = "ordered"

    def __init__(self, source_features: Any, target_features: Any, batch_size: int, *, strata: Optional[int] = None,
                 min_cluster_size: Optional[int] = None, **kwargs: Any) -> None:
        for key, v in (("strata", strata), ("min_cluster_size", min_cluster_size)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{key} = {v!r}: want None (the default) or an int >= 1")
        self.n_strata, self.min_cluster_size = strata, min_cluster_size
        super().__init__(source_features, target_features, batch_size, **kwargs)

    def _config(self):
        return {**super()._config(), "strata": self.n_strata, "min_cluster_size": self.min_cluster_size}

    def _sizes(self, m: int, G: int, side: str):
        k = self.batch_size
        H = k if self.n_strata is None else self.n_strata
        mn = max(1, G // 2) if self.min_cluster_size is None else self.min_cluster_size
        if H > k:
            raise ValueError(f"strata = {H}: more strata than batch_size = {k}; every batch takes at least one row "
                             f"of every stratum: use strata <= {k}")
        if H * mn > m:
            raise ValueError(f"strata = {H} with min_cluster_size = {mn}: the {side} domain has {m} slots, fewer "
                             f"than strata * min_cluster_size = {H * mn}: use fewer strata or a smaller "
                             "min_cluster_size")
        return H, mn

    def _search(self, s, t):
        ps, pt = self._phi(s, t)
        rng = np.random.default_rng([self.seed, 0x0de4])
        k = self.batch_size
        G = max(self.n_source, self.n_target) // k
        xs_, ws_, gs_, cs_, rows_, extra_ = [], [], [], [], [], []
        plan: Dict[str, Any] = {}
        H0 = 0
        for dom, (side, phi) in enumerate((("source", ps), ("target", pt))):
            n = len(phi)
            # Slots: the rows, and in the smaller domain repeats of them
            # (each row once before any twice) to fill G k batch places.
            rows = np.arange(n) if n >= G * k else np.concatenate([np.arange(n), stream(rng, n, G * k - n)])
            x = (phi - phi.mean(0))[rows]
            H, mn = self._sizes(len(rows), G, side)
            group, hist = ordered_strata(x, H, mn, passes=self.passes, rng=rng,
                                         on_pass=self._reporter(side + " strata"))
            plan[side + "_strata_objective"] = np.array(hist)
            counts = round_strata(x, group, H, G, k)
            strata = [np.flatnonzero(group == h) for h in range(H)]
            plan[side + "_strata"] = pack_groups([rows[st] for st in strata])
            plan[side + "_counts"] = counts
            slots, g, stratum = deal(strata, counts, G, rng)
            # The start is a random order: the batches' labels are permuted.
            g = np.where(g < G, rng.permutation(G)[np.minimum(g, G - 1)], G)
            xs_.append(x[slots])
            ws_.append(np.full(len(slots), (1.0 if dom == 0 else -1.0) / k))
            gs_.append(g)
            cs_.append(stratum + H0)  # exchange classes: (domain, stratum)
            rows_.append(rows[slots])
            extra_.append(slots >= n)  # the places of repeats, re-drawn every epoch
            # What the rows that do not fit need to move every epoch (psda.samplers.fixed), and the
            # rebalancing passes after them, which see both domains: kept only when some do not fit.
            need = max(self.n_source, self.n_target) % k > 0 or self.n_source != self.n_target
            xr = phi - phi.mean(0)
            plan[side + "_chain"] = _chain(xr) if need else np.zeros(0, np.int64)
            plan[side + "_phi"] = xr if need else xr[:0]
            H0 += H
        X = np.concatenate(xs_)
        omega = np.ones(G + 1)
        omega[G] = 0.0  # the spare slots count in no batch
        cls = np.concatenate(cs_)
        group, hist = exchange(X, np.concatenate(ws_), np.concatenate(gs_), cls, np.zeros((G + 1, X.shape[1])),
                               omega, sign=1.0, passes=self.passes,
                               partners=self._partners(len(X) // k, X.shape[1]), rng=rng,
                               on_pass=self._reporter("order"))
        m0 = len(rows_[0])
        for dom, side in enumerate(("source", "target")):
            part = slice(0, m0) if dom == 0 else slice(m0, None)
            rows, g, c, extra = rows_[dom], group[part].copy(), cls[part], extra_[dom]
            _repair_duplicates(rows, g, c, G)
            keep = g < G
            # batches[b] = the k rows with group b, in slot order.
            order = np.lexsort((np.arange(keep.sum()), g[keep]))
            plan[side] = rows[keep][order].reshape(G, k)
            plan[side + "_extra"] = extra[keep][order].reshape(G, k)
            plan[side + "_spare"] = rows[~keep]
        plan["order_objective"] = np.array(hist)
        return plan

    def batches(self) -> np.ndarray:
        """The fixed batches in force: (source (G, k), target (G, k)) un-offset indices."""
        return self._plan["source"], self._plan["target"]

    def strata(self, side: str) -> List[np.ndarray]:
        """ORDERED's strata of "source" or "target" in force, as index arrays."""
        return unpack_groups(self._plan[side + "_strata"])

    def _check_plan(self, plan, where):
        k = self.batch_size
        G = max(self.n_source, self.n_target) // k
        for side, n in (("source", self.n_source), ("target", self.n_target)):
            b, extra, spare = (np.asarray(plan[side + key]) for key in ("", "_extra", "_spare"))
            if b.shape != (G, k) or extra.shape != (G, k) or extra.dtype != bool:
                raise ValueError(f"{where}[{side!r}] holds batches of shape {b.shape}, not ({G}, {k}): pass an "
                                 "unmodified state_dict()")
            check_partition(np.concatenate([b.ravel(), spare]), n, f"{where}[{side!r}]",
                            extra=np.concatenate([extra.ravel(), np.zeros(len(spare), bool)]))
            _check_mover(plan, side, n, max(self.n_source, self.n_target) % k > 0
                         or self.n_source != self.n_target, where)
            # The strata hold the slots (the smaller domain's repeats too): rows in range.
            check_rows(np.asarray(plan[side + "_strata"]["rows"]), n, f"{where}[{side + '_strata'!r}]")

    def _rebalance(self, plan, batches, rng):
        """A few passes of the order search over this epoch's batches, after rows moved in: swaps of one
        domain's rows of one stratum between batches, as at set-up (the rows served stay as drawn)."""
        G, k = batches[0].shape
        xs_, ws_, cs_, rows_ = [], [], [], []
        H0 = 0
        for dom, side in enumerate(("source", "target")):
            x = plan[side + "_phi"]
            strata = unpack_groups(plan[side + "_strata"])
            of = np.zeros(len(x), np.int64)
            for h, st in enumerate(strata[::-1]):  # a repeated row's first stratum wins
                of[st] = len(strata) - 1 - h
            rows = batches[dom].ravel()
            xs_.append(x[rows])
            ws_.append(np.full(len(rows), (1.0 if dom == 0 else -1.0) / k))
            cs_.append(of[rows] + H0)
            rows_.append(rows)
            H0 += len(strata)
        X, cls = np.concatenate(xs_), np.concatenate(cs_)
        g0 = np.tile(np.repeat(np.arange(G), k), 2)
        group, _ = exchange(X, np.concatenate(ws_), g0, cls, np.zeros((G, X.shape[1])), np.ones(G), sign=1.0,
                            passes=self.epoch_passes, partners=self._partners(G, X.shape[1]), rng=rng)
        out = []
        for dom in range(2):
            part = slice(0, G * k) if dom == 0 else slice(G * k, None)
            rows, g = rows_[dom], group[part].copy()
            _repair_duplicates(rows, g, cls[part], G)
            out.append(rows[np.argsort(g, kind="stable")].reshape(G, k))
        return out

    def _draw(self, plan, rng, count):
        N = max(self.n_source, self.n_target)
        G = len(plan["source"])
        order = rng.permutation(G)
        moved, outs = [], []
        for side, n in (("source", self.n_source), ("target", self.n_target)):
            x = plan[side + "_phi"] if len(plan[side + "_phi"]) else None
            chain = plan[side + "_chain"]
            b, out_rows = sit_out(plan[side], plan[side + "_spare"], rng, chain, x)
            moved.append(redraw_extras(b, plan[side + "_extra"], n, rng, chain, x))
            outs.append(out_rows)
        if self.epoch_passes and all(len(plan[side + "_phi"]) for side in ("source", "target")):
            moved = self._rebalance(plan, moved, rng)
        out = []
        for side, n, b, out_rows in zip(("source", "target"), (self.n_source, self.n_target), moved, outs):
            b = b[order]
            if count == G + 1:
                # drop_last=False: the short last batch is the rows that sat
                # out (each row exactly once), or for the smaller domain a
                # random batch's rows in random order.
                last = out_rows if n == N else rng.permutation(b[rng.integers(G)])
                b = np.concatenate([b, np.resize(last, (1, self.batch_size))])
            out.append(b[:count])
        return tuple(out)
