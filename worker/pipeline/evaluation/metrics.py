"""Detection metrics: precision, recall and F1 of a set of marks, and AUROC of a score,
against known truth. Shared by the evaluate report and the findings' scores."""

from __future__ import annotations

import numpy as np


def detection_scores(flagged: np.ndarray, noisy: np.ndarray) -> dict[str, float | int]:
    """Precision, recall and F1 of ``flagged`` against ``noisy`` (both bool, shape (N,))."""
    tp = int((flagged & noisy).sum())
    n_flag, n_noisy = int(flagged.sum()), int(noisy.sum())
    precision = tp / n_flag if n_flag else 0.0
    recall = tp / n_noisy if n_noisy else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "flagged": n_flag, "noisy": n_noisy, "true_positives": tp}


def auroc(score: np.ndarray, noisy: np.ndarray) -> float | None:
    """Area under the ROC curve of ``score`` (higher = more likely wrong) for ``noisy``;
    None when only one kind is present."""
    from sklearn.metrics import roc_auc_score

    if noisy.all() or not noisy.any():
        return None
    return round(float(roc_auc_score(noisy, score)), 4)


def prf(tp: int, marked: int, truth: int) -> dict:
    p = tp / marked if marked else 0.0
    r = tp / truth if truth else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4),
            "marked": marked, "truth": truth, "true_positives": tp}
