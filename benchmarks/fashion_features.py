"""Fashion-MNIST features for psda's Go probe of Stage 2's path.

Writes a source (training images) and a target (test images) of raw pixels
in [0, 1] projected to 256 dimensions by one fixed Gaussian random matrix,
as the raw files TestStage2PathProbe reads (int32 n, int32 d, then n·d
float32, little-endian): a cheap stand-in for real features, clustered by
class only as much as pixels are. Reads Debian's dataset-fashion-mnist.

Args (command line): NS NT OUT_PREFIX [DIR]; writes OUT_PREFIX_s.f32 and
OUT_PREFIX_t.f32.

Example:
    python benchmarks/fashion_features.py 12000 480 /tmp/fm12000
    PSDA_PROBE=file:/tmp/fm12000_s.f32:/tmp/fm12000_t.f32 \\
        go test -run TestStage2PathProbe -v ./psda
"""

import gzip
import sys

import numpy as np


def images(path: str) -> np.ndarray:
    """The images of an IDX file as float32 rows in [0, 1]."""
    with gzip.open(path) as f:
        raw = f.read()
    return np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255


def save(x: np.ndarray, path: str) -> None:
    """x as the probe's raw file."""
    x = np.ascontiguousarray(x, np.float32)
    with open(path, "wb") as f:
        f.write(np.array(x.shape, np.int32).tobytes())
        f.write(x.tobytes())


def main() -> None:
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    ns, nt, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    where = sys.argv[4] if len(sys.argv) == 5 else "/usr/share/datasets/fashion-mnist"
    train, test = images(f"{where}/train-images-idx3-ubyte.gz"), images(f"{where}/t10k-images-idx3-ubyte.gz")
    if ns > len(train) or nt > len(test):
        sys.exit(f"NS = {ns}, NT = {nt}: at most {len(train)} and {len(test)}")
    rng = np.random.default_rng(0)
    proj = rng.standard_normal((784, 256)).astype(np.float32) / np.sqrt(784)
    save(train[rng.permutation(len(train))[:ns]] @ proj, f"{prefix}_s.f32")
    save(test[rng.permutation(len(test))[:nt]] @ proj, f"{prefix}_t.f32")


if __name__ == "__main__":
    main()
