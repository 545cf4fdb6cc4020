"""Exact nearest neighbours (worker/pipeline/map/neighbours.py): the same as
scikit-learn's, and the GPU path's the same as the CPU path's."""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors

from worker.pipeline.map.neighbours import exact_neighbours, faiss_knn, knn_query, torch_knn


def test_exact_neighbours_match_sklearn():
    x = np.random.default_rng(0).normal(size=(700, 12)).astype(np.float32)
    idx, dist = exact_neighbours(x, 9)
    ref_dist, ref_idx = NearestNeighbors(n_neighbors=10).fit(x).kneighbors(x)
    assert idx.shape == (700, 9) and dist.dtype == np.float32
    assert not (idx == np.arange(700)[:, None]).any()  # never its own neighbour
    np.testing.assert_allclose(dist, ref_dist[:, 1:], rtol=1e-3, atol=1e-4)
    assert (idx == ref_idx[:, 1:]).mean() > 0.999  # ties may swap places


def test_the_gpu_path_gives_the_cpu_paths_neighbours():
    """The torch path (a GPU's, run here on the CPU) and faiss's give the same neighbours,
    with exact copies present (the point itself is never among its own, wherever the tie
    puts it), and for queries from another set."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3000, 16)).astype(np.float32)
    x[1000:1010] = x[:10]  # exact copies: ties at distance 0
    own_f, own_t = faiss_knn(x, None, 7), torch_knn(x, None, 7, "cpu")
    for idx, dist in (own_f, own_t):
        assert idx.shape == (3000, 7) and idx.dtype == np.int64 and dist.dtype == np.float32
        assert not (idx == np.arange(3000)[:, None]).any()
        # (d² by expansion: a copy sits at ~1e-3, not 0)
        assert (idx[:10, 0] == np.arange(1000, 1010)).all() and (dist[:10, 0] < 1e-2).all()
    np.testing.assert_allclose(own_f[1], own_t[1], rtol=1e-4, atol=3e-3)
    # ties (a copy's two originals are equally far from everything) may swap places
    assert np.mean([set(a) == set(b) for a, b in zip(own_f[0], own_t[0], strict=True)]) > 0.99
    # more copies than neighbours asked for: the point need not be among the k + 1 found
    many = np.repeat(x[:1], 12, 0)
    idx, _ = faiss_knn(many, None, 3)
    assert idx.shape == (12, 3) and not (idx == np.arange(12)[:, None]).any()
    assert exact_neighbours(x[:4], 9)[0].shape == (4, 3)  # at most N - 1
    assert knn_query(x[:0], x[:5], 3)[0].shape == (5, 0)  # nothing to find
    q = rng.normal(size=(500, 16)).astype(np.float32)
    cross_f, cross_t = knn_query(x, q, 5), torch_knn(x, q, 5, "cpu")
    np.testing.assert_allclose(cross_f[1], cross_t[1], rtol=1e-4, atol=3e-3)
    assert np.mean([set(a) == set(b) for a, b in zip(cross_f[0], cross_t[0], strict=True)]) > 0.99
