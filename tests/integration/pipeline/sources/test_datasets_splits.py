"""``--split`` on real datasets: class folders have no test split, a split spec is the same
dataset for the other split, a CIFAR folder without its test batch, and the CLI refusing a
split in one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.unit.pipeline.sources.test_datasets_splits import _refusal, _tree
from worker.pipeline.errors import InputError
from worker.pipeline.sources.datasets import (
    has_split,
    open_dataset,
    parse_spec,
    split_spec,
)


def test_class_folders_have_no_test_split(small_folder):
    """Plain class folders stay the train split; ``--split test`` stays refused."""
    assert _refusal(parse_spec(f"folder:{small_folder}", "test")) == (
        f"{small_folder} has no test/ folder (its subfolders are the classes): "
        "use --split train")
    spec = parse_spec(f"folder:{small_folder}")
    assert has_split(spec, "train") and not has_split(spec, "test")


def test_split_spec_is_the_same_dataset_for_the_other_split(cifar_mini, cifar_batches):
    for text in (f"folder:{cifar_mini}", f"cifar10:{cifar_batches}"):
        train = parse_spec(text)
        test = split_spec(train, "test")
        assert test == parse_spec(text, "test") and split_spec(test, "train") == train
        assert has_split(train, "test") and has_split(test, "train")
        assert all(p.startswith("test/") for p in open_dataset(test).samples.paths[:50])
    digits = parse_spec("digits")
    assert has_split(digits, "train") and not has_split(digits, "test")
    assert split_spec(digits, "test").split == "test"  # open_dataset refuses it
    assert not has_split(digits, "val")
    with pytest.raises(InputError, match="unknown split 'val'"):
        split_spec(digits, "val")


def test_a_cifar_folder_without_its_test_batch(cifar_batches, tmp_path):
    src = cifar_batches / "cifar-10-batches-py"
    dest = tmp_path / "cifar-10-batches-py"
    dest.mkdir()
    for f in src.iterdir():
        if f.name != "test_batch":
            os.link(f, dest / f.name)
    spec = parse_spec(f"cifar10:{tmp_path}")
    assert has_split(spec, "train") and not has_split(spec, "test")
    assert "missing test_batch" in _refusal(split_spec(spec, "test"))
    (dest / "batches.meta").unlink()  # no split can be read without the class names
    assert not has_split(spec, "train")


def test_the_cli_refuses_a_split_in_one_line(tmp_path):
    """Run as a user would: exit status 2, one ``error:`` line, no traceback, no run."""
    root = _tree(tmp_path / "d", {"train/cat": 2, "train/dog": 2})
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "worker.cli", "pipeline", "--dataset",
                        f"folder:{root}", "--split", "test", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error:"), r.stderr
    assert lines[0].endswith(f"{root} has no test/ folder (it has train/): use --split train")
    assert "Traceback" not in r.stderr
    assert not (out / "run.json").exists()
