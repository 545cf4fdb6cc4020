"""The per-class rules (worker/pipeline/map/clustering.py): bad parameters refused, empty,
single and tiny classes, auto eps finding the outliers, NaN and inf features refused,
overrides winning, and a cut flagging a class's top scores."""

from __future__ import annotations

import numpy as np
import pytest

from worker.pipeline.errors import InputError
from worker.pipeline.map.clustering import (
    RuleInputs,
    auto_eps,
    auto_params,
    cluster_all,
    cut_bands,
    decide,
)
from worker.pipeline.map.dbscan import dbscan_once
from worker.pipeline.map.embedding import check_features


@pytest.mark.parametrize("eps, ms, message", [
    (0.0, 5, "--eps must be a number > 0"), (-1.0, 5, "--eps must be a number > 0"),
    (float("nan"), 5, "--eps must be a number > 0"), (1.0, 0, "--min-samples must be"),
    (1.0, 2.5, "--min-samples must be"),
])
def test_bad_parameters_are_refused(eps, ms, message):
    with pytest.raises(InputError, match=message):
        dbscan_once(np.zeros((50, 2)), eps, ms)


def test_empty_single_and_tiny_classes():
    emb = np.array([[0, 0], [0.1, 0], [0.2, 0], [5, 5], [9, 9]], dtype=np.float32)
    labels = np.array([0, 0, 0, 1, 2])  # class 3 has no points at all
    params = auto_params(emb, labels, n_classes=4, min_samples=5)
    assert set(params) == {0, 1, 2, 3} and all(e > 0 for e, _ in params.values())
    clusters = cluster_all(emb, labels, params)
    assert (clusters == -1).all()  # fewer than min_samples points: nothing can be core
    assert dbscan_once(np.empty((0, 2)), 1.0, 5).shape == (0,)
    assert auto_eps(emb[:1], 5) is None
    clusters = cluster_all(emb, labels, {0: (0.15, 2), 1: (1.0, 1), 2: (1.0, 1), 3: (1.0, 1)})
    assert clusters.tolist() == [0, 0, 0, 0, 0]


def test_auto_eps_finds_the_outliers():
    rng = np.random.default_rng(1)
    blob = rng.normal(0, 1, (500, 2))
    outliers = rng.uniform(8, 12, (10, 2)) * rng.choice([-1, 1], (10, 2))
    pts = np.vstack([blob, outliers])
    eps = auto_eps(pts, 5)
    labels = dbscan_once(pts, eps, 5)
    assert (labels[500:] == -1).all()
    assert (labels[:500] == -1).mean() < 0.05


def test_nan_and_inf_features_are_refused():
    x = np.ones((10, 3), dtype=np.float32)
    x[4, 1] = np.nan
    x[7, 0] = np.inf
    with pytest.raises(InputError, match=r"row 4 has NaN or inf \(2 row\(s\) do\)"):
        check_features(x)


def test_overrides_win_and_rules_differ():
    clusters = np.array([0, -1, -1, 0, 0])
    agreement = np.array([1.0, 0.9, 0.3, 0.2, 0.1], dtype=np.float32)
    inputs = RuleInputs(agreement, issue=np.array([0, 0, 0, 1, 0], bool),
                        suspect=np.array([0, 0, 1, 1, 1], bool))
    d = decide(clusters, inputs, {}, "dbscan")
    assert d.flagged.tolist() == [False, True, True, False, False]
    d = decide(clusters, inputs, {}, "dbscan-knn")
    assert d.flagged.tolist() == [False, False, True, False, True]
    # adaptive: an issue anywhere, a suspect only where DBSCAN calls it noise.
    d = decide(clusters, inputs, {}, "adaptive")
    assert d.flagged.tolist() == [False, False, True, True, False]
    with pytest.raises(InputError, match="needs label evidence"):
        decide(clusters, RuleInputs(agreement), {}, "adaptive")
    d = decide(clusters, inputs, {2: "keep", 0: "drop"}, "dbscan-knn")
    assert d.kept.tolist() == [False, True, True, True, False]
    assert d.reason.tolist() == ["override_drop", "cluster", "override_keep", "cluster", "noise"]


def test_a_cut_flags_the_class_s_top_scores_and_leaves_dbscan_nothing():
    score = np.array([0.9, 0.1, 0.8, 0.7, 0.2, 0.6, 0.95, 0.3, 0.5, 0.4, 0.99, 0.0])
    members = [np.arange(10), np.arange(10, 12)]
    ranked = [6, 0, 2, 3, 5, 8, 9, 7, 4, 1]
    issue = np.isin(np.arange(12), [6, 0, 10])
    suspect = np.isin(np.arange(12), [6, 0, 2, 3, 10])
    inputs = RuleInputs(None, issue, suspect)
    assert cut_bands(inputs, score, members, {}) is inputs
    for k in (0, 1, 5, 10, 20):
        out = cut_bands(inputs, score, members, {0: k})
        assert list(np.flatnonzero(out.issue[:10])) == sorted(ranked[:k]), k
        assert np.array_equal(out.suspect[:10], out.issue[:10])  # no band left
        # The other class keeps the rule's bands.
        assert out.issue[10] and out.suspect[10] and not out.suspect[11]
