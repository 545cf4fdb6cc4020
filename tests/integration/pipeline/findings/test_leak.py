"""Leaks into the test split, end to end through the ``curator`` command line: a folder
dataset with ``train/`` and ``test/`` of real CIFAR-10 JPEGs, five test images planted
among the train images (two byte-for-byte copies, two re-encoded at JPEG quality 85, one
mirrored), the CIFAR ResNet-20 (akamaster's weights, trained on CIFAR-10's train split with
its true labels) as the backbone."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageOps

from tests.integration.conftest import shared_file

TRAIN_PER_CLASS, TEST_PER_CLASS = 30, 10
# (class, which test image of it, how it is planted among the train images)
PLANTED = [("airplane", 0, "exact"), ("cat", 1, "exact"), ("dog", 2, "jpeg85"),
           ("ship", 3, "jpeg85"), ("truck", 4, "mirror")]


def curator(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worker.cli", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def leak_run(cifar_mini, tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(run, dataset folder, planted train path → its test image's path), both paths
    relative to the dataset folder as the run records them."""
    weights = shared_file("weights/resnet20-12fca82f.th")
    base = tmp_path_factory.mktemp("leak")
    root = base / "data"
    classes = sorted(p.name for p in (cifar_mini / "train").iterdir())
    for split, per in (("train", TRAIN_PER_CLASS), ("test", TEST_PER_CLASS)):
        for cls in classes:
            (root / split / cls).mkdir(parents=True)
            for f in sorted((cifar_mini / split / cls).glob("*.jpg"))[:per]:
                (root / split / cls / f.name).write_bytes(f.read_bytes())
    planted = {}
    for cls, k, how in PLANTED:
        src = sorted((root / "test" / cls).glob("*.jpg"))[k]
        dest = root / "train" / cls / f"planted_{how}_{k}.jpg"
        if how == "exact":
            dest.write_bytes(src.read_bytes())
        elif how == "jpeg85":
            Image.open(src).convert("RGB").save(dest, "JPEG", quality=85)
        else:
            ImageOps.mirror(Image.open(src).convert("RGB")).save(dest, "JPEG", quality=95)
        planted[dest.relative_to(root).as_posix()] = src.relative_to(root).as_posix()
    run = base / "run"
    r = curator("pipeline", "--dataset", f"folder:{root}", "--model", "cifar-resnet20",
                "--weights", str(weights), "--out", str(run))
    assert r.returncode == 0, r.stderr
    counts = next(ln for ln in r.stdout.splitlines() if ln.startswith("findings:"))
    assert "leak" in counts and "no test split" not in counts, counts
    return run, root, planted


def _exact(planted: dict[str, str]) -> dict[str, str]:
    return {p: t for p, t in planted.items() if "_exact_" in p}


def _findings_json(run: Path) -> dict:
    r = curator("findings", str(run), "--kind", "leak", "--json", "--top", "1000")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_leak_kind_marks_the_planted_test_images(leak_run, record_property):
    run, _, planted = leak_run
    report = _findings_json(run)
    assert [k["name"] for k in report["kinds"]] == ["leak"]
    leak = report["kinds"][0]
    assert leak["decision"] == "drop" and leak["count"] == len(leak["top"])
    assert leak["info"]["test_images"] == 10 * TEST_PER_CLASS
    with open(run / "test_samples.csv", newline="") as fh:
        test_paths = [r["path"] for r in csv.DictReader(fh)]
    found = {item["path"]: item for item in leak["top"]}
    # The byte-for-byte copies are found, each with its own test image.
    for path, test in _exact(planted).items():
        assert path in found, (path, sorted(found))
        item = found[path]
        assert test_paths[item["related"]] == test and test in item["why"]
        assert item["kept"] is False
    # A re-encoded or mirrored copy found points at its own test image too; nothing else
    # of 300 train photos is a copy of one of the 100 test photos.
    near = {p: t for p, t in planted.items() if p not in _exact(planted)}
    for path, item in found.items():
        assert path in planted, f"{path} marked as a leak of {test_paths[item['related']]}"
        assert test_paths[item["related"]] == planted[path]
    record_property("near_leaks_found", f"{len(set(found) & set(near))} of {len(near)}")
    print(f"near copies found as leaks: {sorted(set(found) & set(near))} of {sorted(near)}")
    # The text report says the same.
    r = curator("findings", str(run), "--kind", "leak")
    assert r.returncode == 0 and f"leak (leak into the test split): {leak['count']} marked" \
        in r.stdout and all(p in r.stdout for p in _exact(planted))


def test_the_review_queue_puts_the_planted_copies_first(leak_run):
    """The leak score orders the review list (detectors/leak.py ``queue_score``): the five
    planted copies, the re-encoded and mirrored ones too, fill its first rows, ahead of
    every one of the 300 other train photos."""
    import numpy as np

    from worker.pipeline.findings.files import load_findings
    from worker.pipeline.storage.rundir import RunDir

    run, _, planted = leak_run
    samples = RunDir(run).read_samples()
    table = load_findings(RunDir(run), len(samples))["leak"]
    first = np.argsort(-np.asarray(table.score, np.float64), kind="stable")[:len(planted)]
    assert {samples.paths[i] for i in first} == set(planted)


def test_the_export_names_the_test_image_and_drops_the_train_copy(leak_run):
    run, root, planted = leak_run
    r = curator("export", str(run), "--dest", "e")
    assert r.returncode == 0, r.stderr
    with open(run / "exports" / "e" / "manifest.csv", newline="") as fh:
        rows = {row["path"]: row for row in csv.DictReader(fh)}
    assert len(rows) == 10 * TRAIN_PER_CLASS + len(PLANTED)
    for path, test in _exact(planted).items():
        row = rows[path]
        assert row["leaks_to"] == test and (root / row["leaks_to"]).is_file()
        assert (row["kept"], row["reason"]) == ("0", "leak")
        assert "leak" in row["findings"].split(",")
    for path, row in rows.items():  # leaks_to is filled for leaks only, and always right
        assert row["leaks_to"] in ("", planted.get(path)), (path, row["leaks_to"])
        assert bool(row["leaks_to"]) == ("leak" in row["findings"].split(","))
    # The test split the leaks point into is listed with the run.
    with open(run / "test_samples.csv", newline="") as fh:
        test_rows = list(csv.DictReader(fh))
    assert list(test_rows[0]) == ["index", "path", "label"]
    assert [int(t["index"]) for t in test_rows] == list(range(10 * TEST_PER_CLASS))
    assert all(t["path"] == f"test/{t['label']}/{Path(t['path']).name}"
               and (root / t["path"]).is_file() for t in test_rows)


def test_findings_again_reuses_the_cached_test_features(leak_run):
    run, _, _ = leak_run
    cached = sorted((run / "cache").glob("test-features-*.npy"))
    assert len(cached) == 1
    watched = [cached[0], run / "test_thumbnails.npy", run / "findings" / "leak.npz"]
    before = [p.stat().st_mtime_ns for p in watched]
    first = _findings_json(run)
    second = _findings_json(run)
    assert [p.stat().st_mtime_ns for p in watched] == before
    assert first == second


def test_training_reports_accuracy_without_the_leaked_test_images(leak_run):
    """A retraining evaluates on the test split twice: whole, and without the test images
    a train image nearly copies; the summary and the per-epoch metrics say how many were
    left out, and the accuracy without them is computed over the others."""
    from worker.pipeline.findings.files import load_table
    from worker.pipeline.findings.testsplit import read_test_paths
    from worker.pipeline.storage.rundir import RunDir
    from worker.train.data import leaked_mask

    run, _, planted = leak_run
    r = curator("retrain", str(run), "--subset", "full", "--epochs", "1", "--batch-size", "64",
                "--model", "cifar-resnet20",
                "--name", "leaks")
    assert r.returncode == 0, r.stderr
    summary = json.loads((run / "train" / "leaks" / "summary.json").read_text())
    table = load_table(RunDir(run), "leak", len(RunDir(run).read_samples()))
    paths = read_test_paths(RunDir(run))
    leaked = {paths[j] for j in table.related[table.issue].tolist()}
    assert set(planted.values()) <= leaked
    assert summary["test_leaked"] == len(leaked) and summary["test_size"] == 100
    mask = leaked_mask(RunDir(run), paths)
    assert int(mask.sum()) == len(leaked)
    acc, clean = summary["final_test_acc"], summary["final_test_acc_without_leaks"]
    assert 0.0 <= clean <= 1.0 and 0.0 <= acc <= 1.0
    # Whole = the clean images' share of right answers plus the leaked ones': the two
    # figures can differ only by what the leaked images contribute.
    n, k = summary["test_size"], summary["test_leaked"]
    assert abs(acc * n - clean * (n - k)) <= k + 1e-6
    last = [json.loads(ln) for ln in (run / "train" / "leaks" / "metrics.jsonl")
            .read_text().splitlines()][-1]
    assert last["test_leaked"] == k and last["test_acc_without_leaks"] == clean


def test_injected_leaks_are_scored_with_the_review_queue(leak_run, tmp_path):
    """``--inject-leaks``: exact copies of 10 test images put into train
    are all found, each with its own test image, and the leak review queue holds all of
    them within its first 20 rows; ``curator evaluate`` scores them."""
    from worker.pipeline.curation.snapshot import current_snapshot
    from worker.pipeline.evaluation.findings_scores import findings_scores
    from worker.pipeline.sources.inject import read_truth
    from worker.pipeline.storage.rundir import RunDir

    _, root, _ = leak_run
    run = tmp_path / "injected"
    r = curator("pipeline", "--dataset", f"folder:{root}", "--inject-leaks", "10",
                "--duplicate-strength", "exact", "--model", "cifar-resnet20", "--weights",
                str(shared_file("weights/resnet20-12fca82f.th")), "--out", str(run))
    assert r.returncode == 0, r.stderr
    truth = read_truth(run)
    assert [t["kind"] for t in truth] == ["leak"] * 10
    scores = findings_scores(current_snapshot(RunDir(run)), truth)["leak"]
    assert scores["recall"] == 1.0 and scores["queue_recall_at_2x"] == 1.0, scores
    assert scores["recall_by_strength"] == {"exact": 1.0}
    r = curator("evaluate", str(run))
    assert r.returncode == 0, r.stderr
    # The fixture's 5 planted test images are leaks too: found, they count against
    # precision (a lower bound).
    assert re.search(r"leak: P 0\.\d+ R 1\.000", r.stdout), r.stdout
    assert "recall by strength exact 1.00" in r.stdout
    assert "the first 20 of the review queue hold 100% of them" in r.stdout
