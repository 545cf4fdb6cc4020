"""Pruning by value on real images with real label noise (issue 47, item 5): ``pruned@F``
against ``random@F``, the same size at random, over seeds.

Two disjoint stratified sets of the shared CIFAR-10 JPEGs, both with CIFAR-10N's
``aggre_label`` (human labels, 9% wrong), both flagged on the default backbone
(EfficientNet-Lite0 with ImageNet weights: it never saw a CIFAR label), scored on the
same 2,000 clean test images (200 per class):

- ``choose``: 5,000 train images (images 1,000–1,499 of each class), one seed: each method
  (``pruned-coverage@F``, ``pruned-easy@F``, ``pruned-hard@F``) at F = 0.5 and 0.3 beside
  ``random@F``. The method with the largest mean gain over ``random@F`` is the one
  ``pruned@F`` should use (worker/pipeline/choices.py ``DEFAULT_PRUNING``; the bench says
  when it differs);
- ``report``: 10,000 train images (the first 1,000 of each class), SEEDS seeds:
  ``pruned@0.5``, ``random@0.5``, ``pruned@0.3``, ``random@0.3`` (and ``full`` with
  ``--full``) with the method ``choose`` found (with ``--part both``; else ``--method``,
  by default the default). Target: pruned ≥ random + 1 pp at p < 0.05 at both fractions.

Every model is a CIFAR ResNet-20 from random initialisation, with the batch and epochs
the planner chooses from the full set's size, under the steps budget (every subset the
same optimizer steps), as ``curator experiment`` runs it. It also prints what choosing a
pruned subset cost (scoring every kept sample) against one full training: target ≤ 5%.

    python -m bench.pruning [--part choose|report|both] [--method M] [--seeds 3] [--full]
                            [--json F]

A benchmark, not a test: on 2 cores a training takes 4–6 minutes, so about 40 minutes for
``choose`` and an hour for ``report`` (75 with ``--full``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from bench.common import Row, cifar_folder, cifar_subset, machine, run_row
from worker.pipeline.choices import DEFAULT_PRUNING, PRUNINGS
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir
from worker.train.config import TrainConfig
from worker.train.experiment import read_results, run_experiment, verdict_report
from worker.train.subsets import subset_name
from worker.train.verdict import compare

MODEL = "cifar-resnet20"
TEST_PER_CLASS = 200
FRACTIONS = (0.5, 0.3)
# (name, train images per class, offset into each class, seeds): disjoint sets
SETS = {"choose": (500, 1000, 1), "report": (1000, 0, None)}


def _row(name: str, per_class: int, offset: int) -> Row:
    folder, labels = cifar_subset(cifar_folder(), per_class, TEST_PER_CLASS, offset)
    ds = DatasetOptions(parse_spec(f"folder:{folder}"), labels_csv=labels,
                        label_column="aggre_label", true_label_column="clean_label")
    return Row(f"prune-{name}", ds, FeatureOptions(model="efficientnet-lite0"),
               f"CIFAR-10N aggre labels, {10 * per_class:,} train images; flagged on "
               "EfficientNet-Lite0 (ImageNet) features")


def subsets_of(part: str, method: str, full: bool = False) -> list[str]:
    """The subsets of ``part``; ``report`` prunes with ``method``, and trains ``full`` too
    when asked (the CPU target compares pruned with random only)."""
    if part == "choose":
        return [f"{head}@{f:g}" for f in FRACTIONS
                for head in (*(f"pruned-{m}" for m in PRUNINGS), "random")]
    return [*(["full"] if full else []), *(subset_name(f"{head}@{f:g}") for f in FRACTIONS
                                            for head in (f"pruned-{method}", "random"))]


def run_part(part: str, runs: Path, seeds: int, method: str = DEFAULT_PRUNING,
             full: bool = False) -> dict:
    per_class, offset, fixed_seeds = SETS[part]
    row = _row(part, per_class, offset)
    run = RunDir(runs / f"bench-{row.name}")
    pipeline_s, samples, decisions, noisy = run_row(row, run)
    n_seeds = fixed_seeds or seeds
    configs = [TrainConfig(subset=s, model=MODEL, seed=seed, nproc=1)
               for seed in range(n_seeds) for s in subsets_of(part, method, full)]  # seed-major
    t = time.perf_counter()
    out = run_experiment(run, part, configs)
    train_s = time.perf_counter() - t
    rows = read_results(out)
    results = compare(rows)
    pruned = [float(r["subset_seconds"]) for r in rows if r["subset"].startswith("pruned")]
    # one training of the full set under the steps budget: the same steps as any subset's
    trainings = [float(r["seconds"]) for r in rows]
    return {"part": part, "note": row.note, "n": len(samples), "seeds": n_seeds,
            "noise_pct": round(100 * float(noisy.mean()), 2),
            "dropped": int((~decisions.kept).sum()), "pipeline_s": round(pipeline_s),
            "train_s": round(train_s), "batch_size": int(rows[0]["batch_size"]),
            "epochs": {r["subset"]: int(r["epochs"]) for r in rows},
            "scoring_s": statistics.mean(pruned), "training_s": statistics.mean(trainings),
            "report": verdict_report(out),
            "table": [{"subset": r.subset, "images": r.images, "seeds": len(r.accs),
                       "mean": r.mean, "sd": r.sd, "converged": r.converged,
                       "vs_full": r.vs_full and r.vs_full.__dict__,
                       "vs_random": r.vs_random and r.vs_random.__dict__}
                      for r in results]}


def best_method(result: dict) -> tuple[str, dict[str, float]]:
    """The method with the largest mean gain over random@F across the fractions."""
    gains: dict[str, list[float]] = {m: [] for m in PRUNINGS}
    for r in result["table"]:
        head = r["subset"].partition("@")[0]
        if head.startswith("pruned-") and r["vs_random"]:
            gains[head.removeprefix("pruned-")].append(r["vs_random"]["diff"])
    means = {m: 100 * statistics.mean(g) for m, g in gains.items() if g}
    return max(means, key=means.get), means


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--part", choices=("choose", "report", "both"), default="both")
    ap.add_argument("--seeds", type=int, default=3, help="seeds of the report part")
    ap.add_argument("--full", action="store_true", help="train full in the report part too")
    ap.add_argument("--method", choices=PRUNINGS, default=DEFAULT_PRUNING,
                    help="the method the report part prunes with (with --part report)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args()
    print(f"# pruned@F vs random@F, {MODEL} from scratch, {TEST_PER_CLASS}/class clean test "
          f"· {machine()}", flush=True)
    out, method = [], a.method
    for part in (("choose", "report") if a.part == "both" else (a.part,)):
        r = run_part(part, a.runs, a.seeds, method, a.full)
        print(f"\n## {part}: {r['note']}\n{r['n']} images, {r['noise_pct']}% wrong labels, "
              f"{r['dropped']} dropped by the curation; batch {r['batch_size']}; pipeline "
              f"{r['pipeline_s']} s, trainings {r['train_s']} s\n{r['report']}", flush=True)
        ratio = r["scoring_s"] / r["training_s"]
        print(f"scoring_ratio={ratio:.4f} (choosing a pruned subset {r['scoring_s']:.2f} s, "
              f"one training {r['training_s']:.0f} s; target ≤ 0.05)", flush=True)
        if part == "choose":
            method, means = best_method(r)
            r["best"], r["gains_pp"] = method, means
            print("mean gain over random@F, pp: " + ", ".join(
                f"{m} {g:+.2f}" for m, g in means.items()) + f" → {method}"
                + ("" if method == DEFAULT_PRUNING else
                   f" (pruned@F uses {DEFAULT_PRUNING}: set DEFAULT_PRUNING)"), flush=True)
        out.append(r)
        if a.json:
            a.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
