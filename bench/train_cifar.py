"""The paper's comparison on real images with real noise, on CPU: filtered, corrected, full, random.

A stratified subset of the shared CIFAR-10 JPEGs (PER_CLASS train images per class) is
curated with the default rule (automatic eps, no tuning), then ``run_experiment`` (what
``curator experiment`` runs) trains a CIFAR ResNet-20 from random initialisation on the
full set, the filtered set, the corrected set (filtered plus the confident label issues
with their suggested label, worker/train/data.py) and a random subset of the filtered
set's size and class proportions, SEEDS seeds each, with the batch and epochs the default
rule chooses from the subset's size. Every model is scored on the same stratified subset of
the clean CIFAR-10 test split (TEST_PER_CLASS per class).

Rows (which labels, which features chose the filtered subset):
- ``aggre-lite`` and ``pairs40-lite`` (the honest rows, run by default): CIFAR-10N
  ``aggre_label``, and 40% injected pairs noise, flagged on ImageNet-pretrained
  EfficientNet-Lite0 features (the default backbone; it never saw CIFAR labels);
- ``aggre-r56``: CIFAR-10N ``aggre_label`` (human noise), features from the shared
  ResNet-56 weights. Those weights were trained on CIFAR-10's *true* labels, so this row
  flatters filtering;
- ``pairs40-r56``: 40% injected class-dependent noise (cat↔dog, …), ResNet-56 features
  (flattering, as above);
- ``pairs40-scratch``: the same noisy labels, features from a ResNet-20 trained from random
  initialisation on those noisy labels only (``--finetune``): no true label shaped them.

    python -m bench.train_cifar [--runs runs] [--only ROW[,ROW]] [--seeds 3] [--json F]

It is a benchmark, not a test: about 40 minutes a row on 2 cores (12 trainings).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.common import Row, cifar_folder, cifar_subset, machine, resnet56_features, run_row
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.metrics import detection_scores
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir
from worker.train.config import TrainConfig
from worker.train.experiment import read_results, run_experiment, verdict_report
from worker.train.verdict import compare

PER_CLASS = 500
TEST_PER_CLASS = 200
SCRATCH_EPOCHS = 15
MODEL = "cifar-resnet20"
SUBSETS = ("full", "filtered", "corrected", "random")
DEFAULT_ROWS = "pairs40-lite,aggre-lite"


def rows() -> list[Row]:
    folder, labels = cifar_subset(cifar_folder(), PER_CLASS, TEST_PER_CLASS)
    spec = parse_spec(f"folder:{folder}")
    r56 = resnet56_features()
    pairs = DatasetOptions(spec, inject_noise=0.4, seed=0, noise_kind="pairs")
    aggre = DatasetOptions(spec, labels_csv=labels, label_column="aggre_label",
                           true_label_column="clean_label")
    lite = FeatureOptions(model="efficientnet-lite0")
    return [
        Row("aggre-lite", aggre, lite, "CIFAR-10N aggre labels; flagged on EfficientNet-Lite0 "
            "(ImageNet) features"),
        Row("pairs40-lite", pairs, lite, "40% pairs noise; flagged on EfficientNet-Lite0 "
            "(ImageNet) features"),
        Row("aggre-r56", DatasetOptions(spec, labels_csv=labels, label_column="aggre_label",
                                        true_label_column="clean_label"), r56,
            "CIFAR-10N aggre labels; filtered by ResNet-56* features"),
        Row("pairs40-r56", pairs, r56, "40% pairs noise; filtered by ResNet-56* features"),
        Row("pairs40-scratch", pairs,
            FeatureOptions(model=MODEL, finetune_epochs=SCRATCH_EPOCHS),
            f"40% pairs noise; filtered by ResNet-20 features trained from scratch on the "
            f"noisy labels ({SCRATCH_EPOCHS} epochs)"),
    ]


def train_row(row: Row, runs: Path, seeds: int) -> dict:
    run = RunDir(runs / f"bench-train-{row.name}")
    pipeline_s, samples, decisions, noisy = run_row(row, run)
    detection = detection_scores(decisions.flagged, noisy)
    configs = [TrainConfig(subset=s, model=MODEL, seed=seed, nproc=1)
               for seed in range(seeds) for s in SUBSETS]  # seed-major: early rows compare
    t = time.perf_counter()
    out = run_experiment(run, "bench", configs)
    train_s = time.perf_counter() - t
    results = read_results(out)
    return {"row": row.name, "note": row.note, "n": len(samples),
            "noise_pct": round(100 * float(noisy.mean()), 2),
            "flagged": int(decisions.flagged.sum()), "detection": detection,
            "pipeline_s": round(pipeline_s), "train_s": round(train_s),
            "batch_size": int(results[0]["batch_size"]), "epochs": int(results[0]["epochs"]),
            "report": verdict_report(out),
            "table": [{"subset": r.subset, "images": r.images, "seeds": len(r.accs),
                       "mean": r.mean, "sd": r.sd,
                       "vs_full": r.vs_full and r.vs_full.__dict__,
                       "vs_random": r.vs_random and r.vs_random.__dict__}
                      for r in compare(results)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--only", help=f"comma-separated row names (default {DEFAULT_ROWS}; also "
                                   "aggre-r56, pairs40-r56, pairs40-scratch)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args()
    chosen = [r for r in rows() if r.name in (a.only or DEFAULT_ROWS).split(",")]
    print(f"# filtered vs full vs random, {MODEL} from scratch, {PER_CLASS}/class train, "
          f"{TEST_PER_CLASS}/class clean test · {machine()}", flush=True)
    out = []
    for row in chosen:
        r = train_row(row, a.runs, a.seeds)
        d = r["detection"]
        print(f"\n## {r['row']}: {r['note']}\n{r['n']} images, {r['noise_pct']}% wrong labels; "
              f"flagged {r['flagged']} (precision {d['precision']:.3f}, recall {d['recall']:.3f},"
              f" F1 {d['f1']:.3f}); batch {r['batch_size']}, {r['epochs']} epochs; pipeline "
              f"{r['pipeline_s']} s, trainings {r['train_s']} s\n{r['report']}", flush=True)
        out.append(r)
    if a.json:
        a.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
