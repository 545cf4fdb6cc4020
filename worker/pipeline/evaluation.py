"""Score flagged points against known true labels, beside a cleanlab baseline.

A sample is *noisy* when its given label differs from its true label; only samples whose
true label is known count. Every report carries cleanlab's figures on the same features
(``find_label_issues`` with 5-fold cross-validated probabilities from logistic regression
and from a 10-NN classifier), so each run shows how we compare.
"""

from __future__ import annotations

import numpy as np

from .clustering import DEFAULT_RULE, RULES, decide
from .curation import current_decisions, load_agreement, open_store
from .errors import InputError
from .rundir import RunDir

CLEANLAB_CLASSIFIERS = ("logreg", "knn")


def detection_scores(flagged: np.ndarray, noisy: np.ndarray) -> dict[str, float | int]:
    """Precision, recall and F1 of ``flagged`` against ``noisy`` (both bool, shape (N,))."""
    tp = int((flagged & noisy).sum())
    n_flag, n_noisy = int(flagged.sum()), int(noisy.sum())
    precision = tp / n_flag if n_flag else 0.0
    recall = tp / n_noisy if n_noisy else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "flagged": n_flag, "noisy": n_noisy, "true_positives": tp}


def cleanlab_flags(features: np.ndarray, labels: np.ndarray, classifier: str = "logreg",
                   seed: int = 0) -> np.ndarray:
    """cleanlab's label issues from cross-validated pred_probs on ``features``.

    Parameters
    ----------
    features : ndarray, shape (N, D)
    labels : ndarray of int, shape (N,)

    Returns
    -------
    ndarray of bool, shape (N,)
    """
    from cleanlab.filter import find_label_issues
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from .embedding import pca_reduce

    x = pca_reduce(features, 50, seed)
    if classifier == "logreg":
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    elif classifier == "knn":
        clf = KNeighborsClassifier(n_neighbors=10)
    else:
        raise InputError(f"unknown cleanlab classifier {classifier!r}")
    folds = min(5, int(np.bincount(labels).min()))
    if folds < 2:
        raise InputError("cleanlab needs at least 2 samples in every class")
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    pred_probs = cross_val_predict(clf, x, labels, cv=cv, method="predict_proba")
    return np.asarray(find_label_issues(labels, pred_probs), dtype=bool)


def evaluate(run: RunDir, with_cleanlab: bool = True) -> dict:
    """Detection quality of the run's current curation, every rule, and cleanlab.

    Returns
    -------
    dict with ``known`` (how many true labels are known), ``current`` (the run's own rule,
    parameters and overrides, i.e. what an export would drop), ``rules`` (each rule at the
    same parameters, without overrides) and ``cleanlab`` (per classifier).
    """
    samples, decisions, _ = current_decisions(run)
    known = samples.true_labels >= 0
    out: dict = {"run": run.run_id, "n_samples": len(samples), "known": int(known.sum()),
                 "rule": open_store(run).setting("rule", DEFAULT_RULE)}
    if not known.any():
        return out
    if not known.all():
        raise InputError(f"true labels are known for only {int(known.sum())} of "
                         f"{len(samples)} samples; give a true label for every sample")
    noisy = samples.true_labels != samples.labels
    out["current"] = detection_scores(~decisions.kept, noisy)
    agreement = load_agreement(run)
    out["rules"] = {rule: detection_scores(decide(decisions.clusters, agreement, {}, rule).flagged,
                                           noisy) for rule in RULES}
    if with_cleanlab:
        feats = run.load_features()
        out["cleanlab"] = {c: detection_scores(cleanlab_flags(feats, samples.labels, c), noisy)
                           for c in CLEANLAB_CLASSIFIERS}
    return out


def format_report(result: dict) -> str:
    """Human-readable text of :func:`evaluate`'s result."""
    if "current" not in result:
        return (f"{result['run']}: no true labels are known, so detection cannot be scored "
                "(use --inject-noise or --true-label-column)")
    lines = [f"{result['run']}: {result['n_samples']} samples, "
             f"{result['current']['noisy']} with a wrong label",
             f"{'method':<34}{'precision':>10}{'recall':>9}{'F1':>8}{'flagged':>9}"]

    def row(name: str, s: dict) -> str:
        return (f"{name:<34}{s['precision']:>10.3f}{s['recall']:>9.3f}{s['f1']:>8.3f}"
                f"{s['flagged']:>9}")

    lines.append(row(f"current ({result['rule']}+overrides)", result["current"]))
    lines += [row(f"rule {r}", s) for r, s in result["rules"].items()]
    lines += [row(f"cleanlab ({c})", s) for c, s in result.get("cleanlab", {}).items()]
    return "\n".join(lines)
