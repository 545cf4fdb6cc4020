"""``outlier``: images that belong to no class (another domain, blank, corrupt).

The score is a sample's mean distance to its ``K_OUTLIER`` nearest other samples in the
features' PCA space (the stored neighbour index; never the t-SNE map, whose distances are
not meant to be compared), divided by the dataset's median of that mean. A sample is an
outlier when that ratio reaches ``threshold``. Its why-line gives the share of the
dataset that lies closer to its own neighbours.
"""

from __future__ import annotations

import numpy as np

from .base import DROP, FindingKind, FindingTable, View
from .context import FindingContext
from .registry import register

K_OUTLIER = 10
# Chosen from the injected-outliers table in docs/benchmarks.md (bench/findings.py).
DEFAULT_OUTLIER_THRESHOLD = 2.0


@register
class OutlierKind(FindingKind):
    name = "outlier"
    title = "outlier"
    decision = DROP
    order = 30
    columns = ("outlier_score", "outlier")
    threshold = "outlier_threshold"
    default_threshold = DEFAULT_OUTLIER_THRESHOLD
    advice = ("dropped unless kept: it fits no class; keep it ('a') when it is a rare but "
              "real case of its class")

    def compute(self, ctx: FindingContext) -> FindingTable:
        sp, t = ctx.space, float(ctx.threshold(self))
        n = len(ctx.samples)
        k = min(K_OUTLIER, sp.distances.shape[1])
        mean = sp.distances[:, :k].mean(1) if k else np.zeros(n, np.float32)
        typical = float(np.median(mean)) or 1.0
        ratio = (mean / typical).astype(np.float32)
        # Share of samples with a smaller mean distance: "farther than 99.6% of the dataset".
        rank = np.empty(n, np.float32)
        rank[np.argsort(ratio, kind="stable")] = np.arange(n, dtype=np.float32) / max(n, 1)
        return FindingTable(ratio >= t, ratio, np.full(n, -1, np.int64),
                            {"ratio": ratio, "percentile": rank},
                            {"threshold": t, "k": k, "typical": typical})

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        return {"outlier_score": [f"{s:.4f}" for s in table.score.tolist()],
                "outlier": [str(int(b)) for b in table.issue.tolist()]}

    def why(self, table: FindingTable, i: int, view: View) -> str:
        pct = 100.0 * float(table.facts["percentile"][i])
        return (f"farther from its {K_OUTLIER} nearest images than {pct:.1f}% of the dataset "
                f"({float(table.score[i]):.1f}× the typical distance)")
