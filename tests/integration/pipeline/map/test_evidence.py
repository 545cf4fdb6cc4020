"""The adaptive rule's evidence on a copy of the digits run: stored in the run and the
manifest, recomputed when the labels change, reported by ``curator evaluate`` beside the
truth, and read from the neighbours on large runs."""

from __future__ import annotations

import csv

import numpy as np

from tests.golden import DIGITS_NOISE10, check_digits_evaluation
from worker.pipeline.storage.sample_table import SampleTable


def test_score_and_suggestion_reach_the_run_and_the_manifest(fresh_run):
    from worker.pipeline.curation.rule_evidence import load_evidence
    from worker.pipeline.curation.snapshot import current_decisions
    from worker.pipeline.export import export

    ev = load_evidence(fresh_run)
    samples, decisions, _ = current_decisions(fresh_run)
    assert ev["score"].shape == (len(samples),) and ev["suggested"].dtype == np.int64
    dest = export(fresh_run, "csv", "scored")
    with open(dest / "manifest.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {"score", "suggested_label", "given_label"} <= set(rows[0])
    assert [int(r["index"]) for r in rows] == list(range(len(samples)))
    assert np.allclose([float(r["score"]) for r in rows], ev["score"], atol=1e-4)
    for r, flagged, code in zip(rows, decisions.flagged, ev["suggested"], strict=True):
        assert r["suggested_label"] == (samples.classes[code] if flagged else "")


def test_evidence_is_recomputed_when_the_labels_change(fresh_run):
    """A run whose labels changed (a new samples table) never reads stale evidence."""
    from worker.pipeline.curation.cluster_step import cluster_step
    from worker.pipeline.curation.rule_evidence import load_evidence

    before = load_evidence(fresh_run)["score"].copy()
    cluster_step(fresh_run)  # current: nothing recomputed
    assert np.array_equal(load_evidence(fresh_run)["score"], before)
    samples = fresh_run.read_samples()
    fresh_run.write_samples(SampleTable(samples.paths, samples.true_labels,
                                        samples.true_labels, samples.classes))
    cluster_step(fresh_run)
    after = load_evidence(fresh_run)["score"]
    wrong = samples.labels != samples.true_labels
    assert after[wrong].mean() < 0.3 < before[wrong].mean()


def test_evaluate_reports_the_estimated_noise_beside_the_truth(fresh_run):
    from worker.pipeline.evaluation.run_report import evaluate, format_report

    result = evaluate(fresh_run, with_cleanlab=False)
    total = result["noise_estimate"][-1]
    assert total["class"] == "total" and total["true_pct"] == DIGITS_NOISE10["true_pct"]
    low, high = total["estimated_pct"], total["estimated_high_pct"]
    assert low <= high and low - 2.5 < total["true_pct"] < high + 2.5
    assert result["score_auroc"] > 0.95 and "adaptive" in result["rules"]
    check_digits_evaluation(result)
    text = format_report(result)
    assert "wrong labels, estimated from the data" in text and "AUROC" in text
    assert f"{low:.2f}–{high:.2f}%" in text


def test_large_runs_use_the_neighbour_evidence(fresh_run, monkeypatch):
    """Above DENSE_MAX = N·C the cluster step stores knn_evidence's result."""
    from worker.pipeline.curation import rule_evidence as curation
    from worker.pipeline.map.evidence import knn_evidence

    samples = fresh_run.read_samples()
    monkeypatch.setattr(curation, "DENSE_MAX", len(samples) * 10 - 1)
    curation.ensure_evidence(fresh_run, samples)
    stored = curation.load_evidence(fresh_run)
    want = knn_evidence(np.load(curation.neighbours_path(fresh_run)), samples.labels, 10)
    assert np.array_equal(stored["issue"], want.issue)
    assert np.array_equal(stored["suggested"], want.suggested)
