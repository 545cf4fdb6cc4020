"""``outlier``: images that belong to no class (another domain, blank, corrupt).

Distances in feature space (the map's PCA space, cosine; never the t-SNE map) alone do
not find them: images from another domain resemble each other more than they resemble
the data (a CNN sees little in a digit or a blank square, so they gather near the
centre of feature space), and a sample whose nearest images are other outliers looks
typical by its k-nearest-neighbour distance. On CIFAR-10 with 40 injected outliers that
distance ranked them below the data (AUROC 0.03; cleanlab's cosine k-NN rule 0.18:
docs/benchmarks.md). What sets them apart is that no class is near:

    class_fit(i) = min over classes c of  d_c(i) / typical_c
    crowd(i)     = class_fit(i) / (d_all(i) / typical_all)
    score(i)     = max(class_fit(i), crowd(i))

with ``d_c(i)`` the mean distance to the ``K_OUTLIER`` nearest *core* members of class c
(the candidate classes are the labels among its stored neighbours, and its own),
``typical_c`` the median of that over c's core members, and ``d_all`` the mean distance
to its ``K_OUTLIER`` nearest samples of any class. A class's core is its members whose
nearest images mostly carry its label (``CORE_AGREEMENT``): outliers that gather in a
group larger than k, spread over random labels, would otherwise find "their class"
among themselves (400 injected outliers in CIFAR-10's 50k: recall 0.06 for the digits
before the core; docs/benchmarks.md). Where a class's core is too small to stand for it
(poor features), all its members are. A real image has a class as near as its
nearest images (score ≈ 1); a mislabeled one too (its true class is near); an outlier's
nearest images are other outliers, and every class lies several times farther (crowd); a
lone outlier is far from its nearest images and from every class alike (class_fit; crowd
stays near 1 there). A sample is an outlier when its score reaches ``threshold``; it is
dropped by default only when it reaches ``drop_threshold`` (the rest are proposed). On CIFAR-10
mini with EfficientNet-Lite0, 40 outliers that gather: AUROC 0.955 (crowd alone 0.959,
class_fit alone 0.10); 4 lone ones: 0.995 (crowd alone 0.928).
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings.base import DROP, FindingKind, FindingTable, View
from worker.pipeline.findings.context import FindingContext
from worker.pipeline.findings.index import pair_distances
from worker.pipeline.findings.kind_registry import register
from worker.pipeline.map.neighbours import knn_query
from worker.pipeline.metrics import auroc, prf_of

K_OUTLIER = 10
# An island (:func:`islands`): marked outliers joined through their K_OUTLIER nearest, at
# least ISLAND_MIN of them, carrying at least ISLAND_LABELS labels: a batch from one
# source filed at random, not a class's rare corner. Chosen looking at the stress grid's
# outlier cells (each batch of 13-399 marked is one island) and scikit-learn's digits
# (three of its ten marked outliers, of three labels, lie together: no island at 5).
ISLAND_MIN, ISLAND_LABELS = 5, 3
# A member is in its class's core when at least this share of its K_OUTLIER nearest
# images carries its label; the core stands for the class when it holds at least
# CORE_MIN of its members (else every member does).
CORE_AGREEMENT = 0.5
CORE_MIN = 0.2


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def core_members(labels: np.ndarray, neighbours: np.ndarray, n_classes: int) -> np.ndarray:
    """Which samples stand for their class (module docstring). bool (N,).

    Parameters
    ----------
    labels : int64 (N,)
    neighbours : int64 (N, k), each sample's nearest samples
    """
    agree = (labels[neighbours] == labels[:, None]).mean(1) >= CORE_AGREEMENT
    size = np.bincount(labels, minlength=n_classes)
    big = np.bincount(labels[agree], minlength=n_classes) >= np.maximum(CORE_MIN * size, 2)
    return agree | ~big[labels]


def candidate_classes(labels: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """Each sample's own label, then its neighbours' labels not seen before in its row
    (-1 for a repeat): int64 (N, 1 + k). A sample's nearest class is among them, and
    keeping them per row (not as an (N, classes) matrix, 10 GB at 1.28M × 1,000) keeps
    memory linear in N."""
    cand = np.concatenate([labels[:, None], labels[neighbours]], 1)
    for j in range(1, cand.shape[1]):
        cand[(cand[:, :j] == cand[:, j:j + 1]).any(1), j] = -1
    return cand


def class_fit(x: np.ndarray, labels: np.ndarray, neighbours: np.ndarray, n_classes: int,
              k: int = K_OUTLIER) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's distance to the nearest class relative to that class's spread, and
    which class that is (module docstring).

    Parameters
    ----------
    x : float32 (N, d), unit rows (cosine distance = squared Euclidean / 2)
    neighbours : int64 (N, k'), the stored neighbour index (candidate classes)

    Returns
    -------
    fit : float32 (N,), nearest : int64 (N,) class codes
    """
    n = len(x)
    core = core_members(labels, neighbours, n_classes)
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(n_classes + 1))
    cand = candidate_classes(labels, neighbours)
    rows, cols = np.nonzero(cand >= 0)
    by_class = np.argsort(cand[rows, cols], kind="stable")
    bounds = np.searchsorted(cand[rows, cols][by_class], np.arange(n_classes + 1))
    dist = np.full(cand.shape, np.inf, np.float32)
    for c in range(n_classes):
        members = order[starts[c]:starts[c + 1]]
        members = members[core[members]]
        pick = by_class[bounds[c]:bounds[c + 1]]
        queries = rows[pick]
        if len(members) < 2 or not len(queries):
            continue
        kk = min(k + 1, len(members))
        _, d = knn_query(x[members], x[queries], kk)
        d = d * d / 2  # cosine distance
        own = (labels[queries] == c) & core[queries]  # its nearest member is itself: skip
        mean = np.where(own, d[:, 1:].mean(1) if kk > 1 else 0, d[:, :kk - 1].mean(1)
                        if kk > 1 else d[:, 0])
        dist[queries, cols[pick]] = mean
    own = dist[:, 0]  # column 0: the sample's own label
    typical = np.ones(n_classes, np.float32)
    for c in range(n_classes):
        mine = order[starts[c]:starts[c + 1]]
        mine = own[mine[core[mine]]]
        mine = mine[np.isfinite(mine)]
        if len(mine):
            typical[c] = max(float(np.median(mine)), 1e-12)
    rel = np.where(cand >= 0, dist / typical[np.maximum(cand, 0)], np.inf)
    j = rel.argmin(1)
    ar = np.arange(n)
    return rel[ar, j].astype(np.float32), cand[ar, j].astype(np.int64)


def islands(marked: np.ndarray, neighbours: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Which island each sample belongs to (-1: none): the connected groups of ``marked``
    samples (bool (N,)) in which each member has another among its ``neighbours`` (N, k),
    of at least ``ISLAND_MIN`` members with at least ``ISLAND_LABELS`` different
    ``labels`` (N,). A batch of images from another source gathers so (each one's nearest
    images are others of the batch) and carries every label it was filed under. int64
    (N,), islands numbered from 0 by their lowest member."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(marked)
    out = np.full(n, -1, np.int64)
    rows = np.flatnonzero(marked)
    if len(rows) < ISLAND_MIN:
        return out
    a = np.repeat(rows, neighbours.shape[1])
    b = neighbours[rows].ravel()
    keep = marked[b]
    graph = coo_matrix((np.ones(int(keep.sum()), np.int8), (a[keep], b[keep])), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    comp = np.where(marked, comp, -1)
    found = 0
    for c in np.unique(comp[rows]):  # in order of the lowest member (components are)
        members = np.flatnonzero(comp == c)
        if len(members) >= ISLAND_MIN and len(np.unique(labels[members])) >= ISLAND_LABELS:
            out[members] = found
            found += 1
    return out


@register
class OutlierKind(FindingKind):
    name = "outlier"
    version = "4"  # 1: k-NN distance; 2: class fit; 3: against class cores; 4: islands
    title = "outlier"
    decision = DROP
    order = 30
    columns = ("outlier_score", "outlier")
    threshold = "outlier_threshold"
    drop_threshold = "outlier_drop_threshold"
    symbol = "star"
    cleared_by_relabel = True  # a relabel says it belongs to a class
    advice = ("dropped unless kept: it fits no class; keep it ('a') when it is a rare but "
              "real case of its class, or relabel it")

    def score_truth(self, table: FindingTable, marked: np.ndarray, truth: list[dict]) -> dict:
        """P/R/F1 against the injected outliers, the score's AUROC, and ``queue2x``: the
        share of them among the first 2 × (their number) samples by score, the rows a
        reviewer reads first when the score orders the list."""
        injected = np.zeros(len(marked), bool)
        injected[[r["index"] for r in truth]] = True
        first = np.argsort(-np.asarray(table.score), kind="stable")[:2 * int(injected.sum())]
        queue2x = float(injected[first].sum() / injected.sum()) if injected.any() else None
        return {**prf_of(marked, injected),
                "auroc": auroc(table.score, injected), "queue2x": queue2x}

    def compute(self, ctx: FindingContext) -> FindingTable:
        sp, t = ctx.space, float(self.cut(ctx))
        s = ctx.samples
        n = len(s)
        x = _unit(sp.x)
        k = min(K_OUTLIER, sp.neighbours.shape[1])
        if k == 0:
            return FindingTable.empty(n)
        d_all = (pair_distances(x, sp.neighbours[:, :k]) ** 2 / 2).mean(1)  # cosine, blocks
        d_all = d_all / max(float(np.median(d_all)), 1e-12)
        fit, nearest = class_fit(x, s.labels, sp.neighbours[:, :k], len(s.classes))
        crowd = fit / np.maximum(d_all, 1e-6)
        score = np.maximum(crowd, fit).astype(np.float32)
        rank = np.empty(n, np.float32)
        rank[np.argsort(score, kind="stable")] = np.arange(n, dtype=np.float32) / max(n, 1)
        drop_cut = max(float(self.drop_cut(ctx)), t)
        island = islands(score >= t, sp.neighbours[:, :k], s.labels)
        return FindingTable(score >= t, score, np.full(n, -1, np.int64),
                            {"class_fit": fit, "crowd": crowd.astype(np.float32),
                             "nearest_class": nearest, "percentile": rank, "island": island},
                            {"threshold": t, "drop_cut": drop_cut, "k": k,
                             "islands": int(island.max() + 1)}, score >= drop_cut)

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        return {"outlier_score": [f"{s:.4f}" for s in table.score.tolist()],
                "outlier": [str(int(b)) for b in table.issue.tolist()]}

    def why(self, table: FindingTable, i: int, view: View) -> str:
        f = table.facts
        pct = 100.0 * float(f["percentile"][i])
        near = view.classes[int(f["nearest_class"][i])]
        if f["crowd"][i] >= f["class_fit"][i]:
            how = (f"the nearest class ({near}) lies {float(f['crowd'][i]):.1f}× farther than "
                   f"its {K_OUTLIER} nearest images")
        else:
            how = (f"{float(f['class_fit'][i]):.1f}× farther from the nearest class ({near}) "
                   "than that class's own images are")
        words = f"fits no class: {how}, more than {pct:.1f}% of the dataset"
        island = f.get("island")
        if island is not None and island[i] >= 0:
            members = np.flatnonzero(island == island[i])
            n_labels = len(np.unique(view.labels[members]))
            words += (f"; one of an island of {len(members)} outliers filed under "
                      f"{n_labels} labels, each nearest to others of it: a batch from one "
                      "source ('i' drops them all, Shift+I keeps them)")
        return words
