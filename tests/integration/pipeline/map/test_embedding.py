"""The map's PCA is fitted once for every step that reads it, on the digits run."""

from __future__ import annotations

import numpy as np

from worker.pipeline.map import embedding


def test_the_map_pca_is_fitted_once_for_every_step(digits_run, monkeypatch):
    """embed fits the map's PCA and keeps it; the label evidence and the findings read it
    (each fitted it again before: 4.2 s apiece at 50,000 × 1,280 on 2 cores)."""
    kept = list(digits_run.cache.glob("pca-*.npz"))
    assert len(kept) == 1
    features = digits_run.load_features()
    again = embedding.pca_reduce(features, 50)
    fits = []
    monkeypatch.setattr(embedding, "fit_pca", lambda *a, **k: fits.append(a))
    read = embedding.run_pca(digits_run, 50)
    assert not fits
    np.testing.assert_array_equal(read.x, again)
    assert read.components.shape == (50, features.shape[1])
