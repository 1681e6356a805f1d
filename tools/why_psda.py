"""Why PSDA helps when it does (issue 27, item 4): the discrepancy gradient's error, split
into bias² and variance, per sampler, at checkpoints of a training trajectory.

What it does:

1. Trains, per discrepancy, one UDA_MMD (UDA_CORAL) model (``psda.domainbed.algorithms``,
   the same initial weights and batches for both; DomainBed's MLP
   784-256-256-256 from ``domainbed.networks`` and its linear classifier, Adam) on
   RotatedFashionMNISTFlat at the evidence protocol's sizes (docs/evidence.md: 1,000
   images per environment, test env 0, DomainBed's splits: out 20 %, UDA 20 % of the
   test env's in-split; source = the union of the five training in-splits, n_s = 4,000,
   target = the UDA split, n_t = 160), with uniform batches and fixed hparams (k = 32 per
   domain, lr 1e-3, weight decay 0, trade-off 1, S = 1,000 steps), keeping the weights at
   the checkpoints (steps 0, 250, 500, 1000).
2. At each checkpoint, for each sampler variant, builds the sampler through
   ``psda.batch_sampler`` from the features of the model at a checkpoint (as a refresh
   does) and goes over all batches of E epochs (fewer where --min_batches batches take
   fewer: k = 8 has 500 per epoch). For each batch b it takes the gradient
   g_b of the discrepancy (psda's ``rbf_mmd``, the V-statistic, and ``coral``) w.r.t. the
   featurizer's parameters and the task gradient t_b (cross-entropy of the batch's source
   rows, all parameters). The reference is the full-data gradient g (all 4,000 source
   rows against all 160 UDA rows, the same estimator; MMD computed blockwise, see
   :func:`full_mmd_grad`) and the full task gradient t. Reported relative to ||g||²:
   total = mean_b ||g_b − g||², bias² = ||mean_b g_b − g||², variance = total − bias², the
   cosine between mean_b g_b and g, and floor = variance / B, the part of the bias²
   estimate that B independent batches would leave from noise alone (bias² near the
   floor is not resolved), and proj = ⟨mean_b g_b, g⟩ / ||g||², how hard the batches pull
   along g. For MMD the bias is split into the V-statistic's part, which every sampler
   with k distinct rows per domain has (:func:`vstat_bias`, closed form), and the rest.
3. Variants: uniform / paired / double-paired (variance reduction; Stage 1 alone vs both
   stages); random-pairs (PSDA's fixed quadruplets drawn at random: the fixed coupling
   without the optimisation); double-paired built from the step-0 features and from the
   previous checkpoint's (stale features: the protocol refreshes every 500 steps, so the
   step-500 features at step 1000 are what its training used); k in {8, 32, 128} for
   uniform and double-paired. The trade-off λ scales g_b and g alike, so the relative
   errors above do not depend on it; its effect is the size of the discrepancy noise
   against the task gradient, reported as λ·rms(g_b − g) / ||t|| and against the task's
   own batch noise, and the whole objective's gradient error (task + λ × discrepancy,
   ||o_b − o||² / ||o||² split the same way) for λ in {0.1, 1, 10}.

Outputs under --out: why.jsonl (one line per discrepancy, checkpoint and variant, every
figure), why.md (the tables), why.png (bias² and variance per variant and checkpoint).
Weights go to --out/checkpoints (ignored by git: rebuild them with this command).

Deterministic per --seed (torch's global seed is set before the model is built; the
samplers have their own seeded generators). One thread by default (--threads).

Commands (DomainBed on PYTHONPATH, Fashion-MNIST from Debian's dataset-fashion-mnist or
--data_dir)::

    export PYTHONPATH=$PWD/python:/work/shared/DomainBed
    nice -n 15 python tools/why_psda.py --out results/why            # the committed run
    nice -n 15 python tools/why_psda.py --out /tmp/why --env_size 120 --steps 4 \\
        --checkpoints 0 2 4 --epochs 1 --k 8 --ks 8 --discrepancies mmd   # ~1 min: a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

#: Variant labels; the sampler name, the batch size key and where its features come from.
FRESH, STALE0, STALEPREV = "fresh", "step 0", "previous checkpoint"


# -- the estimators' gradients ------------------------------------------------------------


def _kernel_sum(a, b, gammas):
    """Σ_ij Σ_γ exp(−γ‖a_i − b_j‖²): psda's rbf_mmd kernel (same distance formula, clamped at 0)."""
    d = ((a * a).sum(1, keepdim=True) - 2.0 * a @ b.t() + (b * b).sum(1)).clamp_min(0.0)
    return sum((-g * d).exp().sum() for g in gammas)


def full_mmd_feature_grad(zs, zt, gammas, block: int = 1024, weights=(1.0, 1.0, -2.0)):
    """Returns (∂/∂zs, ∂/∂zt) of w_ss V_ss + w_tt V_tt + w_st V_st, the kernel means
    V_ss = mean_ij κ(zs_i, zs_j), V_tt likewise, V_st = mean_ij κ(zs_i, zt_j) over all rows:
    with the default weights (1, 1, −2), the V-statistic MMD² that ``rbf_mmd(zs, zt)``
    computes. No n×n matrix is formed: each mean is summed over row blocks of at most
    ``block`` rows, each block's sum back-propagated into the features at once.
    Memory O(block² + n d)."""
    import torch

    zs = zs.detach().clone().requires_grad_(True)
    zt = zt.detach().clone().requires_grad_(True)
    ns, nt = zs.shape[0], zt.shape[0]
    for a, b, w in ((zs, zs, weights[0] / ns ** 2), (zt, zt, weights[1] / nt ** 2),
                    (zs, zt, weights[2] / (ns * nt))):
        if w == 0:
            continue
        for i in range(0, a.shape[0], block):
            for j in range(0, b.shape[0], block):
                (w * _kernel_sum(a[i:i + block], b[j:j + block], gammas)).backward()
    return tuple(z.grad if z.grad is not None else torch.zeros_like(z) for z in (zs, zt))


def full_mmd_grad(featurizer, xs, xt, gammas, block: int = 1024, weights=(1.0, 1.0, -2.0)):
    """Returns the gradient (one flat vector over ``featurizer``'s parameters) of
    rbf_mmd(featurizer(xs), featurizer(xt)) on the full sets (or of the weighted kernel
    means, see :func:`full_mmd_feature_grad`), blockwise: the feature gradient first,
    then one backward pass through the featurizer (the chain rule, so no kernel matrix
    larger than block² exists)."""
    import torch

    params = [p for p in featurizer.parameters()]
    z = featurizer(torch.cat([xs, xt]))
    gs, gt = full_mmd_feature_grad(z[: xs.shape[0]], z[xs.shape[0]:], gammas, block, weights)
    grads = torch.autograd.grad(z, params, grad_outputs=torch.cat([gs, gt]))
    return torch.cat([g.reshape(-1) for g in grads])


def vstat_bias(featurizer, xs, xt, gammas, k: int, block: int = 1024):
    """Returns the bias of the batch V-statistic's gradient that comes from the V-statistic
    alone: E[∇ rbf_mmd(batch)] − ∇ rbf_mmd(full) for batches of k distinct rows per
    domain drawn uniformly without replacement (flat, featurizer parameters).

    Why: κ(z, z) is constant for the RBF mixture, so only the off-diagonal pairs of a
    mean over m rows carry gradient, with weight (m − 1)/m of the U-statistic's
    U_ss = mean_{i≠j} κ(zs_i, zs_j): E[∇V_ss(batch)] = (k − 1)/k ∇U_ss while
    ∇V_ss(full) = (n_s − 1)/n_s ∇U_ss. The cross mean is unbiased. Hence the bias is
    (1/n_s − 1/k) ∇U_ss + (1/n_t − 1/k) ∇U_tt, with ∇U = n/(n − 1) ∇V; shrinking in k
    as 1/k, the same for every sampler whose batches hold k distinct rows per domain."""
    ns, nt = xs.shape[0], xt.shape[0]
    ws = (1.0 / ns - 1.0 / k) * ns / (ns - 1)
    wt = (1.0 / nt - 1.0 / k) * nt / (nt - 1)
    return full_mmd_grad(featurizer, xs, xt, gammas, block, weights=(ws, wt, 0.0))


def _flat(grads, params):
    import torch

    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params)])


# -- the bias / variance split ------------------------------------------------------------


class ErrorSplit:
    """ErrorSplit accumulates per-batch gradients g_b (discrepancy, featurizer parameters)
    and t_b (task, all parameters) against their full-data values g and t, in one pass
    and O(parameters) memory, and splits the error.

    The discrepancy gradient lives on the featurizer's parameters, the first ``len(g)``
    entries of the task's vector (``featurizer`` then ``classifier``, as
    ``torch.nn.Sequential(featurizer, classifier).parameters()`` orders them). The whole
    objective's gradient is o_b = t_b + λ [g_b, 0], so its error for any λ follows from
    three sums: ||o_b − o||² = ||t_b − t||² + 2λ⟨g_b − g, t_b − t⟩ + λ²||g_b − g||².

    Example:
        >>> import torch
        >>> s = ErrorSplit(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0, 1.0]))
        >>> s.add(torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0, 1.0]))
        >>> s.add(torch.tensor([0.0, 0.0]), torch.tensor([0.0, 0.0, 1.0]))
        >>> s.disc()["bias2"], s.disc()["total"]
        (0.0, 1.0)
    """

    def __init__(self, g, t):
        import torch

        self.g, self.t = g.double(), t.double()
        self.m = g.numel()
        self.B = 0
        self.sum_g = torch.zeros_like(self.g)
        self.sum_t = torch.zeros_like(self.t)
        self.gg = self.tt = self.tt_feat = self.gt = 0.0
        self.first_epoch_sum, self.first_epoch_B = None, 0

    def add(self, gb, tb) -> None:
        """Adds one batch's gradients."""
        dg, dt = gb.double() - self.g, tb.double() - self.t
        self.B += 1
        self.sum_g += gb.double()
        self.sum_t += tb.double()
        self.gg += float(dg @ dg)
        self.tt += float(dt @ dt)
        self.tt_feat += float(dt[: self.m] @ dt[: self.m])
        self.gt += float(dg @ dt[: self.m])

    def end_epoch(self) -> None:
        """Marks the end of the first epoch (its mean gives bias2_epoch1, a stability check)."""
        if self.first_epoch_sum is None:
            self.first_epoch_sum, self.first_epoch_B = self.sum_g.clone(), self.B

    @staticmethod
    def _split(total: float, mean, ref, B: int) -> Dict[str, float]:
        ref2 = float(ref @ ref)
        bias2 = float((mean - ref) @ (mean - ref))
        var = total - bias2
        cos = float(mean @ ref) / math.sqrt(max(float(mean @ mean) * ref2, 1e-300))
        return {"total": total / ref2, "bias2": bias2 / ref2, "variance": var / ref2, "cosine": cos,
                "proj": float(mean @ ref) / ref2, "floor": var / B / ref2, "ref_norm": math.sqrt(ref2),
                "rms_error": math.sqrt(total)}

    def disc(self) -> Dict[str, float]:
        """The discrepancy gradient's split, relative to ||g||² (see the module docstring)."""
        out = self._split(self.gg / self.B, self.sum_g / self.B, self.g, self.B)
        if self.first_epoch_sum is not None and self.first_epoch_B < self.B:
            d = self.first_epoch_sum / self.first_epoch_B - self.g
            out["bias2_epoch1"] = float(d @ d) / float(self.g @ self.g)
        return out

    def residual_bias2(self, b) -> float:
        """||mean_b g_b − g − b||² / ||g||²: the bias left after a known part b (see :func:`vstat_bias`)."""
        d = self.sum_g / self.B - self.g - b.double()
        return float(d @ d) / float(self.g @ self.g)

    def task(self) -> Dict[str, float]:
        """The task gradient's split, relative to ||t||²; rms over the featurizer part too."""
        out = self._split(self.tt / self.B, self.sum_t / self.B, self.t, self.B)
        out["feat_norm"] = float(self.t[: self.m].norm())
        return out

    def objective(self, tradeoff: float) -> Dict[str, float]:
        """The whole objective's gradient t + λ g: its split relative to ||o||²."""
        import torch

        pad = lambda v: torch.cat([v, torch.zeros(self.t.numel() - self.m, dtype=v.dtype)])  # noqa: E731
        total = (self.tt + 2 * tradeoff * self.gt + tradeoff ** 2 * self.gg) / self.B
        mean = (self.sum_t + tradeoff * pad(self.sum_g)) / self.B
        return self._split(total, mean, self.t + tradeoff * pad(self.g), self.B)


def measure(featurizer, classifier, xs, ys, xt, batches: Iterable[Iterable[int]], disc: Callable, g, t,
            epoch_ends: Sequence[int] = ()) -> ErrorSplit:
    """Returns the :class:`ErrorSplit` of ``batches`` (lists of ConcatDataset indices: the
    source rows in [0, n_s), then the target rows offset by n_s, as every psda sampler
    yields them) against the full-data gradients g (discrepancy, featurizer parameters)
    and t (task, featurizer then classifier parameters). ``epoch_ends`` lists the batch
    counts at which an epoch ended."""
    import torch
    import torch.nn.functional as F

    fparams = list(featurizer.parameters())
    params = fparams + list(classifier.parameters())
    split = ErrorSplit(g, t)
    ns = xs.shape[0]
    ends = set(epoch_ends)
    for b, idx in enumerate(batches):
        idx = np.asarray(idx, dtype=np.int64)
        k = len(idx) // 2
        s, tt = torch.from_numpy(idx[:k]), torch.from_numpy(idx[k:] - ns)
        z = featurizer(torch.cat([xs[s], xt[tt]]))
        zs, zt = z[:k], z[k:]
        gb = _flat(torch.autograd.grad(disc(zs, zt), fparams, retain_graph=True, allow_unused=True), fparams)
        tb = _flat(torch.autograd.grad(F.cross_entropy(classifier(zs), ys[s]), params, allow_unused=True), params)
        split.add(gb, tb)
        if b + 1 in ends:
            split.end_epoch()
    return split


def full_grads(featurizer, classifier, xs, ys, xt, discrepancy: str, gammas, block: int = 1024):
    """Returns (g, t, value): the full-data discrepancy gradient (featurizer parameters),
    the full task gradient (mean cross-entropy over all source rows; all parameters) and
    the full-data discrepancy. MMD: blockwise (:func:`full_mmd_grad`); CORAL: direct
    (two d×d covariances of all rows, O(n d²), no n×n matrix)."""
    import torch
    import torch.nn.functional as F

    from psda.domainbed.algorithms import coral, rbf_mmd

    fparams = list(featurizer.parameters())
    params = fparams + list(classifier.parameters())
    if discrepancy == "mmd":
        g = full_mmd_grad(featurizer, xs, xt, gammas, block)
        with torch.no_grad():
            value = _full_mmd_value(featurizer(xs), featurizer(xt), gammas, block)
    else:
        z = featurizer(torch.cat([xs, xt]))
        d = coral(z[: xs.shape[0]], z[xs.shape[0]:])
        g = _flat(torch.autograd.grad(d, fparams), fparams)
        value = float(d.detach())
    t = _flat(torch.autograd.grad(F.cross_entropy(classifier(featurizer(xs)), ys), params), params)
    return g.detach(), t.detach(), value


def _full_mmd_value(zs, zt, gammas, block):
    ns, nt = zs.shape[0], zt.shape[0]
    total = 0.0
    for a, b, w in ((zs, zs, 1.0 / ns ** 2), (zt, zt, 1.0 / nt ** 2), (zs, zt, -2.0 / (ns * nt))):
        for i in range(0, a.shape[0], block):
            for j in range(0, b.shape[0], block):
                total += w * float(_kernel_sum(a[i:i + block], b[j:j + block], gammas))
    return total


# -- data, model, trajectory --------------------------------------------------------------


def load_data(data_dir: Optional[str], env_size: int, test_env: int, trial: int,
              holdout: float = 0.2, uda_holdout: float = 0.2):
    """Returns (xs, ys, xt, xtest, ytest) as torch tensors: DomainBed's train.py splits of
    RotatedFashionMNISTFlat (``misc.split_dataset`` seeded by ``seed_hash(trial, env)``):
    source = the training environments' in-splits concatenated in environment order,
    target = the test environment's UDA split, test = its remaining in-split."""
    import torch
    from domainbed.lib import misc

    from psda.domainbed.fashion import RotatedFashionMNISTFlat

    ds = RotatedFashionMNISTFlat(data_dir, [test_env], {"psda_env_size": env_size})

    def stack(split):
        xy = [split[i] for i in range(len(split))]
        return torch.stack([x for x, _ in xy]), torch.tensor([int(y) for _, y in xy])

    src_x, src_y = [], []
    for i, env in enumerate(ds):
        out, in_ = misc.split_dataset(env, int(len(env) * holdout), misc.seed_hash(trial, i))
        if i == test_env:
            uda, in_ = misc.split_dataset(in_, int(len(in_) * uda_holdout), misc.seed_hash(trial, i))
            xt, _ = stack(uda)
            xtest, ytest = stack(in_)
        else:
            x, y = stack(in_)
            src_x.append(x)
            src_y.append(y)
    return torch.cat(src_x), torch.cat(src_y), xt, xtest, ytest


def make_algorithm(hparams: dict, seed: int, input_dim: int = 784, num_classes: int = 10, discrepancy: str = "mmd"):
    """Returns psda's UDA_MMD (or UDA_CORAL) with DomainBed's networks (MLP featurizer from
    ``domainbed.networks.Featurizer``, linear classifier), built after torch.manual_seed(seed):
    the same initial weights for both."""
    import torch

    from psda.domainbed import algorithms

    torch.manual_seed(seed)
    return getattr(algorithms, "UDA_" + discrepancy.upper())((input_dim,), num_classes, 5, hparams)


def train(alg, xs, ys, xt, k: int, steps: int, checkpoints: Sequence[int], seed: int) -> Dict[int, dict]:
    """Trains ``alg`` for ``steps`` steps on uniform batches (``psda.batch_sampler("uniform")``,
    epochs after epochs) and returns {step: state_dict copy} at ``checkpoints``."""
    import copy

    import psda

    ns = xs.shape[0]
    sampler = psda.batch_sampler("uniform", np.zeros((ns, 1)), np.zeros((xt.shape[0], 1)), k, seed=seed,
                                 num_replicas=1, rank=0)
    saved = {}
    step, epoch = 0, 0
    if 0 in checkpoints:
        saved[0] = copy.deepcopy(alg.state_dict())
    while step < steps:
        sampler.set_epoch(epoch)
        for idx in sampler:
            idx = np.asarray(idx)
            s, t = idx[:k], idx[k:] - ns
            alg.update([(xs[s], ys[s])], [xt[t]])
            step += 1
            if step in checkpoints:
                saved[step] = copy.deepcopy(alg.state_dict())
            if step >= steps:
                break
        epoch += 1
    return saved


def accuracy(alg, x, y) -> float:
    import torch

    with torch.no_grad():
        return float((alg.predict(x).argmax(1) == y).float().mean())


# -- the run ------------------------------------------------------------------------------


def variants(ks: Sequence[int], k: int, available: Sequence[str]) -> List[Tuple[str, str, int, str]]:
    """Returns the (group, sampler, k, features) rows measured at each checkpoint;
    samplers missing from ``available`` (psda.SAMPLERS) are left out by the caller's report."""
    rows = [("a/e variance", "uniform", k, FRESH), ("a/e variance", "paired", k, FRESH),
            ("a/e variance", "double-paired", k, FRESH), ("b coupling", "random-pairs", k, FRESH),
            ("c stale", "double-paired", k, STALE0), ("c stale", "double-paired", k, STALEPREV)]
    for kk in ks:
        if kk != k:
            rows += [("d batch size", "uniform", kk, FRESH), ("d batch size", "double-paired", kk, FRESH)]
    return [r for r in rows if r[1] in available]


def label(sampler: str, k: int, features: str, k_main: int) -> str:
    out = sampler
    if k != k_main:
        out += f" k={k}"
    if features != FRESH:
        out += f" ({features} features)"
    return out


def measure_trajectory(args, alg, saved: Dict[int, dict], dname: str, disc: Callable, rows, xs, ys, xt, xtest,
                       ytest, gammas, t0: float) -> List[dict]:
    """Returns one record per (checkpoint, variant) of one trajectory (see the module docstring)."""
    import torch

    import psda

    features: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
    records = []
    steps_sorted = sorted(saved)
    for ci, step in enumerate(steps_sorted):
        alg.load_state_dict(saved[step])
        f, c = alg.featurizer, alg.classifier
        with torch.no_grad():
            features[step] = (f(xs).numpy(), f(xt).numpy())
        acc = {"source_acc": accuracy(alg, xs, ys), "test_acc": accuracy(alg, xtest, ytest)}
        prev = steps_sorted[ci - 1] if ci else step
        g, t, value = full_grads(f, c, xs, ys, xt, dname, gammas)
        vbias = {kk: vstat_bias(f, xs, xt, gammas, kk).detach() for kk in args.ks} if dname == "mmd" else {}
        for group, name, k, feat in rows:
            src = {FRESH: step, STALE0: steps_sorted[0], STALEPREV: prev}[feat]
            if feat != FRESH and (src == step or (feat == STALEPREV and src == steps_sorted[0])):
                continue  # identical to a row already measured
            opts = {"seed": args.seed, "num_replicas": 1, "rank": 0}
            if name != "uniform":
                opts["discrepancy"] = dname
            if name == "random-pairs":
                opts["stages"] = 2
            tb = time.time()
            sampler = psda.batch_sampler(name, *features[src], k, **opts)
            built = time.time() - tb
            # E epochs, fewer where one epoch alone has min_batches batches (k = 8: 500)
            epochs = max(1, min(args.epochs, -(-args.min_batches // len(sampler))))
            batches, ends = [], []
            for e in range(epochs):
                sampler.set_epoch(e)
                batches += [list(b) for b in sampler]
                ends.append(len(batches))
            split = measure(f, c, xs, ys, xt, batches, disc, g, t, ends)
            rec = {"discrepancy": dname, "trajectory": "UDA_" + dname.upper(), "step": step, "group": group,
                   "sampler": name, "k": k, "features_from_step": src, "label": label(name, k, feat, args.k),
                   "batches": split.B,
                   "epochs": epochs, "build_s": round(built, 3), "full_value": value, **acc,
                   "disc": split.disc(), "task": split.task(),
                   "objective": {str(lam): split.objective(lam) for lam in args.tradeoffs}}
            d = rec["disc"]
            if k in vbias:
                d["vstat_bias2"] = float(vbias[k] @ vbias[k]) / float(g @ g)
                d["other_bias2"] = split.residual_bias2(vbias[k])
            rec["noise_vs_task"] = {str(lam): lam * d["rms_error"] / rec["task"]["feat_norm"]
                                    for lam in args.tradeoffs}
            task_rms_feat = math.sqrt(split.tt_feat / split.B)  # the task's batch noise on the featurizer
            rec["noise_vs_task_noise"] = {str(lam): lam * d["rms_error"] / task_rms_feat
                                          for lam in args.tradeoffs}
            records.append(rec)
            print(f"why: {dname} step {step} {rec['label']}: total {d['total']:.3g} bias2 {d['bias2']:.3g} "
                  f"var {d['variance']:.3g} cos {d['cosine']:.4f} ({split.B} batches, "
                  f"{time.time() - t0:.0f} s)", flush=True)
    return records


def run(args) -> List[dict]:
    import torch

    import psda

    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    xs, ys, xt, xtest, ytest = load_data(args.data_dir, args.env_size, args.test_env, args.trial)
    hparams = {"lr": args.lr, "weight_decay": 0.0, "mmd_gamma": args.tradeoff, "nonlinear_classifier": False,
               "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0}

    from psda.domainbed.algorithms import coral, rbf_mmd

    gammas = tuple(psda.DEFAULT_GAMMAS)
    discs = {"mmd": lambda a, b: rbf_mmd(a, b, gammas), "coral": coral}
    rows = variants(args.ks, args.k, psda.SAMPLERS)
    missing = sorted({r[1] for r in variants(args.ks, args.k, ("uniform", "paired", "double-paired",
                                                                "random-pairs"))} - set(psda.SAMPLERS))
    ckdir = os.path.join(args.out, "checkpoints")
    os.makedirs(ckdir, exist_ok=True)
    records = []
    for dname in args.discrepancies:
        # each table on its own algorithm's trajectory: same initial weights, same batches
        alg = make_algorithm(hparams, args.seed, xs.shape[1], discrepancy=dname)
        saved = train(alg, xs, ys, xt, args.k, args.steps, args.checkpoints, args.seed)
        for step, sd in saved.items():
            torch.save(sd, os.path.join(ckdir, f"{dname}-step{step}.pt"))
        print(f"why: UDA_{dname.upper()} trained {args.steps} steps ({time.time() - t0:.0f} s); n_s={len(xs)} "
              f"n_t={len(xt)}", flush=True)
        records += measure_trajectory(args, alg, saved, dname, discs[dname], rows, xs, ys, xt, xtest, ytest,
                                      gammas, t0)
    meta = {"hparams": hparams, "k": args.k, "steps": args.steps, "checkpoints": sorted(args.checkpoints),
            "epochs": args.epochs, "min_batches": args.min_batches, "seed": args.seed, "trial": args.trial,
            "test_env": args.test_env,
            "env_size": args.env_size, "n_source": len(xs), "n_target": len(xt), "n_test": len(xtest),
            "samplers_missing": missing, "gammas": list(gammas), "wall_s": round(time.time() - t0, 1),
            "network": "domainbed.networks.Featurizer (MLP 784-256-256-256) + linear Classifier",
            "torch_threads": args.threads}
    write_records(os.path.join(args.out, "why.jsonl"), meta, records)
    with open(os.path.join(args.out, "why.md"), "w") as fh:
        fh.write(tables(records, meta))
    figure(records, os.path.join(args.out, "why.png"), args.k)
    print(f"why: wrote {args.out}/why.jsonl, why.md, why.png in {time.time() - t0:.0f} s", flush=True)
    return records


def write_records(path: str, meta: dict, records: List[dict]) -> None:
    """Write a run's JSON lines: {"meta": meta} first, then one line per record (also
    tools/why_batch_refresh.py's)."""
    with open(path, "w") as fh:
        fh.write(json.dumps({"meta": meta}) + "\n")
        for r in records:
            fh.write(json.dumps(r) + "\n")


def tables(records: List[dict], meta: dict) -> str:
    """The markdown tables of why.md."""
    h = meta["hparams"]
    out = [f"# Discrepancy gradient error per sampler (tools/why_psda.py)\n",
           f"RotatedFashionMNISTFlat, {meta['env_size']}/env, test env {meta['test_env']}, trial {meta['trial']}: "
           f"n_s = {meta['n_source']}, n_t = {meta['n_target']}. Trajectories: UDA_MMD (MMD tables) and UDA_CORAL "
           f"(CORAL tables), the same initial weights and uniform batches, "
           f"k = {meta['k']}, lr {h['lr']}, trade-off {h['mmd_gamma']}, weight decay 0, {meta['steps']} steps, "
           f"{meta['network']}, seed {meta['seed']}. Each row: all batches of E = {meta['epochs']} epochs "
           f"(drop_last), fewer where {meta['min_batches']} batches take fewer epochs (B below). "
           f"Relative to ||g||²: total = mean ||g_b − g||², bias² = ||mean g_b − g||², "
           f"var = total − bias², floor = var / B (bias² at or below it is noise), cos(mean g_b, g). "
           f"Samplers missing from psda.SAMPLERS: {', '.join(meta['samplers_missing']) or 'none'}. "
           f"Wall time {meta['wall_s']} s.\n"]
    for dname in sorted({r["discrepancy"] for r in records}, key=["mmd", "coral"].index):
        rs = [r for r in records if r["discrepancy"] == dname]
        out.append(f"\n## {dname.upper()}: discrepancy gradient (featurizer), UDA_{dname.upper()} trajectory\n")
        out.append("proj = ⟨mean g_b, g⟩ / ‖g‖²: the batches' mean pull along g, against the full data's 1. "
                   "source / test acc: the trajectory's model at the step (test: the test env's in-split).\n")
        out.append("bias² (epoch 1): from the first epoch's batches alone; close to bias² where E epochs are "
                   "enough (PSDA's epochs reuse one matching, so its epoch mean changes only by the shuffle).\n")
        vs = dname == "mmd"
        if vs:
            out.append("V-stat bias²: ||b||² / ||g||², b the bias every sampler with k distinct rows per domain "
                       "has from the V-statistic alone (κ(z, z) is constant, so a batch weights the off-diagonal "
                       "pairs by (k − 1)/k, the full set by (n − 1)/n; `vstat_bias`). other bias²: "
                       "||mean g_b − g − b||² / ||g||², the bias the sampler's coupling adds (noise: ~floor).\n")
        extra = " V-stat bias² | other bias² |" if vs else ""
        out.append("| step | source acc | test acc | full value | variant | B | total | bias² | var | floor | "
                   f"bias² (epoch 1) |{extra} cos | proj |")
        out.append("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if vs else "")
                   + "---:|---:|")
        for r in rs:
            d = r["disc"]
            e1 = f"{d['bias2_epoch1']:.4g}" if "bias2_epoch1" in d else "–"
            ex = f" {d['vstat_bias2']:.4g} | {d['other_bias2']:.4g} |" if vs else ""
            out.append(f"| {r['step']} | {r['source_acc']:.3f} | {r['test_acc']:.3f} | {r['full_value']:.4g} | "
                       f"{r['label']} | {r['batches']} | {d['total']:.4g} | {d['bias2']:.4g} | {d['variance']:.4g} | "
                       f"{d['floor']:.2g} | {e1} |{ex} {d['cosine']:.4f} | {d['proj']:.3f} |")
        lams = sorted(rs[0]["objective"], key=float)
        out.append(f"\n### {dname.upper()}: the whole objective's gradient (task + λ × discrepancy), "
                   "relative to ||o||², and the discrepancy noise against the task gradient\n")
        out.append("λ·rms(g_b − g) / ||t_feat||: the discrepancy's batch noise against the full task gradient on "
                   "the featurizer; / rms(t_b − t): against the task's own batch noise.\n")
        head = " | ".join(f"λ={l}: total / bias² | λ={l}: noise/‖t‖ / noise/task noise" for l in lams)
        out.append(f"| step | variant | task total / bias² | {head} |")
        out.append("|---:|---|---|" + "---|" * (2 * len(lams)))
        for r in rs:
            if r["group"] == "c stale":
                continue
            cells = []
            for l in lams:
                o = r["objective"][l]
                cells.append(f"{o['total']:.3g} / {o['bias2']:.2g}")
                cells.append(f"{r['noise_vs_task'][l]:.3g} / {r['noise_vs_task_noise'][l]:.3g}")
            tk = r["task"]
            out.append(f"| {r['step']} | {r['label']} | {tk['total']:.3g} / {tk['bias2']:.2g} | " + " | ".join(cells)
                       + " |")
    return "\n".join(out) + "\n"


_SHORT = {"uniform": "U", "paired": "P", "double-paired": "DP", "random-pairs": "RP"}


def _short(r: dict, k_main: int) -> str:
    out = _SHORT.get(r["sampler"], r["sampler"])
    if r["k"] != k_main:
        out += f" k{r['k']}"
    if r["features_from_step"] != r["step"]:
        out += " f@0" if r["features_from_step"] == 0 else " f@prev"
    return out


def figure(records: List[dict], path: str, k_main: int) -> None:
    """bias² (red, from the axis) and variance (blue, stacked on it: the bar's top is the
    total) per variant, one panel per (discrepancy, checkpoint), log scale; a black tick
    marks the floor var / B, below which a bias² is not resolved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    discs = sorted({r["discrepancy"] for r in records}, key=["mmd", "coral"].index)
    steps = sorted({r["step"] for r in records})
    # the variants' order of the last checkpoint, which has them all
    labels = list(dict.fromkeys(_short(r, k_main) for r in sorted(records, key=lambda r: -r["step"])))
    fig, axes = plt.subplots(len(discs), len(steps), figsize=(2.9 * len(steps), 2.9 * len(discs) + 0.6),
                             squeeze=False, sharey="row", sharex=True)
    for i, dname in enumerate(discs):
        lo = min(max(min(r["disc"]["bias2"], r["disc"]["floor"]), 1e-7)
                 for r in records if r["discrepancy"] == dname) / 3
        for j, step in enumerate(steps):
            ax = axes[i][j]
            byl = {_short(r, k_main): r["disc"] for r in records if r["discrepancy"] == dname and r["step"] == step}
            x = np.arange(len(labels))
            get = lambda key: np.array([max(byl[l][key], lo) if l in byl else np.nan for l in labels])  # noqa: E731
            b2, tot, floor = get("bias2"), get("total"), get("floor")
            ax.bar(x, b2 - lo, bottom=lo, color="#c0392b", label="bias²")
            ax.bar(x, tot - b2, bottom=b2, color="#5dade2", label="variance")
            ax.scatter(x, floor, marker="_", color="black", s=60, zorder=3, label="floor var/B")
            ax.set_yscale("log")
            ax.set_xticks(x)
            ax.set_xticklabels(labels, rotation=90, fontsize=7)
            ax.set_title(f"{dname.upper()}, step {step}", fontsize=9)
            if j == 0:
                ax.set_ylabel("error / ‖g‖²")
            ax.grid(axis="y", which="major", alpha=0.3)
    axes[0][0].legend(fontsize=6, loc="upper left")
    fig.text(0.5, 0.005, f"U uniform, P paired, DP double-paired, RP random-pairs; k{{n}}: k = n (else {k_main}); "
             "f@0, f@prev: matched on the features of step 0, of the previous checkpoint", ha="center", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=150)
    plt.close(fig)


def add_trajectory_args(p: argparse.ArgumentParser) -> None:
    """The trajectory's arguments, shared with tools/why_batch_refresh.py: data, split, seed, k, lr, trade-off."""
    p.add_argument("--out", default="results/why", help="output directory")
    p.add_argument("--data_dir", default=None, help="directory with Fashion-MNIST's IDX files (default: Debian's)")
    p.add_argument("--env_size", type=int, default=1000, help="images per environment (the protocol's 1000)")
    p.add_argument("--test_env", type=int, default=0)
    p.add_argument("--trial", type=int, default=0, help="DomainBed's trial seed (seeds the splits)")
    p.add_argument("--seed", type=int, default=0, help="torch seed of the trajectory and the samplers' seed")
    p.add_argument("--k", type=int, default=32, help="examples per domain per batch of the trajectory")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--tradeoff", type=float, default=1.0, help="the trajectory's trade-off (mmd_gamma)")


def parse(argv: Optional[Sequence[str]] = None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_trajectory_args(p)
    p.add_argument("--ks", type=int, nargs="+", default=[8, 32, 128], help="batch sizes of variant (d)")
    p.add_argument("--tradeoffs", type=float, nargs="+", default=[0.1, 1.0, 10.0],
                   help="trade-offs at which the objective's error is reported")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--checkpoints", type=int, nargs="+", default=[0, 250, 500, 1000])
    p.add_argument("--epochs", type=int, default=3, help="sampler epochs per measurement (E)")
    p.add_argument("--min_batches", type=int, default=375,
                   help="fewer than E epochs where these take at least this many batches")
    p.add_argument("--discrepancies", nargs="+", default=["mmd", "coral"], choices=["mmd", "coral"])
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    args = p.parse_args(argv)
    bad = [c for c in args.checkpoints if not 0 <= c <= args.steps]
    if bad:
        p.error(f"--checkpoints {bad} outside [0, --steps={args.steps}]")
    if args.k not in args.ks:
        p.error(f"--k {args.k} must be one of --ks {args.ks} (the main rows use it)")
    if any(k % 2 for k in args.ks):
        p.error(f"--ks {args.ks}: double-paired needs even batch sizes")
    return args


if __name__ == "__main__":
    run(parse())
