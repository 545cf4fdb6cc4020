"""The embedding (worker/pipeline/map/embedding.py): both neighbour paths give a map that
separates digits, and bad options are refused."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.neighbors import NearestNeighbors

from worker.pipeline.errors import InputError
from worker.pipeline.map import embedding
from worker.pipeline.map.embedding import EmbeddingOptions, tsne_2d


def _label_agreement(emb: np.ndarray, y: np.ndarray, k: int = 10) -> float:
    _, nn = NearestNeighbors(n_neighbors=k + 1).fit(emb).kneighbors(emb)
    return float((y[nn[:, 1:]] == y[:, None]).mean())


@pytest.mark.parametrize("exact_max", [10**9, 100])
def test_both_neighbour_paths_give_a_map_that_separates_digits(monkeypatch, exact_max):
    """Exact neighbours below EXACT_KNN_MAX, openTSNE's Annoy above; both must work."""
    digits = load_digits()
    x, y = digits.data[:600].astype(np.float32), digits.target[:600]
    monkeypatch.setattr(embedding, "EXACT_KNN_MAX", exact_max)
    seen = []
    emb = tsne_2d(x, EmbeddingOptions(n_iter=150, exaggeration_iter=75),
                  progress=lambda done, total, msg: seen.append((done, total)))
    assert emb.shape == (600, 2) and emb.dtype == np.float32 and np.isfinite(emb).all()
    assert _label_agreement(emb, y) > 0.85  # chance is about 0.1
    assert seen[-1] == (225, 225)  # progress counts both phases


def test_bad_embedding_options():
    x = np.random.default_rng(0).normal(size=(50, 5)).astype(np.float32)
    with pytest.raises(InputError, match="--n-iter must be a whole number from 0"):
        tsne_2d(x, EmbeddingOptions(n_iter=-1))
    with pytest.raises(InputError, match="--perplexity must be a number > 0"):
        tsne_2d(x, EmbeddingOptions(perplexity=0))
    with pytest.raises(InputError, match="at least 4 samples"):
        tsne_2d(x[:3], EmbeddingOptions())
