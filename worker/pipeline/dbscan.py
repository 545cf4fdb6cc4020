"""DBSCAN on 2-D points with labels identical to ``sklearn.cluster.DBSCAN``, made for sliders.

:class:`NeighbourIndex` finds every pair of points within a radius once, sorted by squared
distance. Re-clustering at any eps up to that radius is then a binary search, a bincount
and a connected-components pass: no tree query, no per-point Python objects.

Why the labels match scikit-learn exactly:

- scikit-learn's KD-tree keeps pair (i, j) when ``(xi-xj)² + (yi-yj)² <= eps²`` in float64;
  we compute the same expression in float64.
- A point is core when its neighbourhood, itself included, has ``>= min_samples`` points.
- sklearn labels clusters in the order of each cluster's lowest-index core point and grows
  each cluster completely before the next, so a border point takes the smallest cluster id
  among its core neighbours. We reproduce both orders.

Tiny inputs (fewer than ``SMALL_N`` points) go to scikit-learn itself, where it may pick
brute force with a different distance formula; they are cheap either way.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from .errors import InputError

SMALL_N = 32


def check_params(eps: float, min_samples: int) -> None:
    """Raise a one-line :class:`InputError` for eps ≤ 0 or min_samples < 1."""
    if not np.isfinite(eps) or eps <= 0:
        raise InputError(f"eps must be a positive number, got {eps}")
    if int(min_samples) != min_samples or min_samples < 1:
        raise InputError(f"min_samples must be an integer of at least 1, got {min_samples}")


def sklearn_dbscan(points: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """Plain ``sklearn.cluster.DBSCAN(eps, min_samples).fit_predict`` (the reference)."""
    from sklearn.cluster import DBSCAN

    if len(points) == 0:
        return np.empty(0, dtype=np.int64)
    return DBSCAN(eps=eps, min_samples=min_samples).fit_predict(points).astype(np.int64)


class NeighbourIndex:
    """All point pairs within ``max_eps``, for fast DBSCAN at any eps ≤ ``max_eps``.

    Parameters
    ----------
    points : ndarray, shape (n, 2)
    max_eps : float
        Largest eps served without rebuilding; a larger one rebuilds transparently.
    """

    def __init__(self, points: np.ndarray, max_eps: float) -> None:
        self.points = np.ascontiguousarray(points, dtype=np.float64)
        self.n = len(self.points)
        self._tree = cKDTree(self.points) if self.n >= SMALL_N else None
        self._build(max_eps)

    def _build(self, max_eps: float) -> None:
        self.max_eps = float(max_eps)
        if self._tree is None:
            self._pairs = np.empty((0, 2), np.int64)
            self._d2 = np.empty(0)
            return
        # Query slightly wider than asked, then keep pairs by the exact float64 test below.
        pairs = self._tree.query_pairs(self.max_eps * (1 + 1e-9), output_type="ndarray")
        diff = self.points[pairs[:, 0]] - self.points[pairs[:, 1]]
        d2 = diff[:, 0] * diff[:, 0] + diff[:, 1] * diff[:, 1]
        order = np.argsort(d2, kind="stable")
        self._pairs = pairs[order].astype(np.int64)
        self._d2 = d2[order]

    def pairs_within(self, eps: float) -> np.ndarray:
        """Pairs (i < j) with squared distance ≤ eps², shape (m, 2)."""
        if eps > self.max_eps:
            self._build(eps * 1.5)
        return self._pairs[: np.searchsorted(self._d2, eps * eps, side="right")]

    def dbscan(self, eps: float, min_samples: int) -> np.ndarray:
        """DBSCAN labels, shape (n,), noise = -1; identical to scikit-learn's."""
        check_params(eps, min_samples)
        if self._tree is None:
            return sklearn_dbscan(self.points, eps, min_samples)
        return labels_from_pairs(self.n, self.pairs_within(eps), min_samples)


def labels_from_pairs(n: int, pairs: np.ndarray, min_samples: int) -> np.ndarray:
    """DBSCAN labels from the within-eps pairs (i < j), in scikit-learn's numbering.

    Parameters
    ----------
    n : int
        Number of points.
    pairs : ndarray of int, shape (m, 2)
    min_samples : int

    Returns
    -------
    ndarray of int64, shape (n,); -1 = noise, clusters numbered 0, 1, … in the order of
    their lowest-index core point.
    """
    i, j = pairs[:, 0], pairs[:, 1]
    degree = np.bincount(i, minlength=n) + np.bincount(j, minlength=n) + 1
    core = degree >= min_samples
    labels = np.full(n, -1, dtype=np.int64)
    if not core.any():
        return labels
    both = core[i] & core[j]
    core_idx = np.flatnonzero(core)
    pos = np.full(n, -1, dtype=np.int64)
    pos[core_idx] = np.arange(len(core_idx))
    m = len(core_idx)
    graph = coo_matrix((np.ones(int(both.sum()), np.int8), (pos[i[both]], pos[j[both]])),
                       shape=(m, m))
    _, comp = connected_components(graph, directed=False)
    # Renumber components by their lowest core index (core_idx is ascending, so the first
    # occurrence of each component id in `comp` is its lowest member).
    _, first = np.unique(comp, return_index=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    labels[core_idx] = rank[comp]
    # Border points: the smallest cluster id among their core neighbours.
    sentinel = np.iinfo(np.int64).max
    border = np.full(n, sentinel, dtype=np.int64)
    for a, b in ((i, j), (j, i)):
        sel = core[a] & ~core[b]
        np.minimum.at(border, b[sel], labels[a[sel]])
    hit = border != sentinel
    labels[hit] = border[hit]
    return labels
