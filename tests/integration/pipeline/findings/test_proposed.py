"""Precision first where the default is to drop: a finding kind drops by
default only the marks whose evidence reaches its drop cut, and proposes the rest (listed,
kept until a person decides); data that holds no copies gets none dropped, and at most two
marked. Real images throughout: scikit-learn's digits (as arrays, and written as JPEG
files) and CIFAR-10 photographs with injected copies."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.export import export
from worker.pipeline.findings import DROPPED, KEPT, PROPOSED, ensure_findings, get_kind
from worker.pipeline.findings.files import load_findings
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.rundir import RunDir

SHORT_MAP = EmbeddingOptions(n_iter=50, exaggeration_iter=25)


def _pipeline(run: RunDir, spec: str, **opts) -> RunDir:
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    model = opts.pop("features", FeatureOptions())
    run_pipeline(run, DatasetOptions(parse_spec(spec), seed=0, **opts), model, SHORT_MAP)
    return run


def _manifest(run: RunDir, name: str) -> list[dict]:
    dest = export(run, "csv", name)
    with open(dest / "manifest.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _no_copy_marks(run: RunDir) -> None:
    """At most two samples marked as duplicates, none dropped; no outlier dropped."""
    n = len(run.read_samples())
    tables = load_findings(run, n)
    dup, out = tables["duplicate"], tables["outlier"]
    assert dup.issue.sum() <= 2, np.flatnonzero(dup.issue)
    assert not get_kind("duplicate").dropping(dup).any()
    assert not get_kind("outlier").dropping(out).any(), out.score.max()


def test_digits_hold_no_copies_and_the_default_drops_only_label_flags(digits_run, tmp_path):
    """The digits demo (10% injected label noise): scikit-learn's 1,797 digits are all
    different pictures, so an export at defaults drops the label rule's flags and at most
    two other samples, and its label F1, counting every dropped row as a flag, stays
    ≥ 0.95."""
    from worker.pipeline.storage.rundir import RunDir as Run

    run = Run(tmp_path / "digits")
    import shutil

    shutil.copytree(digits_run.path, run.path)
    _no_copy_marks(run)
    rows = _manifest(run, "defaults")
    dropped = [r for r in rows if r["decision"] == DROPPED]
    assert all(r["kept"] == "0" for r in dropped)
    assert all(r["kept"] == "1" for r in rows if r["decision"] != DROPPED)
    not_label = [r for r in dropped if r["reason"] != "noise"]
    assert len(not_label) <= 2, not_label
    wrong = {r["index"] for r in rows if r["label"] != r["true_label"]}
    hit = sum(r["index"] in wrong for r in dropped)
    precision, recall = hit / len(dropped), hit / len(wrong)
    assert 2 * precision * recall / (precision + recall) >= 0.95, (precision, recall)
    # The outliers the digits do have are proposed, not dropped: listed, kept. Beside them
    # the image-quality kinds propose at most two: a thick "1", all smooth shading, is
    # blurrier than the other digits to ``blurry`` (its finest detail against its coarser
    # detail, measured 2026-11-29).
    proposed = [r for r in rows if r["decision"] == PROPOSED]
    others = [r for r in proposed if "outlier" not in r["findings"]
              and "duplicate" not in r["findings"]]
    quality = ("dark", "bright", "blurry", "low_info", "grey", "overexposed", "border",
               "odd_size")
    assert len(others) <= 2 and all(any(k in r["findings"] for k in quality)
                                    for r in others), others


def test_digits_written_as_jpeg_files_hold_no_copies(tmp_path):
    """The same digits as a folder of JPEG files (8 px, quality 90): JPEG's loss makes
    no two of them copies."""
    from sklearn.datasets import load_digits

    d = load_digits()
    root = tmp_path / "digits-jpeg"
    for i, (img, y) in enumerate(zip(d.images, d.target, strict=True)):
        folder = root / str(y)
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.round(img * 255 / 16).astype(np.uint8)).save(
            folder / f"{i:04d}.jpg", quality=90)
    from worker.pipeline.features.feature_options import FeatureOptions

    # Pixel features: each digit's candidates are the digits that look most like it (the
    # hardest case for the copy test), and no network runs (bench.copy_evidence runs the
    # default backbone on the same files: no mark either).
    run = _pipeline(RunDir(tmp_path / "run"), f"folder:{root}",
                    features=FeatureOptions(model="pixels"))
    _no_copy_marks(run)


@pytest.fixture(scope="module")
def copies_run(cifar_mini, tmp_path_factory) -> RunDir:
    """300 CIFAR-10 photographs with 10% injected copies of every strength, through the
    CIFAR ResNet-20 (trained on CIFAR-10's true labels: it knows these classes)."""
    from tests.integration.conftest import shared_file
    from worker.pipeline.features.feature_options import FeatureOptions

    base = tmp_path_factory.mktemp("copies")
    root = base / "imgs"
    for cls in sorted(p.name for p in (cifar_mini / "train").iterdir()):
        (root / cls).mkdir(parents=True)
        for f in sorted((cifar_mini / "train" / cls).glob("*.jpg"))[:30]:
            (root / cls / f.name).write_bytes(f.read_bytes())
    weights = shared_file("weights/resnet20-12fca82f.th")
    return _pipeline(RunDir(base / "run"), f"folder:{root}", inject_duplicates=0.1,
                     duplicate_strength="mixed",
                     features=FeatureOptions(model="cifar-resnet20", weights=weights))


def _proposed_and_dropped(run: RunDir) -> tuple[np.ndarray, np.ndarray]:
    table = load_findings(run, len(run.read_samples()))["duplicate"]
    kind = get_kind("duplicate")
    dropped = kind.dropping(table)
    assert not (dropped & ~table.issue).any()  # a drop is a mark
    return np.flatnonzero(table.issue & ~dropped), np.flatnonzero(dropped)


def test_copies_below_the_drop_cut_are_proposed_everywhere(copies_run):
    """Strong evidence drops (identical pixels, a close match that stands out), the rest is
    proposed: the export's decision column, ``curator findings`` and the review list say
    which, and a proposed copy trains in ``filtered`` (it is kept)."""
    from app.curate.review_queue import queue_rows
    from app.run_data import current_state, run_data

    proposed, dropped = _proposed_and_dropped(copies_run)
    assert len(proposed) and len(dropped), (proposed, dropped)
    table = load_findings(copies_run, len(copies_run.read_samples()))["duplicate"]
    exact = table.facts["exact"] & table.issue  # the kept copy is "exact" to itself too
    assert np.isin(np.flatnonzero(exact), dropped).all()  # identical pixels: dropped
    rows = {int(r["index"]): r for r in _manifest(copies_run, "decisions")}
    for i in proposed.tolist():
        if rows[i]["reason"] == "cluster":  # the label rule does not flag it either
            assert rows[i]["decision"] == PROPOSED and rows[i]["kept"] == "1", rows[i]
    for i in dropped.tolist():
        assert rows[i]["decision"] == DROPPED and rows[i]["kept"] == "0"
    r = subprocess.run([sys.executable, "-m", "worker.cli", "findings", str(copies_run.path),
                        "--kind", "duplicate", "--json", "--top", "10000"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)["kinds"][0]
    assert listed["proposed"] >= 1 and listed["dropped"] >= len(dropped)
    by_sample = {item["sample"]: item["decision"] for item in listed["top"]}
    assert {by_sample[i] for i in dropped.tolist()} == {DROPPED}
    assert PROPOSED in {by_sample[i] for i in proposed.tolist()}
    data = run_data(copies_run.path.parent, copies_run.path.name)
    states = {r["sample"]: r["state"] for r in queue_rows(data, current_state(data), "run")}
    assert {states[i] for i in dropped.tolist()} <= {"flagged"}
    assert "proposed" in {states[i] for i in proposed.tolist()}


def test_a_person_decides_a_proposed_copy(copies_run, tmp_path):
    """Drop or keep a proposed copy: it is no longer proposed, and undo brings it back."""
    import shutil

    run = RunDir(tmp_path / "run")
    shutil.copytree(copies_run.path, run.path)
    proposed, _ = _proposed_and_dropped(run)
    snap = current_snapshot(run)
    free = [i for i in proposed.tolist() if snap.decisions.reason[i] == "cluster"]
    assert len(free) >= 1
    before = snap.proposed()["duplicate"]
    store = open_store(run)
    store.set_overrides([free[0]], "drop")
    rows = {int(r["index"]): r for r in _manifest(run, "after-drop")}
    assert rows[free[0]]["decision"] == DROPPED
    assert current_snapshot(run).proposed().get("duplicate", 0) == before - 1
    store.undo()
    store.set_overrides([free[0]], "keep")
    rows = {int(r["index"]): r for r in _manifest(run, "after-keep")}
    assert rows[free[0]]["decision"] == KEPT and rows[free[0]]["reason"] == "override_keep"


def test_the_drop_cut_is_a_second_number(copies_run, tmp_path):
    """``--duplicate-drop-threshold 1``: only identical pixels are dropped, every other copy
    is proposed; the marks stay the same (the propose cut did not move)."""
    import shutil

    run = RunDir(tmp_path / "run")
    shutil.copytree(copies_run.path, run.path)
    before = load_findings(run, len(run.read_samples()))["duplicate"].issue
    r = subprocess.run([sys.executable, "-m", "worker.cli", "findings", str(run.path),
                        "--duplicate-drop-threshold", "1", "--top", "0"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    table = load_findings(run, len(run.read_samples()))["duplicate"]
    assert (table.issue == before).all()
    assert (get_kind("duplicate").dropping(table) == (table.issue & table.facts["exact"])).all()
    # The cut is kept for the run's later findings steps.
    ensure_findings(run)
    assert run.read_meta()["steps"]["findings"]["kinds"]["duplicate"]["drop_threshold"] == 1.0


def test_an_experiment_says_what_filtered_kept_that_findings_only_propose(copies_run,
                                                                         tmp_path):
    from worker.train.experiment import _write_curation, curation_line

    out = tmp_path / "exp"
    out.mkdir()
    _write_curation(copies_run, out)
    info = json.loads((out / "curation.json").read_text())
    proposed = current_snapshot(copies_run).proposed()
    assert info["proposed"] == proposed and proposed.get("duplicate", 0) >= 1
    line = curation_line(out, {"full", "filtered"})
    assert line.startswith("filtered kept") and "corrected" not in line
    assert f"duplicate {proposed['duplicate']}" in line and "propose" in line
    assert curation_line(out, {"full", "filtered", "corrected"}).startswith(
        "filtered and corrected kept")
    assert curation_line(out, {"full", "random"}) == ""  # no curated subset trained
    assert curation_line(Path(tmp_path / "none"), {"filtered"}) == ""
