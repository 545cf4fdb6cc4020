"""Noise detection on a grid of datasets and noise kinds: every rule beside the peers.

Each row runs (or reuses) the pipeline with default settings (automatic eps, no tuning),
then scores, on the same features: our three rules, cleanlab with 5-fold logistic
regression and 10-NN probabilities on PCA-50 and on the raw features, and the
SimiFeat-style vote (bench/peers.py). Every method gets precision, recall, F1 and the
AUROC of its score (the plain ``dbscan`` rule has no score). It prints a Markdown table
per row and one ``ratio_<row>=`` line: our default rule's F1 / the best peer's F1.

Rows:
- digits (pixels) with 10%, 20% and 40% symmetric injected noise;
- the 50,000 CIFAR-10 train JPEGs with ResNet-56 features (the shared weights, trained on
  CIFAR-10's *true* labels, which flatters every detector): the CIFAR-10N ``aggre_label``
  (9% human noise), and injected noise at 20% and 40%, symmetric and pairs;
- held out (looked at only after the rule was chosen): the 10,000 CIFAR-10 *test* images,
  which the ResNet-56 never saw, with 30% injected noise, symmetric and pairs;
- pretrained (the honest rows): features from the ImageNet-pretrained EfficientNet-Lite0
  (the default backbone, never trained on CIFAR labels): CIFAR-10N aggre, CIFAR-10 train
  with 40% pairs and 40% symmetric, and the test split with 30% pairs;
- ``lite-mini-pair40``: the 2,000 train images of ``cifar10-mini`` with 40% pairs noise and
  the default backbone (the regression guard's row, bench/regression_guard.py);
- weak features, the case a user met before the pretrained default: the 2,000 train
  images of ``cifar10-mini`` with 20% symmetric noise, on raw pixels (``mini-pixels``)
  and on a ResNet-18 with random weights (``mini-random``);
- ``cifar10n-scratch``: a stratified 10,000-image subset with the CIFAR-10N labels,
  features from a CIFAR ResNet-20 trained from random initialisation on those noisy labels
  only (``--finetune``), so no true label shaped them.

    python -m bench.detection [--runs runs] [--only ROW[,ROW]] [--skip-cifar] [--json F]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench.common import (
    SHARED,
    Row,
    cifar_folder,
    cifar_mini_folder,
    cifar_subset,
    machine,
    resnet56_features,
    run_row,
)
from bench.peers import cleanlab_peer, simifeat_vote
from worker.pipeline.curation.rule_evidence import load_evidence, load_rule_inputs, run_gauge
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.map.clustering import DEFAULT_RULE, RULES, decide
from worker.pipeline.metrics import auroc, detection_scores
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir

SCRATCH_PER_CLASS = 1000
SCRATCH_EPOCHS = 15


def rows(skip_cifar: bool) -> list[Row]:
    pixels = FeatureOptions()
    out = [Row(f"digits-sym{int(r * 100)}",
               DatasetOptions(parse_spec("digits"), inject_noise=r, seed=0), pixels,
               f"digits, {int(r * 100)}% symmetric, pixels") for r in (0.1, 0.2, 0.4)]
    if skip_cifar:
        return out
    root = cifar_folder()
    r56 = resnet56_features()
    folder = parse_spec(f"folder:{root}")
    out.append(Row("cifar10n", DatasetOptions(
        folder, labels_csv=SHARED / "cifar10n-train-labels.csv", label_column="aggre_label",
        true_label_column="clean_label"), r56, "CIFAR-10N aggre (9.0% human), ResNet-56*"))
    for kind in ("symmetric", "pairs"):
        for r in (0.2, 0.4):
            out.append(Row(f"cifar-{kind[:4]}{int(r * 100)}",
                           DatasetOptions(folder, inject_noise=r, seed=0, noise_kind=kind),
                           r56, f"CIFAR-10, {int(r * 100)}% {kind}, ResNet-56*"))
    # Held out: no choice of the rule was made looking at these rows. The 10,000 test
    # images were never seen by the ResNet-56 (its features generalise, ~93% accuracy,
    # rather than recall training labels), with injected noise.
    test = parse_spec(f"folder:{root}", split="test")
    for kind in ("symmetric", "pairs"):
        out.append(Row(f"cifar-test-{kind[:4]}30",
                       DatasetOptions(test, inject_noise=0.3, seed=0, noise_kind=kind), r56,
                       f"held out: CIFAR-10 test split, 30% {kind}, ResNet-56 features of "
                       f"unseen images"))
    lite = FeatureOptions(model="efficientnet-lite0")
    out.append(Row("lite-cifar10n", DatasetOptions(
        folder, labels_csv=SHARED / "cifar10n-train-labels.csv", label_column="aggre_label",
        true_label_column="clean_label"), lite, "CIFAR-10N aggre (9.0% human), EfficientNet-Lite0"))
    for kind in ("pairs", "symmetric"):
        out.append(Row(f"lite-{kind[:4]}40", DatasetOptions(folder, inject_noise=0.4, seed=0,
                                                             noise_kind=kind), lite,
                       f"CIFAR-10, 40% {kind}, EfficientNet-Lite0"))
    out.append(Row("lite-test-pair30", DatasetOptions(test, inject_noise=0.3, seed=0,
                                                      noise_kind="pairs"), lite,
                   "CIFAR-10 test split, 30% pairs, EfficientNet-Lite0"))
    out += mini_rows()
    sub, labels = cifar_subset(root, SCRATCH_PER_CLASS)
    out.append(Row("cifar10n-scratch", DatasetOptions(
        parse_spec(f"folder:{sub}"), labels_csv=labels, label_column="aggre_label",
        true_label_column="clean_label"),
        FeatureOptions(model="cifar-resnet20", finetune_epochs=SCRATCH_EPOCHS),
        f"CIFAR-10N aggre, 10k stratified, ResNet-20 trained from scratch on the noisy "
        f"labels ({SCRATCH_EPOCHS} epochs)"))
    return out


def mini_rows() -> list[Row]:
    """The rows on ``cifar10-mini``'s 2,000 train images: the default backbone's (the
    regression guard's detection row, bench/regression_guard.py) and the weak features'."""
    mini = parse_spec(f"folder:{cifar_mini_folder()}")
    out = [Row("lite-mini-pair40", DatasetOptions(mini, inject_noise=0.4, seed=0,
                                                  noise_kind="pairs"),
               FeatureOptions(model="efficientnet-lite0"),
               "cifar10-mini train, 40% pairs, EfficientNet-Lite0 (the default backbone)")]
    for name, model in (("mini-pixels", "pixels"), ("mini-random", "resnet18")):
        out.append(Row(name, DatasetOptions(mini, inject_noise=0.2, seed=0),
                       FeatureOptions(model=model),
                       f"cifar10-mini train, 20% symmetric, {model} (weak features)"))
    return out


def score_row(row: Row, runs: Path) -> dict:
    run = RunDir(runs / f"bench-{row.name}")
    pipeline_s, samples, decisions, noisy = run_row(row, run)
    inputs = load_rule_inputs(run)
    scores = {"adaptive": load_evidence(run)["score"], "dbscan-knn": 1.0 - inputs.agreement,
              "dbscan": None}
    methods: dict[str, tuple[np.ndarray, np.ndarray | None]] = {
        f"ours: {rule}": (decide(decisions.clusters, inputs, {}, rule).flagged, scores[rule])
        for rule in RULES}
    feats = run.load_features()
    for clf in ("logreg", "knn"):
        for pca in (True, False):
            name = f"cleanlab {'LR' if clf == 'logreg' else '10-NN'}, {'PCA-50' if pca else 'raw'}"
            methods[name] = cleanlab_peer(feats, samples.labels, clf, pca)
    methods["SimiFeat vote"] = simifeat_vote(feats, samples.labels, len(samples.classes))
    gauge = run_gauge(run)
    result = {"row": row.name, "note": row.note, "n": len(samples),
              "gauge": gauge.value, "gauge_level": gauge.level,
              "noise_pct": round(100 * float(noisy.mean()), 2), "pipeline_s": round(pipeline_s),
              "methods": {}}
    for name, (flags, score) in methods.items():
        s = detection_scores(flags, noisy)
        s["auroc"] = None if score is None else auroc(score, noisy)
        result["methods"][name] = s
    ours = result["methods"][f"ours: {DEFAULT_RULE}"]["f1"]
    best = max(v["f1"] for k, v in result["methods"].items() if not k.startswith("ours"))
    result["ratio"] = round(ours / best, 3) if best else None
    return result


def format_row(r: dict) -> str:
    lines = [f"\n## {r['row']}: {r['note']} ({r['n']} samples, {r['noise_pct']}% wrong; "
             f"pipeline {r['pipeline_s']} s, or reused)",
             f"feature-quality gauge {r['gauge']:.3f} ({r['gauge_level']})",
             "| method | precision | recall | F1 | AUROC |", "|---|---:|---:|---:|---:|"]
    for name, s in r["methods"].items():
        au = "—" if s["auroc"] is None else f"{s['auroc']:.3f}"
        lines.append(f"| {name} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} "
                     f"| {au} |")
    lines.append(f"ratio_{r['row']}={r['ratio']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--skip-cifar", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated row names")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    print(f"# noise detection grid, automatic eps, default rule {DEFAULT_RULE} · {machine()}")
    results = []
    for row in rows(args.skip_cifar and not (only - {"digits-sym10", "digits-sym20",
                                                     "digits-sym40"})):
        if only and row.name not in only:
            continue
        results.append(score_row(row, args.runs))
        print(format_row(results[-1]), flush=True)
    if len(results) > 2:
        print(format_gauge(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


def format_gauge(results: list[dict]) -> str:
    """The gauge beside our F1 on every row, and their Spearman rank correlation."""
    from scipy.stats import spearmanr

    f1 = [r["methods"][f"ours: {DEFAULT_RULE}"]["f1"] for r in results]
    lines = ["\n## feature-quality gauge against F1", "| row | gauge | verdict | F1 ours |",
             "|---|---:|---|---:|"]
    lines += [f"| {r['row']} | {r['gauge']:.3f} | {r['gauge_level']} | {f:.3f} |"
              for r, f in zip(results, f1, strict=True)]
    rho = spearmanr([r["gauge"] for r in results], f1).statistic
    lines.append(f"gauge_spearman={rho:.3f}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
