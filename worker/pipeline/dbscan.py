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
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree
from scipy.spatial import Delaunay, QhullError, cKDTree

from .errors import InputError

SMALL_N = 32


def check_params(eps: float, min_samples: int) -> None:
    """Raise a one-line :class:`InputError` for eps ≤ 0 or min_samples < 1."""
    if not np.isfinite(eps) or eps <= 0:
        raise InputError(f"eps must be a positive number, got {eps}")
    if not np.isfinite(min_samples) or int(min_samples) != min_samples or min_samples < 1:
        raise InputError(f"min_samples must be an integer of at least 1, got {min_samples}")


def sklearn_dbscan(points: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """Plain ``sklearn.cluster.DBSCAN(eps, min_samples).fit_predict`` (the reference)."""
    from sklearn.cluster import DBSCAN

    if len(points) == 0:
        return np.empty(0, dtype=np.int64)
    return DBSCAN(eps=eps, min_samples=min_samples).fit_predict(points).astype(np.int64)


class NeighbourIndex:
    """All point pairs within ``max_eps``, for fast DBSCAN at any eps ≤ ``max_eps``.

    For each min_samples it also keeps a minimum spanning tree of the mutual-reachability
    weights ``w(i, j) = max(core²(i), core²(j), d²(i, j))``, where ``core²(i)`` is the
    squared distance to the (min_samples-1)-th nearest other point. Point i is core at eps
    exactly when ``core²(i) <= eps²``, and two core points are in one DBSCAN cluster
    exactly when the tree joins them by edges of weight ``<= eps²`` (an MST keeps every
    minimax path). A new eps therefore needs only the n-1 tree edges, not every pair.

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
        self._trees: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        if self._tree is None:
            self._pairs = np.empty((0, 2), np.int64)
            self._d2 = np.empty(0)
            return
        # Query slightly wider than asked, then keep pairs by the exact float64 test below.
        pairs = self._tree.query_pairs(self.max_eps * (1 + 1e-9), output_type="ndarray")
        diff = self.points[pairs[:, 0]] - self.points[pairs[:, 1]]
        d2 = diff[:, 0] * diff[:, 0] + diff[:, 1] * diff[:, 1]
        keep = d2 <= self.max_eps * self.max_eps
        order = np.argsort(d2[keep], kind="stable")
        self._pairs = pairs[keep][order].astype(np.int64)
        self._d2 = d2[keep][order]

    def pairs_within(self, eps: float) -> np.ndarray:
        """Pairs (i < j) with squared distance ≤ eps², shape (m, 2)."""
        if eps > self.max_eps:
            self._build(eps * 1.5)
        return self._pairs[: np.searchsorted(self._d2, eps * eps, side="right")]

    def _core_tree(self, min_samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(core², tree edges (m, 2), their weights (m,)), edges sorted by weight."""
        if min_samples in self._trees:
            return self._trees[min_samples]
        n, k = self.n, min_samples - 1
        i, j = self._pairs[:, 0], self._pairs[:, 1]
        core2 = np.zeros(n) if k == 0 else np.full(n, np.inf)
        if k > 0 and len(i):
            # k-th smallest neighbour d² per point, from the (already d²-sorted) pair list.
            node = np.concatenate([i, j])
            d2 = np.concatenate([self._d2, self._d2])
            order = np.lexsort((d2, node))
            node, d2 = node[order], d2[order]
            start = np.searchsorted(node, np.arange(n))
            count = np.bincount(node, minlength=n)
            has = count >= k
            core2[has] = d2[start[has] + k - 1]
        w = np.maximum(np.maximum(core2[i], core2[j]), self._d2)
        finite = np.isfinite(w)
        # scipy drops explicit zeros as "no edge"; the smallest positive float keeps them.
        weights = np.where(w[finite] > 0, w[finite], np.nextafter(0, 1))
        graph = coo_matrix((weights, (i[finite], j[finite])), shape=(n, n)).tocsr()
        mst = minimum_spanning_tree(graph).tocoo()
        order = np.argsort(mst.data, kind="stable")
        edges = np.stack([mst.row[order], mst.col[order]], axis=1).astype(np.int64)
        result = (core2, edges, mst.data[order])
        self._trees[min_samples] = result
        return result

    def dbscan(self, eps: float, min_samples: int) -> np.ndarray:
        """DBSCAN labels, shape (n,), noise = -1; identical to scikit-learn's."""
        check_params(eps, min_samples)
        if self._tree is None:
            return sklearn_dbscan(self.points, eps, min_samples)
        pairs = self.pairs_within(eps)  # rebuilds (and drops cached trees) past max_eps
        core2, edges, weights = self._core_tree(int(min_samples))
        eps2 = eps * eps
        core = core2 <= eps2
        tree_edges = edges[: np.searchsorted(weights, eps2, side="right")]
        return _number_clusters(self.n, core, tree_edges, pairs)


def _number_clusters(n: int, core: np.ndarray, core_edges: np.ndarray,
                     pairs: np.ndarray) -> np.ndarray:
    """Labels in scikit-learn's numbering from core points, edges joining core points, and
    all within-eps pairs (for border points).

    Clusters are numbered 0, 1, … in the order of their lowest-index core point; a border
    point takes the smallest cluster id among its core neighbours; the rest are -1.
    """
    labels = np.full(n, -1, dtype=np.int64)
    if not core.any():
        return labels
    graph = coo_matrix((np.ones(len(core_edges), np.int8),
                        (core_edges[:, 0], core_edges[:, 1])), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    core_idx = np.flatnonzero(core)
    comp = comp[core_idx]
    # core_idx is ascending, so each component's first occurrence is its lowest member.
    _, first = np.unique(comp, return_index=True)
    rank = np.empty(int(comp.max()) + 1, dtype=np.int64)
    rank[comp[np.sort(first)]] = np.arange(len(first))
    labels[core_idx] = rank[comp]
    i, j = pairs[:, 0], pairs[:, 1]
    sentinel = np.iinfo(np.int64).max
    border = np.full(n, sentinel, dtype=np.int64)
    for a, b in ((i, j), (j, i)):
        sel = core[a] & ~core[b]
        np.minimum.at(border, b[sel], labels[a[sel]])
    hit = border != sentinel
    labels[hit] = border[hit]
    return labels


def labels_from_pairs(n: int, pairs: np.ndarray, min_samples: int) -> np.ndarray:
    """DBSCAN labels straight from the within-eps pairs (i < j): the reference path.

    Parameters
    ----------
    n : int
        Number of points.
    pairs : ndarray of int, shape (m, 2)
    min_samples : int

    Returns
    -------
    ndarray of int64, shape (n,); -1 = noise.
    """
    i, j = pairs[:, 0], pairs[:, 1]
    degree = np.bincount(i, minlength=n) + np.bincount(j, minlength=n) + 1
    core = degree >= min_samples
    both = core[i] & core[j]
    return _number_clusters(n, core, pairs[both], pairs)


def dbscan_once(points: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """One DBSCAN run without caching: labels identical to scikit-learn's, at a cost that
    does not grow with eps.

    A pair list (what :class:`NeighbourIndex` keeps for sliders) holds O(n²) pairs once eps
    nears the class's diameter, which is where automatic eps lands on a map of 1,000
    classes: ~0.3 s per 1,300-point class. Here instead:

    - a point is core when its ``min_samples`` nearest points (itself included) all lie
      within eps: one k-nearest query, O(n·k log n);
    - core points are in one cluster when a chain of core points ≤ eps apart joins them:
      the components of the Euclidean minimum spanning tree's edges ≤ eps, and that tree
      lies inside the Delaunay triangulation, so its ≤ 3n edges suffice;
    - a non-core point has fewer than ``min_samples`` points within eps by definition, so
      looking up its core neighbours for the border rule is cheap.

    Parameters
    ----------
    points : ndarray, shape (n, 2)
    eps : float
    min_samples : int

    Returns
    -------
    ndarray of int64, shape (n,); -1 = noise.
    """
    check_params(eps, min_samples)
    pts = np.ascontiguousarray(points, dtype=np.float64)
    n, k, eps2 = len(pts), int(min_samples), float(eps) * float(eps)
    if n < SMALL_N:
        return sklearn_dbscan(pts, eps, k)
    core = np.zeros(n, dtype=bool)
    tree = cKDTree(pts)
    if k <= n:
        _, nb = tree.query(pts, k=k)
        nb = nb.reshape(n, k)
        # The same float64 expression as scikit-learn's test, not the tree's distance.
        diff = pts[nb] - pts[:, None, :]
        core = (diff[..., 0] * diff[..., 0] + diff[..., 1] * diff[..., 1]).max(axis=1) <= eps2
    core_idx = np.flatnonzero(core)
    if len(core_idx) == 0:
        return np.full(n, -1, dtype=np.int64)
    edges = _core_edges(pts, core_idx, eps2)
    # Border points: each non-core point against the core points within eps.
    rest = np.flatnonzero(~core)
    border = np.empty((0, 2), np.int64)
    if len(rest):
        near = cKDTree(pts[core_idx]).query_ball_point(pts[rest], float(eps) * (1 + 1e-9))
        counts = np.fromiter((len(x) for x in near), np.int64, len(rest))
        if counts.sum():
            a = core_idx[np.concatenate([x for x in near if x]).astype(np.int64)]
            b = np.repeat(rest, counts)
            d = pts[a] - pts[b]
            ok = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] <= eps2
            border = np.stack([a[ok], b[ok]], axis=1)
    return _number_clusters(n, core, edges, border)


def _core_edges(pts: np.ndarray, core_idx: np.ndarray, eps2: float) -> np.ndarray:
    """Edges (i, j) between core points, at most eps apart, whose connected components are
    those of every core pair within eps: Delaunay edges of the distinct core positions,
    plus each duplicate tied to its first copy. Shape (m, 2), indices into ``pts``."""
    uniq, first, inv = np.unique(pts[core_idx], axis=0, return_index=True,
                                 return_inverse=True)
    inv = inv.reshape(-1)
    rep = core_idx[first]  # one sample per distinct position
    dup = rep[inv] != core_idx
    edges = [np.stack([rep[inv][dup], core_idx[dup]], axis=1)]
    if len(uniq) >= 2:
        try:
            if len(uniq) < 3:
                raise QhullError("two points")
            indptr, indices = Delaunay(uniq).vertex_neighbor_vertices
            a = np.repeat(np.arange(len(uniq)), np.diff(indptr))
            b = indices.astype(np.int64)
            keep = a < b
            a, b = a[keep], b[keep]
        except QhullError:  # all on one line: neighbours along it suffice
            order = np.lexsort((uniq[:, 1], uniq[:, 0]))
            a, b = order[:-1], order[1:]
        d = uniq[a] - uniq[b]
        ok = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] <= eps2
        edges.append(np.stack([rep[a[ok]], rep[b[ok]]], axis=1))
    return np.concatenate(edges).astype(np.int64)
