"""The unbiased imbalanced pairing (psda.samplers.imbalance; issue 27, item 5).

Checked against the definitions, not against psda's own numbers:
- the drawn variants use every row of the smaller domain P / n times in
  expectation (Monte Carlo with a tolerance from the binomial standard error);
- the replicated balanced matching is the paper's Stage 1 (and Stage 2) with
  the use counts fixed (enumeration over every assignment with those counts,
  costs from tests/conftest.py's coefficient-space formulas with the true δ);
- the squared bias over many plans goes to 0 for the drawn variants and not
  for the paper's (psda.variance.pooled_bias2, exact epochs);
- invalid values are refused naming the argument.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import psda
from psda.samplers.imbalance import draw_uses, match_counts
from psda.variance import DiscrepancyError, expected_error, pooled_bias2

from conftest import GAMMAS, brute_stage2, matching_costs, reference


@pytest.mark.parametrize("imbalance", ["random", "systematic"])
def test_expected_use_count_is_P_over_n(imbalance):
    # n = 7 rows, P = 17 = 2 * 7 + 3: each row used 2 times plus once more with probability 3/7.
    rng = np.random.default_rng(5)
    x = rng.normal(size=(7, 2))
    draws = 20000
    counts = np.zeros(7)
    for _ in range(draws):
        rep = draw_uses(x, 17, imbalance, rng)
        c = np.bincount(rep, minlength=7)
        assert len(rep) == 17 and set(c.tolist()) <= {2, 3}
        counts += c
    p = 3 / 7
    se = np.sqrt(p * (1 - p) / draws)
    # 5 binomial standard errors per row: a false alarm over 7 rows has probability < 1e-5.
    assert np.abs(counts / draws - 17 / 7).max() < 5 * se, counts / draws


def _brute_stage1_at_counts(C: np.ndarray, counts: np.ndarray) -> float:
    """min over assignments of the larger side (rows of C) to the smaller with exactly these counts."""
    nb, n = C.shape
    best = np.inf
    for f in itertools.product(range(n), repeat=nb):
        if (np.bincount(f, minlength=n) == counts).all():
            best = min(best, float(C[np.arange(nb), f].sum()))
    return best


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("ns,nt", [(7, 3), (3, 7), (6, 4), (4, 8)])
def test_replicated_match_is_the_papers_at_fixed_counts(kernel, ns, nt):
    rng = np.random.default_rng(ns * 10 + nt)
    s, t = rng.normal(size=(ns, 2)), rng.normal(0.4, 1.2, size=(nt, 2))
    k = 2
    ref = reference(s, t, k, "mmd", kernel, GAMMAS)
    C = ref.stage1()  # the paper's C^st with the true δ
    small = 1 if ns > nt else 0
    Cb = C if small else C.T  # rows: the larger domain
    paper = psda.match(s, t, batch_size=k, stages=2, kernel=kernel, gammas=GAMMAS)
    paper_counts = np.bincount(paper.pairs[:, small], minlength=min(ns, nt))
    # The paper's optimal extra-use set as the "draw", then three random draws.
    count_sets = [paper_counts] + [np.bincount(draw_uses(t if small else s, max(ns, nt), "random", rng),
                                               minlength=min(ns, nt)) for _ in range(3)]
    for counts in count_sets:
        rep = np.repeat(np.arange(min(ns, nt)), counts)
        m = match_counts(s, t, rep, k, 2, "mmd", kernel, GAMMAS, imbalance="random")
        assert (np.bincount(m.pairs[:, small], minlength=min(ns, nt)) == counts).all()
        c1, c2 = matching_costs(m, s, t)
        assert c1 == pytest.approx(_brute_stage1_at_counts(Cb, counts), rel=1e-9, abs=1e-12)
        # Stage 2 with the true δ: optimal for its pairs when P is even (δ's
        # terms are constant over perfect matchings). With P odd the single
        # pair's cost depends on δ, which the repeated rows shift: there it is
        # only near-optimal (docs/method.md, "Unbiased imbalanced pairing").
        C2, single = ref.stage2(m.pairs)
        best = brute_stage2(C2, single)
        if max(ns, nt) % 2 == 0:
            assert c2 == pytest.approx(best, rel=1e-9, abs=1e-12)
        else:
            assert best - 1e-9 <= c2 <= 1.05 * best
    # At the paper's counts, the paper's Stage 1 optimum.
    rep = np.repeat(np.arange(min(ns, nt)), paper_counts)
    m = match_counts(s, t, rep, k, 2, "mmd", kernel, GAMMAS, imbalance="random")
    assert matching_costs(m, s, t)[0] == pytest.approx(matching_costs(paper, s, t)[0], rel=1e-9, abs=1e-12)


def _bias(imbalance: str, plans: int, s, t, k: int, kernel: str = "linear"):
    ev = DiscrepancyError(s, t, kernel=kernel, gammas=GAMMAS)
    smp = psda.batch_sampler("double-paired", s, t, k, imbalance=imbalance, kernel=kernel, gammas=GAMMAS,
                             drop_last=False, num_replicas=1, rank=0)
    ests = []
    for p in range(plans):
        if p:
            smp.update(s, t)  # a new draw for the drawn variants, the same matching for "cost"
        # One epoch with drop_last=False serves every pair once: its mean is the plan's exactly.
        ests.append(expected_error(s, t, smp, epochs=1, evaluator=ev, first_epoch=p))
    return pooled_bias2(ests, ev), ests


@pytest.mark.parametrize("imbalance", ["random", "systematic"])
def test_bias_over_plans_vanishes_for_drawn_uses_not_for_the_papers(imbalance):
    rng = np.random.default_rng(3)
    s, t = rng.normal(size=(16, 2)), rng.normal(size=(9, 2))  # k divides P: an epoch is the plan
    k = 4
    (b_cost, noise_cost), ests = _bias("cost", 3, s, t, k)
    # The paper's: one plan, the same every time; its bias is its counts' offset, exactly.
    c = np.bincount(psda.match(s, t, batch_size=k, kernel="linear").pairs[:, 1], minlength=9)
    offset = t.T @ (c / 16 - 1 / 9)
    assert ests[0].bias2 == pytest.approx(float(offset @ offset), rel=1e-9)
    assert noise_cost == pytest.approx(0, abs=1e-15)
    (b, noise), ests = _bias(imbalance, 300, s, t, k)
    # Each plan alone is biased by its draw's offset; over plans the bias goes.
    assert np.mean([e.bias2 for e in ests]) > 10 * noise
    assert abs(b) < 5 * noise, (b, noise)
    assert b_cost > 20 * noise, (b_cost, noise)


def test_rbf_mean_error_matches_coefficient_space():
    rng = np.random.default_rng(9)
    s, t = rng.normal(size=(9, 2)), rng.normal(0.3, 1, size=(6, 2))
    ev = DiscrepancyError(s, t, kernel="rbf", gammas=GAMMAS)
    smp = psda.batch_sampler("paired", s, t, 3, kernel="rbf", gammas=GAMMAS, num_replicas=1, rank=0)
    batches = [list(b) for b in smp]
    total, n = ev.batch_sum(batches)
    ref = reference(s, t, 3, "mmd", "rbf", GAMMAS)
    c = -ref.delta.copy()
    for b in batches:
        c[np.asarray(b[:3])] += 1 / (3 * n)
        c[9 + np.asarray(b[3:]) - 9] -= 1 / (3 * n)
    assert ev.mean_error(total, n) == pytest.approx(float(ref.norm2(c)), rel=1e-9)


def test_draws_resume_and_are_recorded():
    rng = np.random.default_rng(1)
    s, t = rng.normal(size=(30, 2)), rng.normal(size=(11, 2))
    a = psda.batch_sampler("double-paired", s, t, 4, imbalance="random", num_replicas=1, rank=0)
    a.update(s, t)
    b = psda.batch_sampler("double-paired", s, t, 4, imbalance="random", num_replicas=1, rank=0)
    b.load_state_dict(a.state_dict())
    a.update(s, t)
    b.update(s, t)
    assert a.pending_matching.fingerprint == b.pending_matching.fingerprint
    assert a.pending_matching.imbalance == "random"
    # Successive plans draw anew.
    assert a.pending_matching.fingerprint != a.matching.fingerprint
    # A plan of another option is refused.
    c = psda.batch_sampler("double-paired", s, t, 4, num_replicas=1, rank=0)
    with pytest.raises(ValueError, match="imbalance"):
        c.load_state_dict(a.state_dict())


@pytest.mark.parametrize("bad", ["rand", None, 1])
def test_invalid_imbalance_names_the_argument(bad):
    x = np.zeros((10, 2))
    with pytest.raises(ValueError, match=r"imbalance = .*want one of 'cost', 'random', 'systematic'"):
        psda.batch_sampler("paired", x, x[:6], 2, imbalance=bad)
    with pytest.raises(ValueError, match=r"state_dict\['draws'\]"):
        s = psda.batch_sampler("paired", x + np.arange(10)[:, None], x[:6], 2, num_replicas=1, rank=0)
        s.load_state_dict({**s.state_dict(), "draws": -1})


def test_domainbed_hparam_reaches_psda_only():
    from psda.domainbed.samplers import make_batch_sampler

    rng = np.random.default_rng(2)
    s, t = rng.normal(size=(20, 2)), rng.normal(size=(12, 2))
    smp = make_batch_sampler("double-paired", s, t, 4, seed=0, imbalance="systematic", num_replicas=1, rank=0)
    assert smp.imbalance == "systematic" and smp.matching.imbalance == "systematic"
    # Samplers without extra uses to assign take the hparam without complaint.
    assert len(make_batch_sampler("uniform", s, t, 4, seed=0, imbalance="random", num_replicas=1, rank=0)) == 5


def test_systematic_plans_rotate_the_extra_uses():
    # Over m plans of the same features, every row's cumulative extra uses stay
    # within a few of m r / n (low-discrepancy offsets); independent uniform
    # draws wander by O(sqrt(m)) (binomial SD here ~6.9), which this bound excludes.
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 2))
    P, m = 41, 200  # r = 11 extra uses among n = 30 rows
    from psda.samplers.imbalance import rotation

    sys_counts = sum(np.bincount(draw_uses(x, P, "systematic", rng, rotation(7, p)), minlength=30) - 1
                     for p in range(m))
    rnd_counts = sum(np.bincount(draw_uses(x, P, "random", rng), minlength=30) - 1 for _ in range(m))
    want = m * 11 / 30
    assert np.abs(sys_counts - want).max() <= 3, sys_counts
    assert np.abs(rnd_counts - want).max() > 3  # the bound is one independent draws break
