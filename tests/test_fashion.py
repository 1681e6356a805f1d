"""Tests of psda.domainbed.fashion: IDX parsing (on files this test writes, so it runs
without Fashion-MNIST), the environments (sizes, labels, rotation angles) on small
written files and on Debian's dataset-fashion-mnist where installed, the missing-data
error, the hparams psda registers, and one tiny UDA_MMD + Double-paired run through
DomainBed."""

import gzip
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

from psda.domainbed import fashion  # noqa: E402
from psda.domainbed.fashion import (DEBIAN_DIR, FILES, RotatedFashionMNIST, RotatedFashionMNISTFlat,  # noqa: E402
                                    find_fashion_mnist, read_idx, rotated_fashion_tensors)

HAVE_DEBIAN = all(os.path.isfile(os.path.join(DEBIAN_DIR, f)) for f in FILES)
needs_debian = pytest.mark.skipif(not HAVE_DEBIAN, reason="Debian's dataset-fashion-mnist is not installed "
                                  "(apt-get install dataset-fashion-mnist; .ci/run installs it)")


def write_idx(path, array, gz=True, magic=None):
    """An IDX file by the format's definition: 0, 0, type 0x08, ndim, big-endian sizes, data."""
    array = np.asarray(array, dtype=np.uint8)
    head = bytes([0, 0, 0x08, array.ndim]) if magic is None else magic
    raw = head + np.array(array.shape, dtype=">u4").tobytes() + array.tobytes()
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(raw)
    return path


def write_fashion(root, n_train=48, n_test=12, seed=0):
    """Four IDX files in Fashion-MNIST's names; image i is filled with value i % 251 so
    that images can be told apart; labels i % 10."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    images = rng.integers(0, 256, size=(n, 28, 28)).astype(np.uint8)
    labels = (np.arange(n) % 10).astype(np.uint8)
    write_idx(os.path.join(root, FILES[0]), images[:n_train])
    write_idx(os.path.join(root, FILES[1]), labels[:n_train])
    write_idx(os.path.join(root, FILES[2]), images[n_train:])
    write_idx(os.path.join(root, FILES[3]), labels[n_train:])
    fashion.load_fashion_mnist.cache_clear()
    return images, labels


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("shape", [(7,), (3, 28, 28), (2, 3, 4)])
def test_read_idx_round_trip(tmp_path, gz, shape):
    want = np.random.default_rng(1).integers(0, 256, size=shape).astype(np.uint8)
    got = read_idx(write_idx(str(tmp_path / ("a.idx.gz" if gz else "a.idx")), want, gz=gz))
    assert got.dtype == np.uint8 and got.shape == shape and np.array_equal(got, want)


def test_read_idx_rejects_corrupt_files(tmp_path):
    x = np.zeros((2, 3), np.uint8)
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(write_idx(str(tmp_path / "m.gz"), x, magic=bytes([1, 0, 8, 2])))
    with pytest.raises(ValueError, match="element type 0x0d"):
        read_idx(write_idx(str(tmp_path / "t.gz"), x, magic=bytes([0, 0, 0x0D, 2])))
    p = write_idx(str(tmp_path / "short"), x, gz=False)
    with open(p, "rb") as f:
        raw = f.read()
    with open(p, "wb") as f:
        f.write(raw[:-1])  # one data byte missing
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_idx(p)
    with open(str(tmp_path / "bad.gz"), "wb") as f:
        f.write(b"\x1f\x8b not really gzip")
    with pytest.raises(ValueError, match="dataset-fashion-mnist"):
        read_idx(str(tmp_path / "bad.gz"))


def test_missing_data_names_the_package_and_data_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(fashion, "DEBIAN_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError) as e:
        find_fashion_mnist(str(tmp_path))
    assert "apt-get install dataset-fashion-mnist" in str(e.value) and "--data_dir" in str(e.value)


def test_root_is_preferred_to_debian(tmp_path):
    write_fashion(str(tmp_path))
    assert find_fashion_mnist(str(tmp_path)) == str(tmp_path)
    sub = tmp_path / "x" / "FashionMNIST" / "raw"  # torchvision's layout
    sub.mkdir(parents=True)
    write_fashion(str(sub))
    assert find_fashion_mnist(str(tmp_path / "x")) == str(sub)


def test_environments_deal_the_shuffled_images(tmp_path):
    images, labels = write_fashion(str(tmp_path), n_train=50, n_test=10)
    envs = rotated_fashion_tensors(str(tmp_path), angles=(0, 0, 0))  # no rotation: the raw deal
    order = torch.randperm(60, generator=torch.Generator().manual_seed(0)).numpy()
    for i, (x, y) in enumerate(envs):
        idx = order[i::3]
        assert x.shape == (20, 1, 28, 28) and x.dtype == torch.float32 and y.dtype == torch.int64
        assert np.allclose(x[:, 0].numpy(), images[idx] / 255.0, atol=1e-5)  # grid_sample at 0°
        assert np.array_equal(y.numpy(), labels[idx])
    # the subset is the first env_size images of each environment
    sub = rotated_fashion_tensors(str(tmp_path), angles=(0, 0, 0), env_size=4)
    assert all(torch.equal(s[0], e[0][:4]) and torch.equal(s[1], e[1][:4]) for s, e in zip(sub, envs))
    with pytest.raises(ValueError, match="psda_env_size"):
        rotated_fashion_tensors(str(tmp_path), angles=(0, 0, 0), env_size=21)


def test_rotation_is_a_real_rotation(tmp_path):
    write_fashion(str(tmp_path), n_train=2, n_test=2)
    (x0, _), (x90, _), (x180, _) = rotated_fashion_tensors(str(tmp_path), angles=(0, 90, 180))
    base = rotated_fashion_tensors(str(tmp_path), angles=(0, 0, 0))
    # counter-clockwise by 90° and 180° about the image centre: exact pixel permutations
    assert torch.allclose(x90, torch.rot90(base[1][0], 1, dims=(-2, -1)), atol=1e-5)
    assert torch.allclose(x180, torch.rot90(base[2][0], 2, dims=(-2, -1)), atol=1e-5)
    assert torch.equal(x0, base[0][0])


def test_rotation_matches_domainbeds_pil_rotation_on_one_image():
    """DomainBed rotates a uint8 PIL image, psda the float tensor: on a smooth image the
    two agree up to interpolation details (a direction or centre error would not)."""
    from torchvision.transforms import InterpolationMode, ToPILImage, ToTensor
    from torchvision.transforms.functional import rotate

    r, c = np.mgrid[0:28, 0:28]
    img = (255 * np.exp(-((r - 9) ** 2 / 18 + (c - 17) ** 2 / 8))).astype(np.uint8)  # off-centre blob
    x = torch.from_numpy(img)[None].float() / 255
    for angle in (15, 45, 75):
        pil = ToTensor()(rotate(ToPILImage()(torch.from_numpy(img)), angle, fill=(0,),
                                interpolation=InterpolationMode.BILINEAR))
        ours = rotate(x, float(angle), interpolation=InterpolationMode.BILINEAR, fill=[0.0])
        assert float((ours - pil).abs().mean()) < 0.01
        assert float((x - pil).abs().mean()) > 0.02  # the rotation itself moves far more than that


@needs_debian
def test_debian_fashion_mnist_environments():
    fashion.load_fashion_mnist.cache_clear()
    ds = RotatedFashionMNIST(None, [0], {})
    assert len(ds) == 6 and ds.input_shape == (1, 28, 28) and ds.num_classes == 10
    assert [len(e) for e in ds] == [11667, 11667, 11667, 11667, 11666, 11666]
    ys = torch.cat([e.tensors[1] for e in ds])
    assert torch.equal(torch.bincount(ys), torch.full((10,), 7000))  # Fashion-MNIST: 7,000 per class
    x = ds[3].tensors[0]
    assert x.shape[1:] == (1, 28, 28) and 0 <= float(x.min()) and float(x.max()) <= 1
    flat = RotatedFashionMNISTFlat(None, [0], {"psda_env_size": 50})
    assert flat.input_shape == (784,) and [len(e) for e in flat] == [50] * 6
    assert torch.equal(flat[3].tensors[0], x[:50].reshape(50, 784))
    # the same environments in every construction (own generator, not the global one)
    torch.manual_seed(123)
    again = RotatedFashionMNISTFlat("", [0], {"psda_env_size": 50})
    assert all(torch.equal(a.tensors[0], b.tensors[0]) for a, b in zip(flat, again))


# ---- DomainBed: registration, hparams, one tiny run --------------------------------------

def _domainbed_dir():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    d = os.environ.get("PSDA_DOMAINBED_DIR") or os.path.join(repo, "..", "shared", "DomainBed")
    return os.path.abspath(d) if os.path.isdir(os.path.join(d, "domainbed")) else None


DOMAINBED = _domainbed_dir()
needs_domainbed = pytest.mark.skipif(not DOMAINBED, reason="no DomainBed checkout: set PSDA_DOMAINBED_DIR "
                                     "or put one in ../shared/DomainBed")


@needs_domainbed
def test_hparams_same_draw_for_every_sampler_and_the_papers_k(monkeypatch):
    monkeypatch.syspath_prepend(DOMAINBED)
    from psda.domainbed import install

    install()
    from domainbed import hparams_registry

    searched = ("lr", "weight_decay", "mmd_gamma", "batch_size")
    for seed in range(20):
        hp = [hparams_registry.random_hparams(name, "RotatedFashionMNISTFlat", seed)
              for name in ("UDA_MMD", "UDA_MMD + Paired", "UDA_MMD + Double-paired")]
        assert all(h[k] == hp[0][k] for h in hp for k in searched)
        assert 2 <= hp[0]["batch_size"] <= 25  # round(int(2 ** U(3, 7)) / 5)
        assert hparams_registry.random_hparams("ERM", "RotatedFashionMNISTFlat", seed)["batch_size"] == \
            hp[0]["batch_size"]
    d = hparams_registry.default_hparams("UDA_CORAL", "RotatedFashionMNIST")
    assert d["batch_size"] == 64 and d["psda_env_size"] == 0 and "mlp_width" not in d


@needs_domainbed
def test_tiny_uda_mmd_double_paired_run(monkeypatch, tmp_path):
    """UDA_MMD + Double-paired through DomainBed's train.py on RotatedFashionMNISTFlat
    (Debian's files, else small written ones passed with --data_dir)."""
    monkeypatch.syspath_prepend(DOMAINBED)
    from psda.domainbed.__main__ import main

    data = ""
    if not HAVE_DEBIAN:
        data = str(tmp_path / "data")
        os.makedirs(data)
        write_fashion(data, n_train=600, n_test=120)
    hp = {"batch_size": 2, "psda_env_size": 60, "psda_refresh_steps": 3, "mlp_width": 32}
    out = tmp_path / "run"
    main(["--dataset", "RotatedFashionMNISTFlat", "--algorithm", "UDA_MMD", "--sampler", "double-paired",
          "--task", "domain_adaptation", "--test_envs", "2", "--uda_holdout_fraction", "0.2", "--steps", "7",
          "--checkpoint_freq", "3", "--hparams", json.dumps(hp), "--output_dir", str(out), "--skip_model_save",
          "--data_dir", data])
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert (out / "done").exists() and [r["step"] for r in rows] == [0, 3, 6]
    assert rows[0]["args"]["algorithm"] == "UDA_MMD + Double-paired" and "env0_uda_acc" in rows[-1]  # split 0
    text = (out / "out.txt").read_text()
    assert "double-paired sampler over 240 source and 9 target items, k = 10" in text  # 5 x 48; 0.2 x 48


def test_example_fashion_mnist_runs_and_pairs_seeds(tmp_path):
    """examples/fashion_mnist.py on small written files: one row per (seed, sampler), the
    same test split and initial weights for both samplers of a seed (step 0 accuracy equal)."""
    import importlib.util

    write_fashion(str(tmp_path), n_train=300, n_test=60)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("fashion_example", os.path.join(repo, "examples", "fashion_mnist.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    rows = ex.main(["--seeds", "2", "--steps", "6", "--eval-every", "3", "--k", "4", "--env-size", "40",
                    "--data_dir", str(tmp_path), "--samplers", "uniform,double-paired",
                    "--json", str(tmp_path / "runs.jsonl")])
    assert [(r["sampler"], r["seed"]) for r in rows] == [("uniform", 0), ("double-paired", 0),
                                                         ("uniform", 1), ("double-paired", 1)]
    assert all([s for s, _ in r["curve"]] == [0, 3, 6] for r in rows)
    assert rows[0]["curve"][0] == rows[1]["curve"][0] and rows[2]["curve"][0] == rows[3]["curve"][0]
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 4
