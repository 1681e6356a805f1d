"""A short run of examples/train_synthetic.py: both losses, both samplers."""

import importlib.util
import json
import math
import pathlib

import pytest

pytest.importorskip("torch")

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "train_synthetic.py"


def load_example():
    spec = importlib.util.spec_from_file_location("train_synthetic", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_train_synthetic_short_run(tmp_path, capsys):
    ex = load_example()
    out = tmp_path / "rows.jsonl"
    rows = ex.main(["--n", "160", "--batch-size", "8", "--epochs", "2", "--measure-every", "1",
                    "--json", str(out)])
    assert rows == [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["discrepancy"], r["method"]) for r in rows} == {
        (d, m) for d in ("mmd", "coral") for m in ("uniform", "psda")}
    for r in rows:
        assert r["epoch"] in (0, 1, 2)
        assert 0.0 <= r["target_acc"] <= 1.0 and 0.0 <= r["source_acc"] <= 1.0
        assert math.isfinite(r["grad_mse"]) and r["grad_mse"] > 0
    # Same seed, same initial weights: at epoch 0 both samplers see the same model, and
    # PSDA's paired batches estimate the full discrepancy gradient with less error.
    for d in ("mmd", "coral"):
        first = {r["method"]: r for r in rows if r["discrepancy"] == d and r["epoch"] == 0}
        assert first["psda"]["target_acc"] == first["uniform"]["target_acc"]
        assert first["psda"]["grad_norm2"] == pytest.approx(first["uniform"]["grad_norm2"])
        assert first["psda"]["grad_mse"] < first["uniform"]["grad_mse"]
    summary = capsys.readouterr().out
    assert "mean grad MSE" in summary and "psda" in summary


def test_train_synthetic_shift_is_real():
    """The target is not the source: a classifier trained on the source alone is worse
    on the target than on the source."""
    ex = load_example()
    rows = ex.main(["--discrepancy", "mmd", "--methods", "uniform", "--tradeoff", "0", "--n", "300",
                    "--epochs", "5", "--measure-every", "5"])
    last = rows[-1]
    assert last["source_acc"] > 0.9 and last["target_acc"] < last["source_acc"] - 0.2
