"""``leak``: train images with a near-duplicate among the test images.

When the dataset has a test split (``folder:`` with ``train/`` and ``test/``, or
``cifar10:``), its images go through the same backbone (findings/testsplit.py, cached)
and are projected into the train samples' PCA space; each train image's nearest test
images are candidates, and one that is a copy by the duplicate kind's rule
(copies.copy_pairs: the same candidate gate, pixel match ≥ ``threshold``) marks the
train image, with the best-matching test image as the related sample. The duplicate
kind's second test (findings/warps.py: copies that a crop, a stretch, a rotation or a blur
moved) runs across the split too, its candidates each train image's nearest test images
in feature space and by copy-robust key, judged against the train set's own reference.
The default drops the train copy where the evidence is strong (the duplicate kind's drop
rule), so the test set stays comparable with published numbers; the other leaks are
proposed.
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings.base import DROP, FindingKind, FindingTable, View
from worker.pipeline.findings.context import FindingContext
from worker.pipeline.findings.copies import (
    K_CANDIDATES,
    RATIO_DROP,
    REFERENCE_RANK,
    TAIL_DROP,
    TAIL_PROPOSE,
    copy_pairs,
    robust_centre,
    stands_out,
)
from worker.pipeline.findings.kind_registry import register
from worker.pipeline.findings.pixels import match_pairs
from worker.pipeline.findings.warps import (
    K_FEATURE,
    K_KEY,
    RATIO_WARP,
    TAIL_WARP,
    WarpOptions,
    candidates,
    key_neighbours,
    listed,
    warp_evidence,
    warp_match,
    warped_words,
)
from worker.pipeline.map.neighbours import knn_query
from worker.pipeline.metrics import prf


def robust_z(x: np.ndarray) -> np.ndarray:
    """``x`` (N,) less its median, over its robust spread (IQR / 1.349, or the mean
    absolute deviation where half the values are one number): float64 (N,); zeros where
    ``x`` is constant, and for values that are not finite."""
    x = np.asarray(x, np.float64)
    ok = np.isfinite(x)
    if not ok.any():
        return np.zeros(len(x))
    mid, spread = robust_centre(x[ok])
    spread = spread or float(np.abs(x[ok] - mid).mean())
    return np.where(ok, (x - mid) / spread, 0.0) if spread > 0 else np.zeros(len(x))


def queue_score(ctx: FindingContext, best: np.ndarray, warp_best: np.ndarray,
                ratio: np.ndarray) -> np.ndarray:
    """The review queue's order: each train image's evidence of a copy among the test
    images, the sum of three robust z-scores over the train set:

    - the tail test's: how far its best pixel or warp match lies above what different
      pictures reach (robust spreads, copies.py test 1);
    - the ratio test's: how far that match stands out from the image's own nearest train
      neighbours, ``-log((1 − match) / distinct)``, the better of pixels and warp (test 2);
    - the feature distance's Lowe ratio across the split: ``-log(d1 / d2)``, its nearest
      test image against the second nearest (a copy has one test image far closer than
      any other).

    The tail test alone held 88% of the held-out mini row's leaks within the first 2× as
    many rows; the sum, chosen on that row among 13 combinations, 94%, and 98% on the
    fresh row it was not chosen on (docs/benchmarks.md, "The leak queue").

    Parameters
    ----------
    best : float32 (N,), each train image's best pixel match among its test candidates
    warp_best : float32 (N, V), its best warp match per variant
    ratio : float (N, k), its nearest test images' feature distances over the scale (k = 1:
        a one-image test split, whose Lowe ratio is 1)

    Returns
    -------
    float32 (N,), higher = more likely a leak
    """
    tail = np.maximum(ctx.near.spreads(best), ctx.warp.spreads(warp_best))
    own = np.minimum((1.0 - best) / ctx.near.distinct,
                     ((1.0 - warp_best) / ctx.warp.distinct).min(1))
    second = ratio[:, 1] if ratio.shape[1] > 1 else ratio[:, 0]  # a one-image test split
    lowe = ratio[:, 0] / np.maximum(second, 1e-6)
    return (robust_z(tail) + robust_z(-np.log(np.maximum(own, 1e-4)))
            + robust_z(-np.log(np.maximum(lowe, 1e-3)))).astype(np.float32)


def moved_test_copies(ctx: FindingContext, nearest: np.ndarray, pairs: np.ndarray,
                      warp_cut: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pixel test's (train, test) ``pairs`` and those the warp test adds across the
    split (each train image's test candidates by feature, ``nearest`` (N, k), and by
    copy-robust key), judged against the train set's reference and distinctness.

    Returns
    -------
    pairs : int64 (P, 2), sorted; by_pixels : bool (P,), which the pixel test found;
    cross_best : float32 (N, V), each train image's best warp match across the split
    """
    a, b = candidates(nearest[:, :K_FEATURE],
                      key_neighbours(ctx.test_views.key, ctx.views.key, K_KEY), same=False)
    cross = warp_evidence(ctx.views, ctx.test_views, a, b, len(ctx.samples),
                          WarpOptions(REFERENCE_RANK, same=False, promise=ctx.warp.promise,
                                      every_best=True))
    moved = cross.pairs(warp_cut, RATIO_WARP, ctx.warp.distinct)
    found = np.r_[np.ones(len(pairs), bool), np.zeros(len(moved), bool)]
    pairs, first = np.unique(np.concatenate([pairs, moved]), axis=0, return_index=True)
    return pairs, found[first], cross.best


def best_test_copies(ctx: FindingContext, pairs: np.ndarray, by_pixels: np.ndarray,
                     test_x: np.ndarray, pixels: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each train image's best-matching test copy among ``pairs`` (-1: none), and its pixel
    and warp match to it ((N,) each; 0 without images). A pair the pixel test found
    (``by_pixels``) is ranked by its pixel match, before any the warp test alone found;
    without images, by feature distance (``test_x``: the test split in the map's space)."""
    n = len(ctx.samples)
    related = np.full(n, -1, np.int64)
    match = np.zeros(n, np.float32)
    warped = np.zeros(n, np.float32)
    if not len(pairs):
        return related, match, warped
    if pixels:
        w = warp_match(ctx.views, pairs[:, 0], ctx.test_views, pairs[:, 1]).max(1)
        p = match_pairs(ctx.grey, pairs[:, 0], ctx.test_grey, pairs[:, 1])
        m = np.where(by_pixels, 2.0 + p, w)  # the pixel test's first: it decides the drop
    else:
        m = -np.linalg.norm(ctx.space.x[pairs[:, 0]] - test_x[pairs[:, 1]], axis=1)
    order = np.lexsort((-m, pairs[:, 0]))
    first = order[np.r_[True, pairs[order, 0][1:] != pairs[order, 0][:-1]]]
    related[pairs[first, 0]] = pairs[first, 1]
    if pixels:
        match[pairs[first, 0]] = p[first]
        warped[pairs[first, 0]] = w[first]
    return related, match, warped


@register
class LeakKind(FindingKind):
    name = "leak"
    # 1: feature distance; 2: the duplicate rule across the split; 3: ratio test; 4: the
    # warp match (findings/warps.py); 5: the queue's score (queue_score); 6: the warp
    # test's tail at 3.5, a caption band, every train image's best candidate refined; 7: the
    # tails read off the ring of 11th-20th neighbours (copies.RING); 8: distinctness past a
    # family of copies
    version = "8"
    title = "leak into the test split"
    decision = DROP
    order = 20
    columns = ("leaks_to",)
    threshold = "leak_threshold"
    drop_threshold = "leak_drop_threshold"
    symbol = "triangle-up"
    # The same cut as near-duplicates: a leak is a near-duplicate across the split.
    advice = ("the train copy is dropped unless kept, so the test set stays comparable "
              "with published numbers; results also report accuracy without the leaked "
              "test images")

    def score_truth(self, table: FindingTable, marked: np.ndarray, truth: list[dict]) -> dict:
        """P/R/F1 against injected leaks (``--inject-leaks``): a marked train sample is
        right when it is an injected copy and its test image is the one it was made from;
        leaks the dataset already held count against precision (a lower bound). Recall per
        strength, and the review queue's: the share of injected leaks among the first 2×
        as many train samples by leak score (≥ 0.95)."""
        leaks = [r for r in truth if r["kind"] == "leak"]
        if not leaks:
            return {}
        idx = np.array([r["index"] for r in leaks], np.int64)
        found = marked[idx] & (table.related[idx] == np.array([r["source"] for r in leaks]))
        out = prf(int(found.sum()), int(marked.sum()), len(leaks))
        out["recall_by_strength"] = {
            how: round(float(found[[r["how"] == how for r in leaks]].mean()), 4)
            for how in sorted({r["how"] for r in leaks})}
        score = np.nan_to_num(np.asarray(table.score, np.float64), nan=-np.inf)
        queue = np.argsort(-score, kind="stable")[:2 * len(leaks)]
        out["queue_recall_at_2x"] = round(float(np.isin(idx, queue).mean()), 4)
        return out

    def key(self, ctx: FindingContext) -> str:
        test = ctx.test
        return f"t={self.cut(ctx)};test={test.key if test else None}"

    def compute(self, ctx: FindingContext) -> FindingTable:
        n, test = len(ctx.samples), ctx.test
        if test is None:
            table = FindingTable.empty(n)
            table.info = {"note": "no test split"}
            return table
        sp, t = ctx.space, float(self.cut(ctx))
        test_x = sp.project(test.features)
        nearest, dist = knn_query(test_x, sp.x, max(K_CANDIDATES, K_FEATURE))
        ratio = dist / sp.scale
        pixels = ctx.grey is not None and ctx.test_grey is not None
        # The train set's tail and distinctness, as for duplicates.
        cut = ctx.copy_cut(t, TAIL_PROPOSE) if pixels else None
        distinct = ctx.near.distinct if pixels else None
        pairs, best = copy_pairs(nearest[:, :K_CANDIDATES], ratio[:, :K_CANDIDATES], ctx.grey,
                                 ctx.test_grey, cut or t, distinct)
        warp_cut, score = None, best
        by_pixels = np.ones(len(pairs), bool)  # which pairs the pixel test found
        if pixels:  # copies that move (findings/warps.py)
            warp_cut = ctx.warp_cut(t, TAIL_WARP)
            pairs, by_pixels, cross_best = moved_test_copies(ctx, nearest, pairs, warp_cut)
            score = queue_score(ctx, best, cross_best, ratio)
        related, match, warped = best_test_copies(ctx, pairs, by_pixels, test_x, pixels)
        issue = related >= 0
        # Dropped by default as a copy is (duplicate.py): the match to its test copy reaches
        # the drop cut and passes the stricter ratio test; the other leaks are proposed.
        drop = issue.copy()
        drop_cut = None
        if pixels:
            drop_cut = ctx.copy_cut(max(float(self.drop_cut(ctx)), cut or t), TAIL_DROP)
            drop &= (match >= drop_cut) & stands_out(match, distinct, RATIO_DROP)
        j = np.where(issue, related, nearest[:, 0])
        r_rel = np.linalg.norm(sp.x - test_x[j], axis=1) / sp.scale
        same = np.asarray(test.labels)[j] == ctx.samples.labels
        return FindingTable(issue, score, related,
                            {"ratio": r_rel.astype(np.float32),
                             "match": np.where(issue, match, best) if pixels else best,
                             "warped": warped, "same_label": same},
                            {"threshold": t, "pixel_cut": cut, "warp_cut": listed(warp_cut),
                             "drop_cut": drop_cut,
                             "scale": sp.scale, "test_images": len(test.paths),
                             "leaked_test_images": int(len(np.unique(related[issue])))}, drop)

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        return {"leaks_to": [view.test_paths[r] if r >= 0 else "" for r in table.related.tolist()]}

    def why(self, table: FindingTable, i: int, view: View) -> str:
        j = int(table.related[i])
        same = "same label" if table.facts["same_label"][i] else "another label"
        f = table.facts
        pixels = ""
        if table.info.get("pixel_cut") is not None:
            pixels = f"pixel match {float(f['match'][i]):.2f}"
            if "warped" in f:  # tables written before the warp test have none
                pixels += warped_words(float(f["match"][i]), float(f["warped"][i]))
            pixels += ", "
        return (f"nearly identical to test image {view.test_paths[j]} "
                f"({pixels}feature distance {float(table.facts['ratio'][i]):.2f}× the typical, "
                f"{same})")
