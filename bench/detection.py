"""Noise-detection F1: our rules (automatic eps, no tuning on truth) against cleanlab.

Datasets:
- digits with 10% injected symmetric noise, standardised pixels;
- CIFAR-10 train JPEGs with the CIFAR-10N ``aggre_label`` (9% wrong), ResNet-56 features.

Runs (or reuses) the pipeline for each under ``--runs``, then prints precision, recall and
F1 for both rules and both cleanlab classifiers, and one ``f1_ratio_<dataset>=`` line
(our default rule's F1 / cleanlab's best F1) per dataset.

    python -m bench.detection [--runs runs] [--skip-cifar]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.common import SHARED, cifar_folder, machine
from worker.pipeline.clustering import DEFAULT_RULE
from worker.pipeline.datasets import parse_spec
from worker.pipeline.embedding import EmbeddingOptions
from worker.pipeline.evaluation import evaluate, format_report
from worker.pipeline.features import FeatureOptions
from worker.pipeline.ingest import DatasetOptions
from worker.pipeline.rundir import RunDir
from worker.pipeline.runner import run_pipeline


def score(name: str, run: RunDir, dataset: DatasetOptions, features: FeatureOptions) -> None:
    t = time.perf_counter()
    run_pipeline(run, dataset, features, EmbeddingOptions())
    result = evaluate(run)
    print(f"\n## {name} (pipeline {time.perf_counter() - t:.0f} s, or reused)")
    print(format_report(result))
    best = max(s["f1"] for s in result["cleanlab"].values())
    print(f"f1_ratio_{name}={result['rules'][DEFAULT_RULE]['f1'] / best:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--skip-cifar", action="store_true")
    args = ap.parse_args()
    print(f"# noise detection, automatic eps · {machine()}")
    score("digits", RunDir(args.runs / "bench-digits"),
          DatasetOptions(parse_spec("digits"), inject_noise=0.1, seed=0), FeatureOptions())
    if args.skip_cifar:
        return
    score("cifar10n", RunDir(args.runs / "bench-cifar10n"),
          DatasetOptions(parse_spec(f"folder:{cifar_folder()}"),
                         labels_csv=SHARED / "cifar10n-train-labels.csv",
                         label_column="aggre_label", true_label_column="clean_label"),
          FeatureOptions(model="cifar-resnet56", weights=SHARED / "weights/resnet56-4bfd9763.th"))


if __name__ == "__main__":
    main()
