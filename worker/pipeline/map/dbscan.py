"""DBSCAN on 2-D points with labels identical to ``sklearn.cluster.DBSCAN``, at a cost that
does not grow with eps (:func:`dbscan_once`).

Why the labels match scikit-learn exactly:

- scikit-learn's KD-tree keeps pair (i, j) when ``(xi-xj)² + (yi-yj)² <= eps²`` in float64;
  we test the same expression in float64.
- A point is core when its neighbourhood, itself included, has ``>= min_samples`` points.
- sklearn labels clusters in the order of each cluster's lowest-index core point and grows
  each cluster completely before the next, so a border point takes the smallest cluster id
  among its core neighbours. We reproduce both orders.

Tiny inputs (fewer than ``SMALL_N`` points) go to scikit-learn itself, where it may pick
brute force with a different distance formula; they are cheap either way. While a slider
moves, the browser re-clusters the shown class itself (``assets/class_map.js``).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import Delaunay, QhullError, cKDTree

from worker.pipeline.number_params import check

SMALL_N = 32


def check_params(eps: object, min_samples: object, largest: int | None = None
                 ) -> tuple[float, int]:
    """``(eps, min_samples)`` checked against their ranges (worker.pipeline.number_params);
    ``largest`` is the size of the largest class they apply to, which min_samples may not
    exceed (every point would be noise)."""
    return (check("eps", eps),
            int(check("min_samples", min_samples, high=largest, why=" (the class's size)")
                if largest is not None else check("min_samples", min_samples)))


def sklearn_dbscan(points: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """Plain ``sklearn.cluster.DBSCAN(eps, min_samples).fit_predict`` (the reference)."""
    from sklearn.cluster import DBSCAN

    if len(points) == 0:
        return np.empty(0, dtype=np.int64)
    return DBSCAN(eps=eps, min_samples=min_samples).fit_predict(points).astype(np.int64)


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


def dbscan_once(points: np.ndarray, eps: float, min_samples: int) -> np.ndarray:
    """One DBSCAN run without caching: labels identical to scikit-learn's, at a cost that
    does not grow with eps.

    A list of the pairs within eps holds O(n²) pairs once eps nears the class's diameter,
    which is where automatic eps lands on a map of 1,000 classes: ~0.3 s per 1,300-point
    class that way. Here instead:

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


def noise_until(points: np.ndarray, which: np.ndarray, min_samples: int,
                chunk: int = 256) -> np.ndarray:
    """The smallest eps at which each point of ``which`` stops being DBSCAN noise (at this
    ``min_samples``); ``inf`` when it never can (fewer than ``min_samples`` points).

    With min_samples fixed, noise only shrinks as eps grows (a core point stays core, a
    neighbour within eps stays within it), so one number per point says at which eps its
    flag can change: a point is not noise once it is core, or once a core point lies
    within eps, so its threshold is ``min(kd(p), min_q max(d(p, q), kd(q)))`` with
    ``kd`` the distance to the ``min_samples``-th nearest point, itself included. The
    distances are the same float64 expression as :func:`dbscan_once`'s.

    Parameters
    ----------
    points : ndarray, shape (n, 2)
    which : ndarray of int, shape (m,), indices into ``points``
    min_samples : int

    Returns
    -------
    ndarray of float64, shape (m,)
    """
    pts = np.ascontiguousarray(points, dtype=np.float64)
    n, k = len(pts), int(min_samples)
    which = np.asarray(which, dtype=np.int64)
    if k > n or len(which) == 0:
        return np.full(len(which), np.inf)
    _, nb = cKDTree(pts).query(pts, k=k)
    diff = pts[nb.reshape(n, k)] - pts[:, None, :]
    kd2 = (diff[..., 0] * diff[..., 0] + diff[..., 1] * diff[..., 1]).max(axis=1)
    out = np.empty(len(which))
    x, y = pts[:, 0], pts[:, 1]
    for a in range(0, len(which), chunk):  # (chunk, n) distances at a time
        w = which[a:a + chunk]
        dx = x[w][:, None] - x[None, :]
        dy = y[w][:, None] - y[None, :]
        d2 = dx * dx + dy * dy
        out[a:a + chunk] = np.minimum(kd2[w], np.maximum(d2, kd2[None, :]).min(axis=1))
    return np.sqrt(out)
