"""Detection metrics: precision, recall and F1 of a set of marks, and AUROC of a score,
against known truth. A base module of the pipeline: the finding kinds score themselves
with it (``FindingKind.score_truth``), and the evaluation, the Runs page and the benches
report with it.

Where both the marks and the truth are label arrays, scikit-learn scores them
(``precision_recall_fscore_support``, ``roc_auc_score``). Where only counts are known (a
kind that judges a mark right by more than its index: a leak must point at the test image
it was made from), :func:`prf` scores the counts, and :func:`f1_of` is the one F1 formula
for a precision and recall measured apart. Every score is rounded to 4 decimals; a score
whose denominator is zero is 0.0. scikit-learn is imported inside the functions: the
finding kinds import this module, and ``curator --help`` must not load scikit-learn.
"""

from __future__ import annotations

import numpy as np

DECIMALS = 4


def f1_of(precision: float, recall: float) -> float:
    """The harmonic mean of ``precision`` and ``recall``; 0.0 when both are 0."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def prf(tp: int, marked: int, truth: int) -> dict:
    """Precision, recall and F1 from counts: ``tp`` right marks of ``marked``, with
    ``truth`` samples to find."""
    p, r = _ratio(tp, marked), _ratio(tp, truth)
    return {"precision": round(p, DECIMALS), "recall": round(r, DECIMALS),
            "f1": round(f1_of(p, r), DECIMALS), "marked": marked, "truth": truth,
            "true_positives": tp}


def _array_scores(marked: np.ndarray, truth: np.ndarray) -> tuple[float, float, float, int]:
    """(precision, recall, F1, true positives) of bool (N,) ``marked`` against ``truth``."""
    from sklearn.metrics import precision_recall_fscore_support

    p, r, f1, _ = precision_recall_fscore_support(truth, marked, average="binary",
                                                  pos_label=True, zero_division=0)
    return (round(float(p), DECIMALS), round(float(r), DECIMALS), round(float(f1), DECIMALS),
            int((marked & truth).sum()))


def prf_of(marked: np.ndarray, truth: np.ndarray) -> dict:
    """:func:`prf`'s scores and counts of ``marked`` against ``truth`` (bool, shape (N,))."""
    marked, truth = np.asarray(marked, bool), np.asarray(truth, bool)
    p, r, f1, tp = _array_scores(marked, truth)
    return {"precision": p, "recall": r, "f1": f1, "marked": int(marked.sum()),
            "truth": int(truth.sum()), "true_positives": tp}


def detection_scores(flagged: np.ndarray, noisy: np.ndarray) -> dict[str, float | int]:
    """Precision, recall and F1 of ``flagged`` against ``noisy``.

    Parameters
    ----------
    flagged, noisy : bool, shape (N,)

    Returns
    -------
    ``precision``, ``recall``, ``f1`` (0.0 where a denominator is zero), and the counts
    ``flagged``, ``noisy`` and ``true_positives``.
    """
    flagged, noisy = np.asarray(flagged, bool), np.asarray(noisy, bool)
    p, r, f1, tp = _array_scores(flagged, noisy)
    return {"precision": p, "recall": r, "f1": f1, "flagged": int(flagged.sum()),
            "noisy": int(noisy.sum()), "true_positives": tp}


def auroc(score: np.ndarray, noisy: np.ndarray) -> float | None:
    """Area under the ROC curve of ``score`` (shape (N,), higher = more likely wrong) for
    ``noisy`` (bool, shape (N,)); None when only one kind is present."""
    from sklearn.metrics import roc_auc_score

    if noisy.all() or not noisy.any():
        return None
    return round(float(roc_auc_score(noisy, score)), DECIMALS)
