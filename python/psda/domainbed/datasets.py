"""RotatedDigits: an offline DomainBed dataset from scikit-learn's bundled digits.

scikit-learn ships the UCI handwritten digits (1,797 images of 8×8 pixels, 16 grey
levels, ten classes) inside the package, so this dataset needs no download and no
``--data_dir``. It follows DomainBed's RotatedMNIST: the images are shuffled once and
dealt round-robin into six environments rotated by 0, 15, 30, 45, 60 and 75 degrees
(bilinear, zero fill). Each 8×8 image is scaled to 20×20 and centred in a 28×28 frame
(MNIST's layout: a 20×20 digit box with a 4-pixel border), so DomainBed's
``networks.Featurizer`` picks its MNIST network (``MNIST_CNN``) as for RotatedMNIST.
Pixel values lie in [0, 1].

:func:`psda.domainbed.install` registers it in ``domainbed.datasets`` (name, class, and
``DATASETS``), and gives it RotatedMNIST's hparams (a small-image dataset).
"""

from __future__ import annotations

from typing import List

__all__ = ["TensorEnvironments", "RotatedDigits", "RotatedDigitsFlat", "rotated_digits_tensors"]

ANGLES = (0, 15, 30, 45, 60, 75)


def rotated_digits_tensors(angles=ANGLES, seed: int = 0) -> List[tuple]:
    """rotated_digits_tensors returns one (x, y) pair per angle: x float32 of shape
    (n, 1, 28, 28) in [0, 1], y int64 of shape (n,). Environment i holds the shuffled
    images i, i + len(angles), ... (as RotatedMNIST deals MNIST), rotated by angles[i].
    The shuffle uses its own generator seeded by ``seed``, so the environments are the
    same in every run."""
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_digits
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.functional import rotate

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0  # (1797, 1, 8, 8)
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(seed))
    images, labels = images[order], labels[order]
    # 8×8 -> a 20×20 box in a 28×28 frame, as MNIST centres its digits.
    images = F.pad(F.interpolate(images, size=(20, 20), mode="bilinear", align_corners=False), (4, 4, 4, 4))
    out = []
    for i, angle in enumerate(angles):
        x = images[i::len(angles)]
        x = rotate(x, float(angle), interpolation=InterpolationMode.BILINEAR, fill=[0.0])
        out.append((x.clamp(0.0, 1.0).contiguous(), labels[i::len(angles)].clone()))
    return out


class TensorEnvironments:
    """TensorEnvironments is DomainBed's dataset interface (``ds[i]``, ``len(ds)``,
    ``input_shape``, ``num_classes``) over environments held in memory: a subclass sets
    its class attributes and calls :meth:`_hold` with one (x, y) pair per environment,
    each x reshaped to ``INPUT_SHAPE`` per image (a flat variant only changes it)."""

    N_WORKERS = 0  # tensors in memory: worker processes would only cost
    INPUT_SHAPE: tuple = (1, 28, 28)
    NUM_CLASSES = 10

    def _hold(self, environments) -> None:
        from torch.utils.data import TensorDataset

        self.datasets = [TensorDataset(x.reshape((len(x),) + tuple(self.INPUT_SHAPE)), y) for x, y in environments]
        self.input_shape = self.INPUT_SHAPE
        self.num_classes = self.NUM_CLASSES

    def __getitem__(self, index):
        return self.datasets[index]

    def __len__(self):
        return len(self.datasets)


class RotatedDigits(TensorEnvironments):
    """RotatedDigits is a DomainBed dataset: ``RotatedDigits(root, test_envs, hparams)``
    (all three ignored; no download) holds six ``TensorDataset`` environments, 299 or 300
    images each, input shape (1, 28, 28), ten classes.

    Example:
        >>> ds = RotatedDigits(None, [0], {})
        >>> len(ds), ds.input_shape, ds.num_classes, sum(len(e) for e in ds)
        (6, (1, 28, 28), 10, 1797)
    """

    ENVIRONMENTS = [str(a) for a in ANGLES]
    N_STEPS = 1001
    CHECKPOINT_FREQ = 100

    def __init__(self, root=None, test_envs=None, hparams=None):
        self._hold(rotated_digits_tensors())


class RotatedDigitsFlat(RotatedDigits):
    """RotatedDigitsFlat holds RotatedDigits' environments with each 28×28 image
    flattened to 784 values, so DomainBed's ``networks.Featurizer`` builds its MLP
    (``mlp_width``, ``mlp_depth``, ``mlp_dropout``: 256, 3, 0 by default) instead of
    ``MNIST_CNN``. The MLP costs about 1/200 of the CNN's multiply-adds per image: the
    size at which a sweep over every sampler fits a CPU (docs/domainbed.md, "The paper's
    tables in miniature").

    Example:
        >>> ds = RotatedDigitsFlat(None, [0], {})
        >>> ds.input_shape, ds[0][0][0].shape
        ((784,), torch.Size([784]))
    """

    INPUT_SHAPE = (784,)
