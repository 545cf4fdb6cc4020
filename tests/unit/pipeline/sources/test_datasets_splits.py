"""``--split`` on every kind of dataset: a folder holding only ``train/`` (or only ``test/``)
is read as that split, not as one class named ``train``; a split a dataset cannot honour
is refused in one line (library and CLI); :func:`has_split` and :func:`split_spec`."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from worker.pipeline.errors import InputError
from worker.pipeline.sources.datasets import (
    DatasetSpec,
    has_split,
    open_dataset,
    parse_spec,
    split_spec,
)


def _images(folder: Path, n: int) -> None:
    """``n`` real 4×4 PNGs, 0000.png…, in ``folder`` (made as needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.new("RGB", (4, 4), (40 * i % 256, 90, 200)).save(folder / f"{i:04d}.png")


def _tree(root: Path, counts: dict[str, int]) -> Path:
    """``root`` holding ``counts[rel]`` images in each folder ``root / rel``."""
    for rel, n in counts.items():
        _images(root / rel, n)
    return root


def _refusal(spec: DatasetSpec) -> str:
    """The one line :func:`open_dataset` refuses ``spec`` with."""
    with pytest.raises(InputError) as info:
        open_dataset(spec)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_folder_holding_only_train_is_read_as_the_train_split(tmp_path):
    """Not one class named ``train`` with nothing flagged, as such a folder once was."""
    root = _tree(tmp_path / "d", {"train/cat": 3, "train/dog": 2})
    (root / ".cache").mkdir()  # hidden folders are neither splits nor classes
    (root / "README.txt").write_text("files beside the split folder are not read")
    ds = open_dataset(parse_spec(f"folder:{root}"))
    assert ds.samples.classes == ["cat", "dog"]
    assert ds.samples.paths == ["train/cat/0000.png", "train/cat/0001.png",
                                "train/cat/0002.png", "train/dog/0000.png",
                                "train/dog/0001.png"]
    assert ds.samples.labels.tolist() == [0, 0, 0, 1, 1] and not ds.skipped
    assert ds.file_path(3) == root / "train" / "dog" / "0000.png"  # paths relative to DIR
    assert ds.load_image(4).size == (4, 4)
    assert has_split(ds.spec, "train") and not has_split(ds.spec, "test")


def test_the_split_a_folder_lacks_is_one_line_naming_what_it_has(tmp_path):
    only_train = _tree(tmp_path / "a", {"train/cat": 1, "train/dog": 1})
    assert _refusal(parse_spec(f"folder:{only_train}", "test")) == (
        f"{only_train} has no test/ folder (it has train/): use --split train")
    only_test = _tree(tmp_path / "b", {"test/cat": 2, "test/dog": 1})
    assert _refusal(parse_spec(f"folder:{only_test}")) == (
        f"{only_test} has no train/ folder (it has test/): use --split test")
    ds = open_dataset(parse_spec(f"folder:{only_test}", "test"))
    assert ds.samples.classes == ["cat", "dog"] and len(ds.samples) == 3
    assert ds.samples.paths[0] == "test/cat/0000.png"
    assert has_split(ds.spec, "test") and not has_split(ds.spec, "train")


def test_a_split_folder_beside_other_folders_is_refused(tmp_path):
    """``train/`` beside ``cat/``: a split folder and a class, or two classes? Neither
    reading is safe, so neither split is read."""
    root = _tree(tmp_path / "d", {"train/cat": 2, "train/dog": 2, "cat": 2})
    expected = (f"{root} has train/ beside other folders (cat/): keep only train/ and test/ "
                f"in it, or give folder:{root / 'train'}")
    for split in ("train", "test"):
        spec = parse_spec(f"folder:{root}", split)
        assert _refusal(spec) == expected and not has_split(spec, split)
    _tree(root, {"dog": 1, "val/cat": 1, "zebra": 1})
    assert "(cat/, dog/, val/, …)" in _refusal(parse_spec(f"folder:{root}"))
    # The fix the message names works.
    assert open_dataset(parse_spec(f"folder:{root / 'train'}")).samples.classes == [
        "cat", "dog"]


def test_both_split_folders_are_read_as_before(tmp_path):
    """train/ and test/ together were always a split layout; a folder beside them (val/)
    is not read, as before."""
    root = _tree(tmp_path / "d", {"train/cat": 2, "train/dog": 1, "test/cat": 1,
                                  "test/dog": 1, "val/cat": 4})
    train = open_dataset(parse_spec(f"folder:{root}"))
    test = open_dataset(parse_spec(f"folder:{root}", "test"))
    assert len(train.samples) == 3 and len(test.samples) == 2
    assert all(p.startswith("test/") for p in test.samples.paths)
    assert has_split(train.spec, "train") and has_split(train.spec, "test")


def test_a_class_named_train_is_still_a_class(tmp_path):
    """CIFAR-100 has a class named ``train``: a ``train/`` holding images and no
    subfolders is a class folder, as it always was."""
    root = _tree(tmp_path / "d", {"train": 2, "tank": 3, "tractor": 1})
    ds = open_dataset(parse_spec(f"folder:{root}"))
    assert ds.samples.classes == ["tank", "tractor", "train"] and len(ds.samples) == 6
    assert ds.samples.paths[-1] == "train/0001.png"
    assert not has_split(ds.spec, "test")
    assert "its subfolders are the classes" in _refusal(parse_spec(f"folder:{root}", "test"))


def test_a_features_file_has_no_test_split(tmp_path):
    file = tmp_path / "feats.npy"
    np.save(file, np.zeros((4, 2), np.float32))
    message = "features file feats.npy has no test split (a features file is read whole): " \
              "use --split train"
    with pytest.raises(InputError) as info:
        parse_spec(f"features:{file}", "test")
    assert str(info.value) == message
    spec = parse_spec(f"features:{file}")
    assert has_split(spec, "train") and not has_split(spec, "test")
    with pytest.raises(InputError, match="has no test split"):
        split_spec(spec, "test")


# A top-level folder of a random dataset: a split-like folder (class subfolders), a flat
# class folder (images only), or a hidden one.
SHAPES = st.sampled_from(["classes", "flat", "hidden"])


@settings(max_examples=60, deadline=None)
@given(layout=st.dictionaries(st.sampled_from(["train", "test", "cat", "val"]), SHAPES,
                              min_size=1, max_size=4))
def test_has_split_agrees_with_open_dataset(layout):
    """On any mix of split, class and hidden folders: each split is either read or refused
    in one line, has_split says which beforehand, and a folder of class folders is never
    read as one class (the silent misreading a split folder once got)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, shape in layout.items():
            folder = root / ("." + name if shape == "hidden" else name)
            if shape == "flat":
                _images(folder, 1)
            else:
                _tree(folder, {"a": 1, "b": 1})
        spec = parse_spec(f"folder:{root}")
        for split in ("train", "test"):
            try:
                ds = open_dataset(split_spec(spec, split))
            except InputError as exc:
                # A split the folder has may still hold nothing to read (only hidden folders).
                assert "\n" not in str(exc), str(exc)
                assert not has_split(spec, split) or "no class subfolders" in str(exc), str(exc)
                continue
            assert has_split(spec, split)
            assert all((root / p).is_file() for p in ds.samples.paths)
            for name in set(ds.samples.classes) & {"train", "test"}:
                # Read as a class only when it is a class folder: images, no subfolders.
                assert not any(p.is_dir() for p in (root / name).iterdir()), layout
