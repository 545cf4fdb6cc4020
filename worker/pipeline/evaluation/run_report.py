"""Score flagged points against known true labels, beside a cleanlab baseline.

A sample is *noisy* when its given label differs from its true label; only samples whose
true label is known count. Every report carries cleanlab's figures on the same features
(``find_label_issues`` with 5-fold cross-validated probabilities from logistic regression
and from a 10-NN classifier), so each run shows how we compare.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from worker.pipeline.curation.gauge import Gauge
from worker.pipeline.curation.rule_evidence import (
    load_agreement,
    load_evidence,
    rule_inputs,
    run_gauge,
)
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.errors import InputError
from worker.pipeline.evaluation.findings_scores import findings_scores, label_dropped
from worker.pipeline.map.clustering import RULES, decide
from worker.pipeline.map.embedding import pca_reduce
from worker.pipeline.metrics import auroc, detection_scores
from worker.pipeline.sources.inject import read_truth
from worker.pipeline.storage.rundir import RunDir

CLEANLAB_CLASSIFIERS = ("logreg", "knn")


def noise_estimate(samples, evidence: dict[str, np.ndarray] | None) -> list[dict]:
    """Estimated share of wrong labels per class and overall, as a range, beside the true
    share when the true labels are known.

    The range is the share of ``issue`` samples (the smallest of confident learning's
    estimates of how many labels are wrong) to the share of ``suspect`` samples (the
    largest) given each label (:mod:`.evidence`), so it needs no true labels.

    Returns
    -------
    list of dict with class, size, estimated_pct, estimated_high_pct and true_pct (None
    when unknown); the last row is the total.
    """
    if evidence is None:
        return []
    known = bool((samples.true_labels >= 0).all())
    wrong = samples.true_labels != samples.labels
    masks = [(name, samples.labels == c) for c, name in enumerate(samples.classes)]
    masks.append(("total", np.ones(len(samples), dtype=bool)))

    def pct(a: np.ndarray, m: np.ndarray) -> float:
        return round(100.0 * float(a[m].mean()), 2) if m.any() else 0.0

    return [{"class": name, "size": int(m.sum()), "estimated_pct": pct(evidence["issue"], m),
             "estimated_high_pct": pct(evidence["suspect"], m),
             "true_pct": pct(wrong, m) if known else None} for name, m in masks]


def cleanlab_probs(features: np.ndarray, labels: np.ndarray, classifier: str = "logreg",
                   pca: bool = True, seed: int = 0) -> np.ndarray:
    """5-fold stratified cross-validated ``pred_probs``, the input cleanlab expects.

    Parameters
    ----------
    features : ndarray, shape (N, D)
    labels : ndarray of int, shape (N,)
    classifier : {"logreg", "knn"}
        Logistic regression on standardised features, or a 10-NN classifier.
    pca : bool
        Reduce to PCA-50 first (as our rules do) or use the raw features.

    Returns
    -------
    ndarray of float, shape (N, C)
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler


    x = pca_reduce(features, 50, seed) if pca else np.asarray(features, dtype=np.float32)
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
    return cross_val_predict(clf, x, labels, cv=cv, method="predict_proba")


def cleanlab_flags(features: np.ndarray, labels: np.ndarray, classifier: str = "logreg",
                   seed: int = 0) -> np.ndarray:
    """cleanlab's label issues from :func:`cleanlab_probs` on PCA-50 features.

    Returns
    -------
    ndarray of bool, shape (N,)
    """
    from cleanlab.filter import find_label_issues

    probs = cleanlab_probs(features, labels, classifier, True, seed)
    return np.asarray(find_label_issues(labels, probs), dtype=bool)


def evaluate(run: RunDir, with_cleanlab: bool = True) -> dict:
    """Detection quality of the run's current curation, every rule, and cleanlab.

    Returns
    -------
    dict with ``known`` (how many true labels are known), ``current`` (the run's own rule,
    parameters and overrides, i.e. what an export would drop), ``rules`` (each rule at the
    same parameters, without overrides) and ``cleanlab`` (per classifier).
    """
    snap = current_snapshot(run)
    samples, decisions = snap.samples, snap.decisions
    # Injected outliers belong to no class: they have no true label, and are scored as
    # outliers (findings_scores), not as wrong labels.
    truth_rows = read_truth(run.path)
    scored = np.ones(len(samples), bool)
    scored[[r["index"] for r in truth_rows if r["kind"] == "outlier"]] = False
    known = samples.true_labels >= 0
    evidence = load_evidence(run)
    out: dict = {"run": run.run_id, "n_samples": len(samples), "known": int(known.sum()),
                 "rule": snap.stored.rule, "store_revision": snap.stored.revision,
                 "noise_estimate": noise_estimate(samples, evidence),
                 "features": _features_info(run),
                 "findings": findings_scores(snap, truth_rows)}
    if not known.any():
        return out
    if not known[scored].all():
        raise InputError(f"true labels are known for only {int(known.sum())} of "
                         f"{len(samples)} samples; give a true label for every sample")
    noisy = (samples.true_labels != samples.labels) & scored
    # What the label rule and the reviewers drop; other kinds' drops are scored apart.
    out["current"] = detection_scores(label_dropped(decisions) & scored, noisy)
    inputs = rule_inputs(load_agreement(run), evidence)
    out["rules"] = {rule: detection_scores(decide(decisions.clusters, inputs, {}, rule).flagged,
                                           noisy) for rule in RULES
                    if rule != "adaptive" or inputs.issue is not None}
    if evidence is not None:
        out["score_auroc"] = auroc(evidence["score"], noisy)
    if with_cleanlab:
        feats = run.load_features()
        out["cleanlab"] = {c: detection_scores(cleanlab_flags(feats, samples.labels, c), noisy)
                           for c in CLEANLAB_CLASSIFIERS}
    return out


def _features_info(run: RunDir) -> dict:
    """The model, whether its weights were learned, and the feature-quality gauge."""
    extract = run.step("extract")
    gauge = run_gauge(run)
    return {"model": extract.get("model"), "pretrained": extract.get("pretrained"),
            "gauge": None if gauge is None else asdict(gauge)}


def format_features(info: dict) -> str:
    """Lines on the features: the random-weights warning and the gauge ('' if neither)."""
    lines = []
    if info.get("pretrained") is False:
        lines.append(f"warning: the features come from {info['model']} with random weights")
    gauge = info.get("gauge")
    if gauge:
        lines.append(Gauge(**gauge).line)
    return "\n".join(lines)


def format_report(result: dict) -> str:
    """Human-readable text of :func:`evaluate`'s result."""
    estimate = format_estimate(result.get("noise_estimate", []))
    features = format_features(result.get("features", {}))
    estimate += "\n" + features if features else ""
    if "current" not in result:
        return (f"{result['run']}: no true labels are known, so detection cannot be scored "
                "(use --inject-noise or --true-label-column)"
                + format_findings_scores(result.get("findings", {})) + estimate)
    lines = [f"{result['run']}: {result['n_samples']} samples, "
             f"{result['current']['noisy']} with a wrong label",
             f"{'method':<34}{'precision':>10}{'recall':>9}{'F1':>8}{'flagged':>9}"]

    def row(name: str, s: dict) -> str:
        return (f"{name:<34}{s['precision']:>10.3f}{s['recall']:>9.3f}{s['f1']:>8.3f}"
                f"{s['flagged']:>9}")

    lines.append(row(f"current ({result['rule']}+overrides)", result["current"]))
    lines += [row(f"rule {r}", s) for r, s in result["rules"].items()]
    lines += [row(f"cleanlab ({c})", s) for c, s in result.get("cleanlab", {}).items()]
    if result.get("score_auroc") is not None:
        lines.append(f"mislabel score AUROC {result['score_auroc']:.3f}")
    return "\n".join(lines) + format_findings_scores(result.get("findings", {})) + estimate


def format_findings_scores(scores: dict) -> str:
    """The other finding kinds against injected truth, as text ('' when none is known)."""
    lines = []
    for name, s in scores.items():
        if "truth" not in s:
            continue
        extra = f", AUROC {s['auroc']:.3f}" if s.get("auroc") is not None else ""
        by = s.get("recall_by_strength")
        extra += ("; recall by strength " + ", ".join(f"{k} {v:.2f}" for k, v in by.items())
                  ) if by else ""
        if s.get("queue_recall_at_2x") is not None:
            extra += (f"; the first {2 * s['truth']} of the review queue hold "
                      f"{s['queue_recall_at_2x']:.0%} of them")
        lines.append(f"{name}: P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f} "
                     f"({s['marked']} marked, {s['truth']} injected{extra})")
        d = s.get("dropped")
        if d and "precision" in d:
            lines.append(f"  of them dropped by default: P {d['precision']:.3f} R "
                         f"{d['recall']:.3f} F1 {d['f1']:.3f} ({d['marked']} dropped)")
    return ("\n\ninjected findings\n" + "\n".join(lines)) if lines else ""


def format_estimate(rows: list[dict]) -> str:
    """The per-class wrong-label shares of :func:`noise_estimate`, as text ('' if none)."""
    if not rows:
        return ""
    truth = rows[-1]["true_pct"] is not None
    lines = ["", "wrong labels, estimated from the data" + (" (true share beside it)" if truth
                                                            else ""),
             f"{'class':<14}{'size':>8}{'estimated':>17}" + (f"{'true':>9}" if truth else "")]
    for r in rows:
        low_high = f"{r['estimated_pct']:.2f}–{r['estimated_high_pct']:.2f}%"
        lines.append(f"{r['class'][:14]:<14}{r['size']:>8}{low_high:>17}"
                     + (f"{r['true_pct']:>8.2f}%" if truth else ""))
    return "\n".join(lines)
