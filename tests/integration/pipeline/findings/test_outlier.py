"""The outlier kind among real CIFAR-10 photographs: its table is its score against its
cut, injected outliers and images of another domain rank high, and a relabel or a drop
decides an outlier."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.integration.conftest import shared_file
from tests.integration.pipeline.findings.test_kind_registry import _first_drop_kind
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.findings import (
    get_kind,
    load_findings,
)
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.sources.inject import read_truth
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.rundir import RunDir

# The kinds tested on runs built here read the features' PCA space and the neighbours
# the embed step stores, not the t-SNE map: a short t-SNE halves these runs' time.
SHORT_MAP = EmbeddingOptions(n_iter=50, exaggeration_iter=25)


# --------------------------------------------------------------------------- outliers
@pytest.fixture(scope="module")
def outlier_run(cifar_mini, tmp_path_factory) -> RunDir:
    """400 real CIFAR-10 photos (40 per class) and 20 injected outliers, through the
    CIFAR ResNet-20. Its weights (akamaster's) were trained on CIFAR-10's train split
    with its true labels: the features know these very classes."""
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    weights = shared_file("weights/resnet20-12fca82f.th")
    base = tmp_path_factory.mktemp("outliers")
    root = base / "imgs"
    for cls in sorted(p.name for p in (cifar_mini / "train").iterdir()):
        (root / cls).mkdir(parents=True)
        for f in sorted((cifar_mini / "train" / cls).glob("*.jpg"))[:40]:
            (root / cls / f.name).write_bytes(f.read_bytes())
    run = RunDir(base / "run")
    run_pipeline(run, DatasetOptions(parse_spec(f"folder:{root}"), inject_outliers=20, seed=0),
                 FeatureOptions(model="cifar-resnet20", weights=weights), SHORT_MAP)
    return run


def _outlier_truth(run: RunDir) -> tuple[np.ndarray, list[dict]]:
    rows = [r for r in read_truth(run.path) if r["kind"] == "outlier"]
    truth = np.zeros(len(run.read_samples()), bool)
    truth[[r["index"] for r in rows]] = True
    return truth, rows


def test_outlier_table_is_its_score_against_its_cut(outlier_run):
    samples = outlier_run.read_samples()
    truth, rows = _outlier_truth(outlier_run)
    assert len(rows) == 20 and truth[400:].all() and not truth[:400].any()
    assert (samples.true_labels[truth] == -1).all()  # an outlier has no true class
    assert {r["how"] for r in rows} == {"digits", "photo", "noise", "blank"}
    table = load_findings(outlier_run, len(samples))["outlier"]
    assert (table.issue == (table.score >= table.info["threshold"])).all()
    # The percentile is the score's rank: the highest score is the farthest point.
    order = np.argsort(table.score, kind="stable")
    assert (np.diff(table.facts["percentile"][order]) > 0).all()


def test_injected_outliers_rank_high_by_score(outlier_run):
    from worker.pipeline.evaluation.run_report import evaluate

    table = load_findings(outlier_run, len(outlier_run.read_samples()))["outlier"]
    truth, _ = _outlier_truth(outlier_run)
    scores = evaluate(outlier_run, with_cleanlab=False)["findings"]["outlier"]
    assert scores["truth"] == 20 and scores["marked"] == int(table.issue.sum())
    assert np.median(table.facts["percentile"][truth]) > 0.8
    assert scores["auroc"] > 0.8
    # queue2x: the share of them among the first 40 samples by score (an oracle count).
    first = np.argsort(-table.score, kind="stable")[:40]
    assert scores["queue2x"] == truth[first].sum() / 20


def test_images_of_another_domain_rank_among_the_farthest(outlier_run):
    """Digits are no photograph of any CIFAR class: whatever the cut, their score puts
    them above 90% of the dataset. (Uniform noise need not: a network trained on CIFAR's
    labels, as these ResNet-20 weights were, maps noise into a class's region, where no
    distance can tell it apart; with ImageNet features it ranks above 97%.)"""
    table = load_findings(outlier_run, len(outlier_run.read_samples()))["outlier"]
    _, rows = _outlier_truth(outlier_run)
    digits = [r["index"] for r in rows if r["how"] == "digits"]
    assert digits and np.median(table.facts["percentile"][digits]) > 0.9, \
        table.facts["percentile"][digits]


def test_a_relabelled_outlier_is_kept_and_a_dropped_one_is_dropped(outlier_run, tmp_path):
    """A relabel says the image belongs to a class: the outlier's default drop yields."""
    run = RunDir(tmp_path / "run")
    shutil.copytree(outlier_run.path, run.path)
    tables = load_findings(run, len(run.read_samples()))
    dropping = get_kind("outlier").dropping(tables["outlier"])
    marked = np.flatnonzero(dropping)
    decisions = current_snapshot(run).decisions
    assert len(marked) and not decisions.kept[marked].any()
    # Below the drop cut an outlier is proposed: kept unless another finding drops it.
    proposed = np.flatnonzero(tables["outlier"].issue & ~dropping)
    assert all(decisions.kept[i] or decisions.reason[i] != "outlier" for i in proposed)
    # Outliers no earlier kind (a duplicate: blank squares can be copies) drops.
    alone = [int(i) for i in marked if _first_drop_kind(tables, int(i)) == "outlier"]
    assert len(alone) >= 2
    first, second = alone[:2]
    assert decisions.reason[first] == decisions.reason[second] == "outlier"
    open_store(run).set_relabels([first], 0)
    decisions = current_snapshot(run).decisions
    assert decisions.kept[first] and decisions.reason[first] == "relabel"
    assert not decisions.kept[second] and decisions.reason[second] == "outlier"
