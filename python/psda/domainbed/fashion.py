"""RotatedFashionMNIST: DomainBed's RotatedMNIST recipe on Fashion-MNIST, read offline.

Fashion-MNIST (70,000 grey 28×28 images of clothing, ten classes, train + test) ships as
four IDX files. This module reads them from ``root`` (DomainBed's ``--data_dir``) when
it holds them, else from ``/usr/share/datasets/fashion-mnist`` (Debian's package
``dataset-fashion-mnist``), and follows DomainBed's RotatedMNIST
(``domainbed/datasets.py``): train and test images concatenated, shuffled once, dealt
round-robin (image i goes to environment i mod 6) into six environments rotated by 0,
15, 30, 45, 60 and 75 degrees (bilinear, zero fill), pixel values in [0, 1].

Deviations from RotatedMNIST, on purpose:

- the shuffle uses its own generator seeded 0, so the environments are the same in
  every run (DomainBed's ``torch.randperm`` draws from the global generator, which
  train.py has seeded with the job's seed, so its environments change from job to job);
- the rotation is applied to the float image tensor (torchvision's tensor ``rotate``),
  not to a uint8 PIL image, so rotated pixels are not rounded to 1/255;
- the hparam ``psda_env_size`` (0: all) keeps only the first N images of each
  environment (the environments are already shuffled), for CPU runs.

:func:`psda.domainbed.install` registers both classes in ``domainbed.datasets`` and gives
them RotatedMNIST's hparams (see :mod:`psda.domainbed.hparams`).
"""

from __future__ import annotations

import functools
import gzip
import os
from typing import Optional, Sequence, Tuple

import numpy as np

from .datasets import ANGLES, TensorEnvironments

__all__ = ["RotatedFashionMNIST", "RotatedFashionMNISTFlat", "read_idx", "load_fashion_mnist",
           "find_fashion_mnist", "rotated_fashion_tensors", "DEBIAN_DIR", "FILES"]


#: Where Debian's package dataset-fashion-mnist installs the IDX files.
DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"

#: The four IDX files, in the order (train images, train labels, test images, test labels).
FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")

_IDX_UBYTE = 0x08  # the only element type Fashion-MNIST uses


def read_idx(path: str) -> np.ndarray:
    """read_idx returns the array stored in the IDX file ``path`` (gzip-compressed when
    the name ends in .gz): uint8, shape as the header says.

    IDX (LeCun's MNIST format): two zero bytes, an element-type byte (0x08 = uint8), a
    byte with the number of dimensions d, d big-endian uint32 sizes, then the data.

    Raises ValueError naming the file when the magic number, the type or the length is
    wrong (a truncated or corrupt download).

    Example:
        >>> x = read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")  # doctest: +SKIP
        >>> x.shape, x.dtype
        ((10000,), dtype('uint8'))
    """
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:  # gzip raises these for a corrupt stream
        raise ValueError("%s: cannot read it as an IDX file (%s); reinstall the data "
                         "(apt-get install --reinstall dataset-fashion-mnist)" % (path, e)) from e
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError("%s: not an IDX file (magic number %s; want 00 00 <type> <ndim>)" % (path, raw[:4].hex()))
    if raw[2] != _IDX_UBYTE:
        raise ValueError("%s: IDX element type 0x%02x; only 0x08 (uint8) is supported" % (path, raw[2]))
    ndim = raw[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(raw) < header:
        raise ValueError("%s: IDX header of %d dimensions is truncated (%d bytes)" % (path, ndim, len(raw)))
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    want = int(np.prod(shape))
    if len(raw) - header != want:
        raise ValueError("%s: IDX header says shape %s (%d bytes of data) but the file holds %d; the file is "
                         "truncated or corrupt" % (path, shape, want, len(raw) - header))
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape).copy()


def find_fashion_mnist(root: Optional[str] = None) -> str:
    """find_fashion_mnist returns the directory holding the four IDX files: ``root``,
    ``root/fashion-mnist`` or ``root/FashionMNIST/raw`` (torchvision's layout) when one
    holds them, else Debian's :data:`DEBIAN_DIR`.

    Raises FileNotFoundError naming the package and ``--data_dir`` when none does.
    """
    candidates = []
    if root:
        candidates += [root, os.path.join(root, "fashion-mnist"), os.path.join(root, "FashionMNIST", "raw")]
    candidates.append(DEBIAN_DIR)
    for d in candidates:
        if all(os.path.isfile(os.path.join(d, f)) for f in FILES):
            return d
    raise FileNotFoundError(
        "Fashion-MNIST not found: no directory among %s holds the four IDX files %s. Install Debian's package "
        "(apt-get install dataset-fashion-mnist, into %s) or pass --data_dir DIR with DIR holding the files"
        % (", ".join(candidates), ", ".join(FILES), DEBIAN_DIR))


@functools.lru_cache(maxsize=2)
def load_fashion_mnist(directory: str) -> Tuple[np.ndarray, np.ndarray]:
    """load_fashion_mnist returns (images uint8 (70000, 28, 28), labels uint8 (70000,)):
    the training files then the test files of ``directory``, checked for matching counts.
    Cached per directory (an in-process sweep reads the files once)."""
    xs, ys = [], []
    for img, lab in ((FILES[0], FILES[1]), (FILES[2], FILES[3])):
        x, y = read_idx(os.path.join(directory, img)), read_idx(os.path.join(directory, lab))
        if x.ndim != 3 or x.shape[1:] != (28, 28) or y.ndim != 1 or len(x) != len(y):
            raise ValueError("%s: %s has shape %s and %s has shape %s; want (n, 28, 28) images and n labels"
                             % (directory, img, x.shape, lab, y.shape))
        if y.max(initial=0) > 9:
            raise ValueError("%s: %s holds label %d; Fashion-MNIST's are 0..9" % (directory, lab, y.max()))
        xs.append(x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


def rotated_fashion_tensors(root: Optional[str] = None, angles: Sequence[float] = ANGLES, env_size: int = 0,
                            seed: int = 0) -> list:
    """rotated_fashion_tensors returns one (x, y) pair per angle: x float32 of shape
    (n, 1, 28, 28) in [0, 1], y int64 of shape (n,). Environment i holds the shuffled
    images i, i + len(angles), ... (RotatedMNIST's deal), rotated counter-clockwise by
    ``angles[i]`` degrees; with ``env_size`` > 0 only its first ``env_size`` images.

    Args:
        root: a directory holding the IDX files (see :func:`find_fashion_mnist`).
        angles: one rotation per environment.
        env_size: images per environment (0: all, 11,666 or 11,667 for six angles).
        seed: the shuffle's seed (its own generator).
    """
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.functional import rotate

    if int(env_size) < 0:
        raise ValueError("env_size (hparam psda_env_size) = %r: want 0 (all) or a positive count" % (env_size,))
    images, labels = load_fashion_mnist(find_fashion_mnist(root))
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(seed)).numpy()
    out = []
    for i, angle in enumerate(angles):
        idx = order[i::len(angles)]
        if env_size:
            if env_size > len(idx):
                raise ValueError("env_size (hparam psda_env_size) = %d but environment %d holds %d images"
                                 % (env_size, i, len(idx)))
            idx = idx[:env_size]
        x = torch.from_numpy(images[idx]).unsqueeze(1).float() / 255.0
        x = rotate(x, float(angle), interpolation=InterpolationMode.BILINEAR, fill=[0.0])
        out.append((x.clamp(0.0, 1.0).contiguous(), torch.from_numpy(labels[idx].astype(np.int64))))
    return out


class RotatedFashionMNIST(TensorEnvironments):
    """RotatedFashionMNIST is a DomainBed dataset: ``RotatedFashionMNIST(root, test_envs,
    hparams)`` holds six ``TensorDataset`` environments (rotated 0..75°), input shape
    (1, 28, 28) (DomainBed's ``MNIST_CNN``), ten classes.

    Args:
        root: DomainBed's ``--data_dir``; used when it holds the IDX files, else Debian's
            :data:`DEBIAN_DIR`.
        test_envs: ignored (as in DomainBed's datasets).
        hparams: ``psda_env_size`` (default 0: all 11,666 or 11,667 images per
            environment) keeps the first N of each environment.

    Example:
        >>> ds = RotatedFashionMNIST(None, [0], {"psda_env_size": 100})  # doctest: +SKIP
        >>> len(ds), ds.input_shape, ds.num_classes, [len(e) for e in ds]
        (6, (1, 28, 28), 10, [100, 100, 100, 100, 100, 100])
    """

    ENVIRONMENTS = [str(a) for a in ANGLES]
    N_STEPS = 5001  # RotatedMNIST's
    CHECKPOINT_FREQ = 100

    def __init__(self, root=None, test_envs=None, hparams=None):
        env_size = int((hparams or {}).get("psda_env_size", 0) or 0)
        self._hold(rotated_fashion_tensors(root, env_size=env_size))


class RotatedFashionMNISTFlat(RotatedFashionMNIST):
    """RotatedFashionMNISTFlat holds RotatedFashionMNIST's environments with each image
    flattened to 784 values, so DomainBed's ``networks.Featurizer`` builds its MLP
    (``mlp_width``, ``mlp_depth``, ``mlp_dropout``) instead of ``MNIST_CNN``: the size
    at which a sweep over several samplers fits a CPU (docs/evidence.md).

    Example:
        >>> ds = RotatedFashionMNISTFlat(None, [0], {"psda_env_size": 100})  # doctest: +SKIP
        >>> ds.input_shape, ds[0][0][0].shape
        ((784,), torch.Size([784]))
    """

    INPUT_SHAPE = (784,)
