"""Each finding kind scored against injected truth (``injected.csv``, sources/inject.py):
every kind that has rows there scores itself (``FindingKind.score_truth``: the duplicate
kind by families of copies, the outlier kind by P/R/F1 and AUROC).
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings import get_kind
from worker.pipeline.findings.step import marks
from worker.pipeline.map.clustering import Decisions


def label_dropped(decisions: Decisions) -> np.ndarray:
    """Samples dropped by the label rule or a reviewer: what the rule alone would drop,
    whether or not another kind's default drops them too."""
    return ~decisions.kept & (decisions.flagged | (decisions.reason == "override_drop"))


def findings_scores(snap, truth_rows: list[dict]) -> dict:  # noqa: ANN001 - a snapshot
    """Per kind: how many it marks now, and its scores where the run knows the truth;
    ``dropped``: the same scores of the marks its default drops (its drop cut's
    precision is what a user who accepts the defaults relies on)."""
    view = snap.view()
    marked = marks(snap.findings, view)
    out: dict = {name: {"marked": int(m.sum())} for name, m in marked.items()}
    for name, m in marked.items():
        rows = [r for r in truth_rows if r["kind"] == name]
        if rows:
            kind, table = get_kind(name), snap.findings[name]
            out[name].update(kind.score_truth(table, m, rows))
            dropping = kind.dropping(table, view)
            out[name]["dropped"] = {"marked": int(dropping.sum()),
                                    **kind.score_truth(table, dropping, rows)}
    return out
