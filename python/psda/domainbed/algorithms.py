"""UDA_MMD, UDA_CORAL, PSDA_MMD, PSDA_CORAL: DomainBed algorithms for unsupervised domain adaptation.

DomainBed's own MMD and CORAL align the training domains with each other and ignore
the unlabelled target data. These are UDA algorithms in the paper's sense (Method,
"Preliminaries"): the task loss on the training domains plus a trade-off times the
discrepancy between the union of the training domains (source) and the UDA split of
the test domains (target). UDA_MMD / UDA_CORAL take any batch sampler (see
:mod:`psda.domainbed.samplers`); PSDA_MMD / PSDA_CORAL are the same algorithms with the
double-paired sampler.

The classes follow DomainBed's algorithm interface (``__init__(input_shape,
num_classes, num_domains, hparams)``, ``update(minibatches, unlabeled)``,
``predict(x)``) without importing DomainBed until they build their default networks,
so they can be trained and tested with any featurizer/classifier pair.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch
import torch.nn.functional as F

# The RBF mixture of the paper's accuracy experiments (docs/method.md, "Notation").
from .._matching import DEFAULT_GAMMAS

__all__ = ["rbf_mmd", "coral", "PSDAAlgorithm", "UDA_MMD", "UDA_CORAL", "PSDA_MMD", "PSDA_CORAL",
           "DEFAULT_GAMMAS"]


def _sqdist(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between the rows of x and y, clamped at 0."""
    d = (x * x).sum(1, keepdim=True) - 2.0 * x @ y.t() + (y * y).sum(1)
    return d.clamp_min(0.0)


def rbf_mmd(zs: torch.Tensor, zt: torch.Tensor, gammas: Sequence[float] = DEFAULT_GAMMAS) -> torch.Tensor:
    """rbf_mmd returns the V-statistic estimate of the squared MMD between the rows of
    zs and zt, with the kernel κ(x, y) = Σ_γ exp(−γ‖x − y‖²) (paper eq. 1, V-statistic
    as in "Preliminaries"). Cost: O((m + n)² d)."""
    def k(a, b):
        d = _sqdist(a, b)
        return sum(torch.exp(-g * d) for g in gammas)

    return k(zs, zs).mean() + k(zt, zt).mean() - 2.0 * k(zs, zt).mean()


def coral(zs: torch.Tensor, zt: torch.Tensor) -> torch.Tensor:
    """coral returns ‖Σ̂_s − Σ̂_t‖_F², the squared Frobenius distance between the
    unbiased sample covariances of the rows of zs and zt (paper eq. 2). Needs at least
    two rows on each side. Cost: O((m + n) d²)."""
    def cov(z):
        c = z - z.mean(0, keepdim=True)
        return c.t() @ c / (z.shape[0] - 1)

    return (cov(zs) - cov(zt)).pow(2).sum()


class PSDAAlgorithm(torch.nn.Module):
    """PSDAAlgorithm is a DomainBed-style UDA algorithm: cross-entropy on the source
    batch plus ``hparams['mmd_gamma']`` times the discrepancy between source and
    target features. Subclasses set ``discrepancy`` to ``"mmd"`` or ``"coral"``.

    ``update(minibatches, unlabeled)`` concatenates the (x, y) minibatches (source, in
    the order given) and the unlabelled minibatches (target): with PSDA's loaders the
    source row m is paired with target row m (see :meth:`update`). Both sides go
    through the featurizer in one pass. After the optimiser step it calls
    ``self.after_step()`` when set.

    Args:
        input_shape, num_classes, num_domains, hparams: DomainBed's arguments; the
            hparams used are lr, weight_decay, mmd_gamma (the trade-off),
            nonlinear_classifier (for the default networks) and psda_gammas (optional).
        featurizer, classifier: networks to use instead of DomainBed's
            ``networks.Featurizer`` / ``networks.Classifier`` (which are imported only
            when these are None); the featurizer needs ``n_outputs`` only then.

    Raises ValueError from update, for CORAL, when either side has fewer than two rows.
    """

    discrepancy = "mmd"

    def __init__(self, input_shape: Any, num_classes: int, num_domains: int, hparams: dict,
                 featurizer: Optional[torch.nn.Module] = None,
                 classifier: Optional[torch.nn.Module] = None):
        super().__init__()
        self.hparams = hparams
        if featurizer is None:
            from domainbed import networks

            featurizer = networks.Featurizer(input_shape, hparams)
            classifier = networks.Classifier(featurizer.n_outputs, num_classes,
                                             hparams["nonlinear_classifier"])
        if classifier is None:
            raise ValueError("classifier is None but a featurizer was given; pass both or neither")
        self.featurizer = featurizer
        self.classifier = classifier
        self.network = torch.nn.Sequential(self.featurizer, self.classifier)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=hparams["lr"],
                                          weight_decay=hparams.get("weight_decay", 0.0))
        self.gammas = tuple(hparams.get("psda_gammas", DEFAULT_GAMMAS))
        self.after_step: Optional[Callable[[], Any]] = None
        self.psda_target_order: Optional[torch.Tensor] = None
        from .loaders import attach_active

        attach_active(self)  # under `python -m psda.domainbed`, the PSDA loaders use our featurizer

    def disc(self, zs: torch.Tensor, zt: torch.Tensor) -> torch.Tensor:
        """disc returns the discrepancy between source and target features."""
        if self.discrepancy == "coral":
            if zs.shape[0] < 2 or zt.shape[0] < 2:
                raise ValueError("CORAL needs at least 2 source and 2 target rows per batch, got %d and %d; "
                                 "raise the batch size" % (zs.shape[0], zt.shape[0]))
            return coral(zs, zt)
        return rbf_mmd(zs, zt, self.gammas)

    def update(self, minibatches, unlabeled=None):
        """update takes one optimiser step and returns {'loss', 'penalty'}.

        Without an unlabeled batch (``unlabeled`` None or empty, e.g. DomainBed's
        domain-generalization task or its test suite) the step is on the task loss
        alone and the penalty is reported as 0, as DomainBed's algorithms do with
        data they do not get. When the PSDA loaders regrouped the target rows by UDA
        split, ``psda_target_order`` (set by them for this step) restores the pairing:
        row m of the source concatenation is paired with row m of
        ``cat(unlabeled)[psda_target_order]``.
        """
        xs = torch.cat([x for x, _ in minibatches])
        ys = torch.cat([y for _, y in minibatches])
        order, self.psda_target_order = self.psda_target_order, None
        if not unlabeled:
            objective = F.cross_entropy(self.predict(xs), ys)
            self.optimizer.zero_grad()
            objective.backward()
            self.optimizer.step()
            if self.after_step is not None:
                self.after_step()
            return {"loss": objective.item(), "penalty": 0.0}
        xt = torch.cat(list(unlabeled))
        if order is not None:
            xt = xt[order.to(xt.device)]
        z = self.featurizer(torch.cat([xs, xt]))
        zs, zt = z[: xs.shape[0]], z[xs.shape[0]:]
        objective = F.cross_entropy(self.classifier(zs), ys)
        penalty = self.disc(zs, zt)
        self.optimizer.zero_grad()
        (objective + self.hparams["mmd_gamma"] * penalty).backward()
        self.optimizer.step()
        if self.after_step is not None:
            self.after_step()
        return {"loss": objective.item(), "penalty": penalty.item()}

    def predict(self, x):
        """predict returns the class logits for x."""
        return self.network(x)


class UDA_MMD(PSDAAlgorithm):
    """UDA_MMD, the paper's MMD: task loss + mmd_gamma × RBF-mixture MMD² between the
    union of the training domains and the UDA split; any sampler (default uniform)."""

    discrepancy = "mmd"


class UDA_CORAL(PSDAAlgorithm):
    """UDA_CORAL, the paper's CORAL: task loss + mmd_gamma × ‖Σ̂_s − Σ̂_t‖_F² between the
    union of the training domains and the UDA split; any sampler (default uniform)."""

    discrepancy = "coral"


class PSDA_MMD(UDA_MMD):
    """PSDA_MMD is UDA_MMD with the double-paired sampler (its only sampler)."""


class PSDA_CORAL(UDA_CORAL):
    """PSDA_CORAL is UDA_CORAL with the double-paired sampler (its only sampler)."""
