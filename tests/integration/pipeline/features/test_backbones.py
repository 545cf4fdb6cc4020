"""The pretrained default backbone on a folder of real CIFAR-10 JPEGs: recorded in
run.json, random weights never silent, an input size out of range one line."""

from __future__ import annotations

import json

from tests.integration.conftest import curator


def test_default_model_on_an_image_folder_is_pretrained_and_recorded(small_folder, tmp_path):
    out = tmp_path / "run"
    r = curator("extract", "--dataset", f"folder:{small_folder}", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    step = json.loads((out / "run.json").read_text())["steps"]["extract"]
    assert step["model"] == "efficientnet-lite0" and step["pretrained"] is True
    assert step["feature_dim"] == 1280


def test_random_weights_print_one_warning_and_are_recorded(small_folder, tmp_path):
    out = tmp_path / "run"
    r = curator("extract", "--dataset", f"folder:{small_folder}", "--model", "cifar-resnet20",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "random weights" in warnings[0]
    step = json.loads((out / "run.json").read_text())["steps"]["extract"]
    assert step["pretrained"] is False
    # The digits demo keeps raw pixels by default: no network, nothing to warn about.
    digits = tmp_path / "digits"
    r = curator("extract", "--dataset", "digits", "--out", str(digits))
    assert r.returncode == 0 and "warning" not in r.stderr
    step = json.loads((digits / "run.json").read_text())["steps"]["extract"]
    assert step["model"] == "pixels" and step["pretrained"] is None


def test_an_input_size_out_of_range_is_one_line(small_folder, tmp_path):
    r = curator("extract", "--dataset", f"folder:{small_folder}", "--input-size", "8",
                "--out", str(tmp_path / "run"))
    assert r.returncode == 2 and "--input-size: must be a whole number from 32 to 512" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
