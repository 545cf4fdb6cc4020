"""``label``: samples whose given label the evidence does not support.

Its table is the label evidence the cluster step writes (``score.npy``,
``suggested_label.npy``, ``label_issue.npy``: worker/pipeline/map/evidence.py); which samples
it marks is the run's rule at the stored parameters, cuts and overrides
(worker/pipeline/map/clustering.py ``decide``), so it is read, never stored again. A group of
near-duplicates whose members carry different labels is a label finding too: the same
picture cannot be both.
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings.base import DROP, FindingKind, FindingTable, View
from worker.pipeline.findings.context import FindingContext
from worker.pipeline.findings.kind_registry import register


@register
class LabelKind(FindingKind):
    name = "label"
    title = "wrong label"
    decision = DROP
    order = 0
    columns = ("score", "suggested_label")
    stored = False
    advice = ("dropped unless kept; relabel it to the suggestion ('r') when the picture "
              "is right and the label wrong")

    def compute(self, ctx: FindingContext) -> FindingTable:
        return self.read(ctx.run, len(ctx.samples))

    @staticmethod
    def read(run, n: int) -> FindingTable:  # noqa: ANN001 - a RunDir
        """The evidence files as a table (empty for a run clustered before them)."""
        paths = {k: run.path / f for k, f in (("score", "score.npy"),
                                               ("suggested", "suggested_label.npy"),
                                               ("issue", "label_issue.npy"))}
        if not all(p.is_file() for p in paths.values()):
            return FindingTable.empty(n)
        a = {k: run.load_array(p, "cluster") for k, p in paths.items()}
        return FindingTable(a["issue"].astype(bool), a["score"].astype(np.float32),
                            np.full(n, -1, np.int64), {"suggested": a["suggested"]})

    def key(self, ctx: FindingContext) -> str:
        return "evidence"

    def current(self, table: FindingTable, view: View | None = None) -> np.ndarray:
        flagged = None if view is None else view.flagged
        marked = table.issue if flagged is None else np.asarray(flagged, bool)
        dup = {} if view is None else view.tables
        dup = dup.get("duplicate")
        if dup is not None and "label_conflict" in dup.facts:
            marked = marked | dup.facts["label_conflict"].astype(bool)
        return marked

    def column_values(self, table: FindingTable, view: View) -> dict[str, list[str]]:
        n, classes, flagged = len(table), view.classes, view.flagged
        if "suggested" not in table.facts:
            return {"score": [""] * n, "suggested_label": [""] * n}
        sug = table.facts["suggested"]
        show = np.ones(n, bool) if flagged is None else np.asarray(flagged, bool)
        return {"score": [f"{s:.4f}" for s in table.score.tolist()],
                "suggested_label": [classes[int(c)] if f else ""
                                    for c, f in zip(sug.tolist(), show.tolist(), strict=True)]}

    def why(self, table: FindingTable, i: int, view: View) -> str:
        if "suggested" not in table.facts:
            return "flagged by the rule"
        classes, sug = view.classes, int(table.facts["suggested"][i])
        given = classes[int(view.labels[i])]
        return (f"labelled {given}, looks like {classes[sug]} "
                f"(mislabel score {float(table.score[i]):.2f})")
