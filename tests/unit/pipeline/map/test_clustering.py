"""DBSCAN equivalence with scikit-learn, auto eps, edge-case classes, bad parameters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.pipeline.errors import InputError
from worker.pipeline.map.clustering import (
    DEFAULT_MIN_SAMPLES,
    RuleInputs,
    auto_eps,
    auto_params,
    cluster_all,
    decide,
    knn_agreement,
)
from worker.pipeline.map.dbscan import dbscan_once, sklearn_dbscan
from worker.pipeline.map.embedding import check_features


def test_labels_identical_to_sklearn_on_random_blobs():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 300))
        centres = rng.normal(0, 5, (int(rng.integers(1, 5)), 2))
        pts = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 1, (n, 2))
        pts = pts.astype(np.float32)
        if trial % 4 == 0:
            pts = np.round(pts, 1)  # duplicates and distances exactly equal to eps
        eps = 0.1 if trial % 3 == 0 else float(rng.uniform(0.05, 1.5))
        ms = int(rng.integers(1, 12))
        ours = dbscan_once(pts, eps, ms)
        assert np.array_equal(ours, sklearn_dbscan(pts, eps, ms)), (trial, n, eps, ms)


def test_labels_identical_to_sklearn_on_a_real_embedding(digits_run):
    emb = np.load(digits_run.embedding)
    labels = digits_run.read_samples().labels
    for c in range(10):
        pts = emb[labels == c]
        for eps in (0.3, 0.8, 1.5, 3.0):
            for ms in (1, 3, 5, 10):
                assert np.array_equal(dbscan_once(pts, eps, ms), sklearn_dbscan(pts, eps, ms))


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


def test_knn_agreement_on_real_digits(digits_run):
    s = digits_run.read_samples()
    from worker.pipeline.map.clustering import feature_neighbours

    nn = feature_neighbours(np.load(digits_run.features))
    assert nn.shape == (1797, 20) and not (nn == np.arange(1797)[:, None]).any()
    # The run's neighbours come from the t-SNE's exact search in the same PCA space:
    # the same sets, up to the order of (near-)tied distances.
    saved = np.load(digits_run.path / "neighbours.npy")
    same = [set(a[:10]) == set(b[:10]) for a, b in zip(nn, saved, strict=True)]
    assert np.mean(same) > 0.97
    agree = knn_agreement(nn, s.labels)
    noisy = s.labels != s.true_labels
    assert agree[noisy].mean() < 0.3 < 0.8 < agree[~noisy].mean()


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 250), grid=st.sampled_from([0.0, 0.1, 0.5]),
       line=st.booleans(), eps=st.sampled_from([0.05, 0.1, 0.3, 1.0, 2.5, 40.0]),
       ms=st.integers(1, 15), seed=st.integers(0, 2**16))
def test_one_shot_dbscan_equals_sklearn_at_any_eps(n, grid, line, eps, ms, seed):
    """dbscan_once (k-nearest core test + Delaunay components) on blobs, grids with
    duplicates and distances exactly at eps, and points all on one line (no triangulation),
    including eps larger than the whole class."""
    rng = np.random.default_rng(seed)
    pts = rng.normal(0, 2, (n, 2))
    if grid:
        pts = np.round(pts / grid) * grid
    if line:
        pts[:, 1] = 0.5 * pts[:, 0] if seed % 2 else 0.0
    assert np.array_equal(dbscan_once(pts, eps, ms), sklearn_dbscan(pts, eps, ms))


def test_a_new_map_rederives_every_class_s_eps_as_the_pipeline_s_own_step(fresh_run):
    """eps is a distance on one map: stored values, the user's included, do not carry
    over to a new embedding. Deriving them again is the pipeline's step, which undo passes
    by; undoing the reviewer's eps then leaves the new map's value (it measured another
    map)."""
    from worker.pipeline.curation.cluster_step import cluster_step
    from worker.pipeline.map.embedding import EmbeddingOptions, embed
    from worker.pipeline.storage.curation_store import open_store

    store = open_store(fresh_run)
    store.set_class_params({0: (0.123, 7)}, "a reviewer's eps")
    cluster_step(fresh_run)  # same map: the reviewer's value stays
    assert store.class_params()[0] == (0.123, 7)
    embed(fresh_run, EmbeddingOptions(seed=1))  # another map
    cluster_step(fresh_run)
    params = store.class_params()
    assert params[0][0] != 0.123 and params[0][1] == DEFAULT_MIN_SAMPLES
    assert all(ms == DEFAULT_MIN_SAMPLES for _, ms in params.values())
    assert store.undo() is None and store.class_params() == params
    assert [h["pipeline"] for h in store.history(3)] == [True, False, True]
    cluster_step(fresh_run)  # recorded: this map already has its parameters
    assert store.class_params() == params
