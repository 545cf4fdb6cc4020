"""Each finding kind scored against injected truth (``injected.csv``, findings/inject.py).

- ``duplicate``: an injected copy and its source form a family. A marked sample is right
  when its kept copy is of its own family (whichever of the two was kept), or when it
  shares a group with the other member of its family; a family is found when its two
  members share a group and one of them is marked (both may be dropped for a third,
  nearly identical sample). Natural duplicates the dataset already held count against
  precision, so precision is a lower bound.
- ``outlier``: the injected outliers are the truth; the score's AUROC beside P/R/F1.
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.evaluation.metrics import auroc
from worker.pipeline.findings.step import marks
from worker.pipeline.map.clustering import Decisions


def label_dropped(decisions: Decisions) -> np.ndarray:
    """Samples dropped by the label rule or a reviewer: what the rule alone would drop,
    whether or not another kind's default drops them too."""
    return ~decisions.kept & (decisions.flagged | (decisions.reason == "override_drop"))


def _prf(tp: int, marked: int, truth: int) -> dict:
    p = tp / marked if marked else 0.0
    r = tp / truth if truth else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4),
            "marked": marked, "truth": truth, "true_positives": tp}


def duplicate_scores(marked: np.ndarray, related: np.ndarray, truth_rows: list[dict],
                     group: np.ndarray | None = None) -> dict:
    """P/R/F1 of duplicate marks against injected copies, and recall per strength
    (``group``: the duplicate kind's group per sample, -1 none)."""
    n = len(marked)
    family = np.arange(n)
    copies = [r for r in truth_rows if r["kind"] == "duplicate"]
    for r in copies:
        family[r["index"]] = r["source"]
    group = np.full(n, -1) if group is None else group
    found = np.flatnonzero(marked)
    grouped = {(int(group[r["index"]]), r["source"]) for r in copies
               if group[r["index"]] >= 0 and group[r["index"]] == group[r["source"]]
               and (marked[r["index"]] or marked[r["source"]])}
    together = {f for _, f in grouped}
    right = found[((related[found] >= 0)
                   & (family[found] == family[np.maximum(related[found], 0)]))
                  | np.isin(family[found], list(together))]
    hit = set(family[right].tolist()) | together
    out = _prf(len(right), len(found), len(copies))
    out["recall"] = round(len(hit) / len(copies), 4) if copies else 0.0
    p, r = out["precision"], out["recall"]
    out["f1"] = round(2 * p * r / (p + r), 4) if p + r else 0.0
    by = {}
    for how in sorted({c["how"] for c in copies}):
        fams = [c["source"] for c in copies if c["how"] == how]
        by[how] = round(sum(f in hit for f in fams) / len(fams), 4)
    out["recall_by_strength"] = by
    return out


def findings_scores(snap, truth_rows: list[dict]) -> dict:  # noqa: ANN001 - a snapshot
    """Per kind: how many it marks now, and its scores where the run knows the truth."""
    marked = marks(snap.findings, snap.view())
    out: dict = {name: {"marked": int(m.sum())} for name, m in marked.items()}
    kinds_truth = {r["kind"] for r in truth_rows}
    if "duplicate" in marked and "duplicate" in kinds_truth:
        dup = snap.findings["duplicate"]
        out["duplicate"].update(duplicate_scores(marked["duplicate"], dup.related, truth_rows,
                                                 dup.facts.get("group")))
    if "outlier" in marked and "outlier" in kinds_truth:
        truth = np.zeros(len(snap.samples), bool)
        truth[[r["index"] for r in truth_rows if r["kind"] == "outlier"]] = True
        m = marked["outlier"]
        out["outlier"].update(_prf(int((m & truth).sum()), int(m.sum()), int(truth.sum())))
        out["outlier"]["auroc"] = auroc(snap.findings["outlier"].score, truth)
    return out
