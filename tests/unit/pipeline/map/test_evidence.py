"""The adaptive rule's label evidence (worker/pipeline/map/evidence.py) on digits'
features: it adapts to the noise rate, flags the highest scores as many as the estimated
counts, pairs noise, and the neighbour votes give confident learning's joint without
dense matrices. How the evidence reaches a run is tested in
tests/integration/pipeline/map/test_evidence.py."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

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
