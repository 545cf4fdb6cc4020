"""Retraining benchmarks on CPU.

1. ``--part experiment``: digits with 20% injected label noise; full vs filtered vs random,
   3 seeds, ResNet-18 (CIFAR stem); prints the comparison table (mean ± std test accuracy
   on a clean, stratified hold-out).
2. ``--part throughput``: CIFAR-10 JPEGs (the shared mini folder: 2,000 train images,
   real test split), ResNet-18, one epoch with 1 and with 2 gloo processes; prints
   images/s per process and ``ddp_scaling=`` (2-process total / 1-process total).
3. ``--part steps``: the same images, CIFAR ResNet-20 (small, so a host sync weighs
   most), 1 and 2 gloo processes; the Trainer's step time when it syncs with the host on
   every step (the stop flag all-reduced, the loss read back: how the loop ran before the
   Trainer) against every ``SYNC_EVERY`` steps; prints ``step_time_ratio=`` (every step /
   every N, per process count; above 1 means the Trainer's way is faster).

    python -m bench.train [--part experiment|throughput|steps|all]
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import SHARED, machine
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.runner import run_pipeline
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir
from worker.train.experiment import run_experiment
from worker.train.launch import TrainConfig, launch, read_metrics
from worker.train.trainer import SYNC_EVERY


def experiment(runs: Path, epochs: int, batch_sizes: list[int]) -> None:
    run = RunDir(runs / "bench-digits-noise20")
    run_pipeline(run, DatasetOptions(parse_spec("digits"), inject_noise=0.2, seed=0),
                 FeatureOptions(), EmbeddingOptions())
    configs = [TrainConfig(subset=s, batch_size=b, seed=seed, epochs=epochs, nproc=1)
               for s in ("full", "filtered", "random") for b in batch_sizes for seed in range(3)]
    out = run_experiment(run, "bench", configs)
    print(f"# digits, 20% injected noise, ResNet-18, {epochs} epochs, 3 seeds · {machine()}")
    for row in csv.DictReader(open(out / "summary.csv")):
        print(f"{row['subset']:<9} batch {row['batch_size']:>5}  test acc "
              f"{100 * float(row['mean_test_acc']):6.2f}% ± {100 * float(row['std_test_acc']):.2f}"
              f"  (n={row['n']})")
    sizes = {r["subset"]: r["train_size"] for r in csv.DictReader(open(out / "results.csv"))}
    print(f"train sizes: {sizes}; table: {out / 'summary.csv'}")


@contextmanager
def cifar_mini(runs: Path) -> Iterator[RunDir]:
    """The shared 2,000-image CIFAR-10 JPEG folder as a run; its trainings removed after."""
    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    run = RunDir(runs / "bench-cifar-mini")
    try:
        with tarfile.open(SHARED / "cifar10-jpeg-mini.tar.gz") as tar:
            tar.extractall(work, filter="data")
        run_pipeline(run, DatasetOptions(parse_spec(f"folder:{work / 'cifar10-mini'}")),
                     FeatureOptions(), EmbeddingOptions())
        yield run
    finally:
        shutil.rmtree(run.path / "train", ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def throughput(runs: Path) -> None:
    with cifar_mini(runs) as run:
        per_proc = {}
        for n in (1, 2):
            s = launch(run, TrainConfig(subset="full", epochs=1, batch_size=128, nproc=n,
                                        name=f"throughput-{n}", warmup_epochs=0))
            per_proc[n] = s["images_per_s_per_process"]
        print(f"# CIFAR-10 JPEG mini (2,000 train), ResNet-18, CPU gloo · {machine()}")
        for n, v in per_proc.items():
            print(f"nproc={n}: {v:7.1f} images/s per process, {n * v:7.1f} total")
        print(f"ddp_scaling={2 * per_proc[2] / per_proc[1]:.2f}")


def step_times(runs: Path, epochs: int = 3) -> None:
    """Median step time (epoch seconds / steps, epochs after the first) with a host sync
    on every step and every SYNC_EVERY steps, interleaved, for 1 and 2 processes."""
    print(f"# CIFAR-10 JPEG mini (2,000 train), CIFAR ResNet-20, batch 128, CPU gloo, "
          f"{epochs} epochs each · {machine()}")
    with cifar_mini(runs) as run:
        for nproc in (1, 2):
            ms = {}
            for every in (1, SYNC_EVERY):
                s = launch(run, TrainConfig(subset="full", model="cifar-resnet20",
                                            epochs=epochs, batch_size=128, nproc=nproc,
                                            warmup_epochs=0, extra={"sync_every": every},
                                            name=f"steps-{nproc}-{every}"))
                rows = read_metrics(run.path / "train" / f"steps-{nproc}-{every}")
                ms[every] = 1000 * statistics.median(
                    r["epoch_seconds"] for r in rows[1:]) / s["steps_per_epoch"]
                print(f"nproc={nproc} sync every {every:>2} steps: {ms[every]:6.1f} ms/step")
            print(f"step_time_ratio(nproc={nproc})={ms[1] / ms[SYNC_EVERY]:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", default="all",
                    choices=["all", "experiment", "throughput", "steps"])
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-sizes", default="64,256")
    args = ap.parse_args()
    if args.part in ("all", "throughput"):
        throughput(args.runs)
    if args.part in ("all", "steps"):
        step_times(args.runs)
    if args.part in ("all", "experiment"):
        experiment(args.runs, args.epochs, [int(b) for b in args.batch_sizes.split(",")])


if __name__ == "__main__":
    main()
