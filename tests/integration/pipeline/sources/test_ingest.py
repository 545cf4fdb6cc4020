"""Ingest of real images (worker/pipeline/sources/ingest.py): folders with splits, CIFAR-10
batches, labels CSVs that override and record the truth, CIFAR-10N's labels, corrupt JPEGs
and links that leave the dataset folder skipped and listed."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from worker.pipeline.errors import InputError
from worker.pipeline.sources.datasets import open_dataset, parse_spec
from worker.pipeline.sources.ingest import DatasetOptions, ingest, open_run_dataset
from worker.pipeline.sources.labels import apply_labels_csv
from worker.pipeline.storage.rundir import RunDir


def test_folder_with_splits_uses_paths_relative_to_dir(cifar_mini):
    ds = open_dataset(parse_spec(f"folder:{cifar_mini}", split="test"))
    assert len(ds.samples) == 1000 and len(ds.samples.classes) == 10
    assert ds.samples.paths[0] == "test/airplane/0000.jpg"
    assert ds.load_image(0).size == (32, 32)


def test_cifar10_batches_folder(cifar_batches):
    train = open_dataset(parse_spec(f"cifar10:{cifar_batches}"))
    test = open_dataset(parse_spec(f"cifar10:{cifar_batches}", split="test"))
    assert train.arrays.shape == (400, 32, 32, 3) and len(test.samples) == 400
    assert train.samples.classes[0] == "airplane"
    assert np.bincount(train.samples.labels).tolist() == [40] * 10


def _write_csv(path, rows, header=("path", "label")):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_labels_csv_overrides_and_records_truth(small_folder, tmp_path):
    ds = open_dataset(parse_spec(f"folder:{small_folder}"))
    first = ds.samples.paths[0]
    csv_path = _write_csv(tmp_path / "l.csv", [(first, "ship", "airplane")],
                          ("path", "noisy", "clean"))
    out = apply_labels_csv(ds.samples, csv_path, "noisy", "clean")
    assert out.classes[out.labels[0]] == "ship" and out.classes[out.true_labels[0]] == "airplane"
    assert (out.labels[1:] == ds.samples.labels[1:]).all()


@pytest.mark.parametrize("rows, column, message", [
    ([("nope/0.jpg", "cat")], "label", "paths not in the dataset"),
    ([("airplane/0000.jpg", "zebra")], "label", "unknown classes"),
    ([("airplane/0000.jpg", "cat")], "aggre_label", "needs columns"),
])
def test_labels_csv_errors(small_folder, tmp_path, rows, column, message):
    ds = open_dataset(parse_spec(f"folder:{small_folder}"))
    with pytest.raises(InputError, match=message):
        apply_labels_csv(ds.samples, _write_csv(tmp_path / "l.csv", rows), column)


def test_cifar10n_labels_on_the_shared_csv(cifar_mini, tmp_path):
    """The CIFAR-10N CSV's paths are relative to cifar10/; a subset CSV fits the mini folder."""
    from tests.integration.conftest import shared_file

    src = shared_file("cifar10n-train-labels.csv")
    have = set(open_dataset(parse_spec(f"folder:{cifar_mini}")).samples.paths)
    with open(src, newline="") as fh, open(tmp_path / "n.csv", "w", newline="") as out:
        reader = csv.DictReader(fh)
        w = csv.DictWriter(out, reader.fieldnames)
        w.writeheader()
        w.writerows(r for r in reader if r["path"] in have)
    ds = open_dataset(parse_spec(f"folder:{cifar_mini}"))
    s = apply_labels_csv(ds.samples, tmp_path / "n.csv", "aggre_label", "clean_label")
    wrong = (s.labels != s.true_labels).mean()
    assert (s.true_labels >= 0).all() and 0.03 < wrong < 0.2  # CIFAR-10N aggre: ~9% wrong


def test_corrupt_jpeg_is_skipped_and_listed(small_folder, tmp_path, capsys):
    bad = small_folder / "cat" / "0003.jpg"
    bad.write_bytes(bad.read_bytes()[:200])  # truncated JPEG
    (small_folder / "ship" / "0001.jpg").write_bytes(b"not an image at all")
    run = RunDir(tmp_path / "run")
    ds = ingest(run, DatasetOptions(parse_spec(f"folder:{small_folder}")))
    skipped = dict(run.read_skipped())
    assert set(skipped) == {"cat/0003.jpg", "ship/0001.jpg"}
    assert len(ds.samples) == 88 and run.read_meta()["n_skipped"] == 2
    # No silent shift: every kept row still names its own file.
    assert "cat/0003.jpg" not in ds.samples.paths and "cat/0004.jpg" in ds.samples.paths
    thumbs = np.load(run.thumbnails)
    assert len(thumbs) == 88  # the readable images' rows only, in sample order
    for i in (0, ds.samples.paths.index("cat/0004.jpg"), 87):
        assert np.array_equal(thumbs[i], np.asarray(ds.load_image(i)))
    assert not list(run.path.glob(".*.tmp*"))  # no temp file left
    reopened = open_run_dataset(run)
    assert reopened.samples.paths == ds.samples.paths


def _links_out(folder: Path, outside: Path) -> None:
    """A file link and a class-folder link in ``folder`` that resolve to ``outside``."""
    outside.mkdir()
    first = sorted((folder / "cat").glob("*.jpg"))[0]
    (outside / "secret.jpg").write_bytes(first.read_bytes())
    (folder / "cat" / "leak.jpg").symlink_to(outside / "secret.jpg")
    (folder / "evil").symlink_to(outside)
    (folder / "ship" / "inside.jpg").symlink_to(first)  # a link that stays inside is kept
    (folder / "empty").mkdir()  # a class of no images is no class, and says so


def test_links_that_leave_the_dataset_folder_are_skipped_and_listed(small_folder, tmp_path):
    """A symlink to a file or class folder outside the dataset folder is never
    read; it is listed in skipped.csv with the reason, and the CLI's summary counts it."""
    from tests.integration.conftest import curator

    _links_out(small_folder, tmp_path / "outside")
    out = tmp_path / "run"
    r = curator("extract", "--dataset", f"folder:{small_folder}", "--model", "pixels",
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert ("3 files skipped (2 links outside the dataset folder, 1 class folder holds no "
            "images; see skipped.csv)") in r.stdout
    run = RunDir(out)
    assert dict(run.read_skipped()) == {"cat/leak.jpg": "links outside the dataset folder",
                                        "evil/": "links outside the dataset folder",
                                        "empty/": "class folder holds no images"}
    samples = run.read_samples()
    assert samples.classes == ["airplane", "cat", "ship"] and len(samples) == 91
    assert "ship/inside.jpg" in samples.paths and len(np.load(run.thumbnails)) == 91
