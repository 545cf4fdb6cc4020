"""The one neighbour index every finding kind reads, and exact queries against it.

The train samples' neighbours are the ones the embed step already found for the t-SNE
(exact up to ``EXACT_KNN_MAX`` points, openTSNE's Annoy index above: worker/pipeline/
embedding.py), saved as ``neighbours.npy`` and read by the label evidence too. They live
in the map's PCA space, so this module reads that PCA's fit (map/embedding.run_pca: made
once for the run), projects the features, and measures the distances to those neighbours
there. The
test split is queried against the projected train samples by exact search
(map/neighbours.py; test splits are small next to their train sets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worker.pipeline.map.embedding import BLOCK, Pca
from worker.pipeline.map.neighbours import knn_query


@dataclass
class FeatureSpace:
    """The train samples in the map's PCA space with their stored neighbours.

    Attributes
    ----------
    x : float32 (N, d), the projected train features
    neighbours : int64 (N, k), nearest first (self excluded)
    distances : float32 (N, k), Euclidean, in ``x``
    """

    x: np.ndarray
    neighbours: np.ndarray
    distances: np.ndarray
    mean: np.ndarray | None = None
    components: np.ndarray | None = None

    @property
    def scale(self) -> float:
        """The median distance of a sample to its nearest other sample: the unit every
        finding's distance cut is relative to, so one cut fits features of any scale."""
        d = self.distances[:, 0]
        positive = d[d > 0]
        return float(np.median(positive)) if len(positive) else 1.0

    def project(self, features: np.ndarray) -> np.ndarray:
        """Other features (M, D), e.g. the test split's, in the same space: (M, d)."""
        out = np.empty((len(features), self.x.shape[1]), np.float32)
        for s in range(0, len(features), BLOCK):
            block = np.asarray(features[s:s + BLOCK], np.float32)
            out[s:s + BLOCK] = block if self.mean is None else \
                (block - self.mean) @ self.components.T
        return out

    def query(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest train samples of each query (M, d), by exact search.

        Returns
        -------
        indices : int64 (M, k), distances : float32 (M, k), nearest first
        """
        return knn_query(self.x, queries, k)


def fit_space(features: np.ndarray, pca: Pca, neighbours: np.ndarray) -> FeatureSpace:
    """The train features in the map's PCA space (``pca``, the embed step's fit:
    map/embedding.run_pca) and each stored neighbour's distance there.

    Parameters
    ----------
    features : (N, D) float16/float32, possibly memory-mapped
    neighbours : int64 (N, k) from ``neighbours.npy``
    """
    if pca.mean is None:
        x = np.asarray(features, np.float32)
    else:
        x = FeatureSpace(np.empty((0, len(pca.components))), neighbours, np.empty(0),
                         pca.mean, pca.components).project(features)
    return FeatureSpace(x, neighbours, pair_distances(x, neighbours), pca.mean,
                        pca.components)


def pair_distances(x: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """Euclidean distance from each row of ``x`` (N, d) to its ``neighbours`` (N, k), by
    blocks: float32 (N, k)."""
    out = np.empty(neighbours.shape, np.float32)
    for s in range(0, len(x), 8192):
        diff = x[neighbours[s:s + 8192]] - x[s:s + 8192, None, :]
        out[s:s + 8192] = np.sqrt((diff * diff).sum(-1))
    return out
