"""``leak``: train images with a near-duplicate among the test images.

When the dataset has a test split (``folder:`` with ``train/`` and ``test/``, or
``cifar10:``), its images go through the same backbone (findings/testsplit.py, cached)
and are projected into the train samples' PCA space; each train image whose nearest test
image lies within ``threshold`` × the train set's typical nearest-neighbour distance is
marked, with that test image as the related sample. The default drops the train copy, so
the test set stays comparable with published numbers.
"""

from __future__ import annotations

import numpy as np

from .base import DROP, FindingKind, FindingTable, View
from .context import FindingContext
from .duplicate import DEFAULT_DUPLICATE_THRESHOLD
from .registry import register


@register
class LeakKind(FindingKind):
    name = "leak"
    title = "leak into the test split"
    decision = DROP
    order = 20
    columns = ("leaks_to",)
    threshold = "leak_threshold"
    # The same cut as near-duplicates: a leak is a near-duplicate across the split.
    default_threshold = DEFAULT_DUPLICATE_THRESHOLD
    advice = ("the train copy is dropped unless kept, so the test set stays comparable "
              "with published numbers; results also report accuracy without the leaked "
              "test images")

    def key(self, ctx: FindingContext) -> str:
        test = ctx.test
        return f"t={ctx.threshold(self)};test={test.key if test else None}"

    def compute(self, ctx: FindingContext) -> FindingTable:
        n = len(ctx.samples)
        test = ctx.test
        if test is None:
            table = FindingTable.empty(n)
            table.info = {"note": "no test split"}
            return table
        sp, t = ctx.space, float(ctx.threshold(self))
        scale = sp.scale
        nearest, dist = _nearest_test(sp.x, sp.project(test.features))
        ratio = (dist / scale).astype(np.float32)
        issue = ratio <= t
        same = np.asarray(test.labels)[nearest] == ctx.samples.labels
        return FindingTable(issue, (1.0 / (1.0 + ratio)).astype(np.float32),
                            np.where(issue, nearest, -1),
                            {"ratio": ratio, "nearest_test": nearest, "same_label": same},
                            {"threshold": t, "scale": scale, "test_images": len(test.paths),
                             "leaked_test_images": int(len(np.unique(nearest[issue])))})

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        return {"leaks_to": [view.test_paths[r] if r >= 0 else "" for r in table.related.tolist()]}

    def why(self, table: FindingTable, i: int, view: View) -> str:
        j = int(table.related[i])
        same = "same label" if table.facts["same_label"][i] else "another label"
        return (f"nearly identical to test image {view.test_paths[j]} "
                f"(distance {float(table.facts['ratio'][i]):.2f}× the typical, {same})")


def _nearest_test(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each train row's nearest test row and its distance, by exact search."""
    from .index import knn_query

    idx, dist = knn_query(test, train, 1)
    return idx[:, 0], dist[:, 0]
