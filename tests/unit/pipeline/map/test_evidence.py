"""The adaptive rule's evidence on real digits: it adapts to the noise rate, it is stored in
the run and the manifest, it is recomputed when the labels change, and pairs noise."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from sklearn.datasets import load_digits

from tests.golden import DIGITS_NOISE10, check_digits_evaluation
from worker.pipeline.errors import InputError
from worker.pipeline.map.clustering import feature_neighbours
from worker.pipeline.map.embedding import pca_reduce
from worker.pipeline.map.evidence import label_evidence, neighbour_votes
from worker.pipeline.sources.labels import inject_noise, noise_partners
from worker.pipeline.storage.sample_table import SampleTable


@pytest.fixture(scope="module")
def digits_space():
    d = load_digits()
    x = d.data.astype(np.float32)
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    return pca_reduce(x, 50), feature_neighbours(x), d.target.astype(np.int64)


def _table(labels: np.ndarray) -> SampleTable:
    n = len(labels)
    return SampleTable([f"{i}.png" for i in range(n)], labels, np.full(n, -1, np.int64),
                       [str(c) for c in range(10)])


@pytest.mark.parametrize("rate", [0.1, 0.4])
def test_the_flagged_share_follows_the_noise_rate(digits_space, rate):
    """No threshold is fixed: the same data flags ~10% at 10% noise and ~40% at 40%."""
    x, nn, clean = digits_space
    noisy_table = inject_noise(_table(clean), rate, seed=1)
    labels = noisy_table.labels
    ev = label_evidence(x, nn, labels, 10)
    wrong = labels != clean
    # Both counts land near the rate; the smaller one is the more precise.
    for flags, least in ((ev.issue, (0.95, 0.75)), (ev.suspect, (0.85, 0.85))):
        assert abs(flags.mean() - rate) < 0.25 * rate
        tp = (flags & wrong).sum()
        assert tp / flags.sum() > least[0] and tp / wrong.sum() > least[1]
    assert not (ev.issue & ~ev.suspect).any()
    # The score ranks wrong labels above right ones, and the suggestion recovers most.
    assert ev.score[wrong].mean() > 0.5 > 0.2 > ev.score[~wrong].mean()
    assert (ev.suggested[wrong] == clean[wrong]).mean() > 0.85
    assert ev.score.dtype == np.float32 and ((ev.score >= 0) & (ev.score <= 1)).all()


def test_flags_are_the_highest_scores_as_many_as_the_estimated_counts(digits_space):
    """issue / suspect are the top of the score ranking, cut at confident learning's
    off-diagonal and calibrated estimates of how many labels are wrong."""
    from cleanlab.count import num_label_issues

    from worker.pipeline.map.evidence import most_suspect, wrong_label_counts

    x, nn, clean = digits_space
    labels = inject_noise(_table(clean), 0.2, seed=3).labels
    ev = label_evidence(x, nn, labels, 10)
    sure, loose = int(ev.issue.sum()), int(ev.suspect.sum())
    assert sure <= loose
    assert ev.score[ev.issue].min() >= ev.score[~ev.issue].max()
    assert ev.score[ev.suspect].min() >= ev.score[~ev.suspect].max()
    probs = np.eye(10)[clean] * 0.8 + 0.02  # a flat 20% off the true class
    want = sorted(int(num_label_issues(labels, probs, estimation_method=m))
                  for m in ("off_diagonal", "off_diagonal_calibrated"))
    assert list(wrong_label_counts(labels, probs)) == want
    assert want[0] == (labels != clean).sum()  # the joint recovers the injected flips
    assert most_suspect(np.array([0.2, 0.9, 0.2, 0.5]), 3).tolist() == [True, True, False, True]
    one = np.zeros(4, np.int64)  # one class: nothing to estimate, the disputed labels
    assert wrong_label_counts(one, np.array([[1, 0], [0, 1], [1, 0], [0, 1.0]])) == (2, 2)


def test_votes_and_bad_shapes():
    nn = np.array([[1, 2], [0, 2], [0, 1]])
    votes = neighbour_votes(nn, np.array([0, 0, 1]), 3)
    assert votes.tolist() == [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]
    with pytest.raises(InputError, match="one row per sample"):
        label_evidence(np.zeros((3, 2)), nn, np.array([0, 1]), 2)


def test_pairs_noise_flips_each_class_to_one_partner():
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
               "ship", "truck"]
    partner = noise_partners(classes)
    named = {classes[a]: classes[b] for a, b in enumerate(partner)}
    assert named["cat"] == "dog" and named["dog"] == "cat" and named["truck"] == "automobile"
    assert noise_partners(["a", "b", "c"]).tolist() == [1, 0, 1]
    labels = np.repeat(np.arange(10), 100)
    t = SampleTable([str(i) for i in range(1000)], labels, np.full(1000, -1), classes)
    out = inject_noise(t, 0.4, seed=0, kind="pairs")
    flipped = out.labels != labels
    assert flipped.sum() == 400 and (out.labels[flipped] == partner[labels[flipped]]).all()
    assert (out.true_labels == labels).all()
    for bad in (-0.1, float("nan"), 1.0):
        with pytest.raises(InputError, match=r"--inject-noise must be a number ≥ 0 and < 1"):
            inject_noise(t, bad, seed=0)
    with pytest.raises(InputError, match="noise-kind"):
        inject_noise(t, 0.1, seed=0, kind="diagonal")


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


def _dense_confident_joint(nn: np.ndarray, labels: np.ndarray, n_classes: int):
    """knn_evidence's verdict and suggestion computed the obvious way, with (N, C) votes."""
    votes = neighbour_votes(nn, labels, n_classes)
    thresholds = np.array([votes[labels == c, c].mean() for c in range(n_classes)])
    confident = np.where(votes >= thresholds - 1e-9, votes, -1.0)
    best = confident.argmax(1)
    return (confident.max(1) >= 0) & (best != labels), votes.argmax(1)


# F1 of the neighbour evidence alone on the digits pixels (seeded noise): golden values.
@pytest.mark.parametrize("rate, golden_f1", [(0.1, 0.880), (0.3, 0.945)])
def test_knn_evidence_is_the_confident_joint_of_the_votes_without_dense_matrices(
        digits_space, rate, golden_f1):
    from worker.pipeline.map.evidence import knn_evidence

    _, nn, clean = digits_space
    labels = inject_noise(_table(clean), rate, seed=2).labels
    ev = knn_evidence(nn, labels, 10, block=97)  # blocks that do not divide N
    issue, suggested = _dense_confident_joint(nn, labels, 10)
    assert np.array_equal(ev.issue, issue) and np.array_equal(ev.suggested, suggested)
    assert np.allclose(ev.score, 1 - neighbour_votes(nn, labels, 10)[np.arange(len(labels)),
                                                                     labels], atol=1e-5)
    wrong = labels != clean
    tp = (ev.issue & wrong).sum()
    f1 = 2 * tp / (ev.issue.sum() + wrong.sum())
    assert round(f1, 3) == golden_f1, f1


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
