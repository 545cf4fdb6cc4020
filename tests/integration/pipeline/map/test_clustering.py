"""Clustering on the digits run's real map: labels identical to scikit-learn's DBSCAN, the
neighbour agreement, and a new map re-deriving every class's eps as the pipeline's own
step."""

from __future__ import annotations

import numpy as np

from worker.pipeline.map.clustering import (
    DEFAULT_MIN_SAMPLES,
    knn_agreement,
)
from worker.pipeline.map.dbscan import dbscan_once, sklearn_dbscan


def test_labels_identical_to_sklearn_on_a_real_embedding(digits_run):
    emb = np.load(digits_run.embedding)
    labels = digits_run.read_samples().labels
    for c in range(10):
        pts = emb[labels == c]
        for eps in (0.3, 0.8, 1.5, 3.0):
            for ms in (1, 3, 5, 10):
                assert np.array_equal(dbscan_once(pts, eps, ms), sklearn_dbscan(pts, eps, ms))


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
