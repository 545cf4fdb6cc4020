"""Dataset specs (worker/pipeline/sources/datasets.py): bad specs say what to fix, an empty
or unreadable folder is refused, digits are real 8-bit images, and any text either parses
or is one line (Hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.pipeline.errors import InputError
from worker.pipeline.sources.datasets import open_dataset, parse_spec
from worker.pipeline.sources.ingest import DatasetOptions, ingest
from worker.pipeline.storage.rundir import RunDir


@pytest.mark.parametrize("spec, message", [
    ("imagenet", "unknown dataset spec"),
    ("folder:", "unknown dataset spec"),
    ("cifar10:/no/such/dir", "dataset folder not found"),
    ("folder:/no/such/dir", "dataset folder not found"),
])
def test_bad_specs_say_what_to_fix(spec, message):
    with pytest.raises(InputError, match=message):
        parse_spec(spec)


def test_empty_folder_is_refused(tmp_path):
    with pytest.raises(InputError, match="no class subfolders"):
        open_dataset(parse_spec(f"folder:{tmp_path}"))
    (tmp_path / "cat").mkdir()
    with pytest.raises(InputError, match="no images found"):
        open_dataset(parse_spec(f"folder:{tmp_path}"))


def test_digits_are_real_8bit_images():
    ds = open_dataset(parse_spec("digits"))
    assert len(ds.samples) == 1797 and ds.arrays.shape == (1797, 8, 8)
    assert ds.arrays.dtype == np.uint8 and ds.arrays.max() == 255
    assert ds.samples.classes == [str(i) for i in range(10)]


def test_cifar10_spec_on_a_wrong_folder(tmp_path):
    with pytest.raises(InputError, match="not a cifar-10-batches-py folder"):
        open_dataset(parse_spec(f"cifar10:{tmp_path}"))


def test_all_images_corrupt_is_an_error(tmp_path):
    (tmp_path / "d" / "a").mkdir(parents=True)
    for i in range(5):  # enough files for a map: what is refused is that none decodes
        (tmp_path / "d" / "a" / f"x{i}.jpg").write_bytes(b"junk")
    run = RunDir(tmp_path / "run")
    with pytest.raises(InputError, match="could be read"):
        ingest(run, DatasetOptions(parse_spec(f"folder:{tmp_path / 'd'}")))
    assert not list((tmp_path / "run").glob(".thumbnails*"))  # no half file left
    assert not run.exists()  # bad input leaves no run in the making to list or resume


TEXT = st.text(max_size=40) | st.sampled_from(
    ["..", "../x", "/etc", "a/../../b", ".hidden", "x\x00y", "folder:", "folder:/",
     "cifar10:..", "digits:", "digits", "folder:~", " ", "a/b", "C:\\x"])


@settings(max_examples=300, deadline=None)
@given(spec=TEXT, split=st.sampled_from(["train", "test", "val", ""]))
def test_dataset_specs_parse_or_fail_in_one_line(spec, split):
    try:
        parsed = parse_spec(spec, split)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert parsed.kind in ("digits", "cifar10", "folder") and parsed.split == split
        assert parsed.root is None or parsed.root.is_dir()
