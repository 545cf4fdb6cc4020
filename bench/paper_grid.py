"""The paper's grid in one command: full, filtered and random over global batch sizes and
seeds, each with the same optimizer steps, ``--optimizer auto`` (LARS from 4,096, SGD
below), and a convergence-aware verdict per batch size (issue 47, item 3).

    PYTHONPATH=. .venv/bin/python -m bench.paper_grid [--size toy|cpu|gpu] [--out DIR]
        [--seeds N] [--parallel K] [--prune F] [--prune-first] [--deadline S]
        [--compile MODE]

Sizes (each a real ``curator pipeline`` then ``curator experiment``, as a user runs them):

- ``toy`` (CI's time on 2 cores, a few minutes): CIFAR-10's first 60 train images per
  class (600) with 40% injected pairs noise, CIFAR ResNet-20, batch sizes 32, 64, 128, 2
  epochs of full's steps, 1 seed. Checks that the grid runs end to end; its accuracies
  mean nothing.
- ``cpu``: 500 per class (5,000) with 40% pairs noise, the first 300 test images of each
  class (3,000), ResNet-20, batch sizes 64, 128, 256, 512, 1 seed, 20 epochs of full's
  steps: the size one session of this 2-core machine holds (about an hour; ``--seeds 3``
  triples it). The first size planned, 10,000 images at 3 seeds and 30 epochs, was 36
  trainings of about 11 minutes each: 6.5 hours, which no session holds.
- ``gpu``: CIFAR-10's 50,000 with 40% pairs noise, ResNet-18, batch sizes 1024, 2048,
  4096, 8192, 3 seeds, 60 epochs of full's steps (the issue's grid; needs a GPU host).

The experiment's tables are in ``OUT/<size>/run/experiments/grid``; this script prints the
verdict report and the wall time. ``--parallel K`` trains K at once: the first training
then runs alone first, and the grid's images per second together are printed against it
(on one H200, four ResNet-18 trainings at once: 1.02x; docs/benchmarks.md). ``--prune F``
(the ``gpu`` size's default 0.5) adds ``full,pruned@F,random@F`` at the smallest batch
size (item 5's GPU target: pruned@0.5 within 1 pp of full). ``--deadline S``: nothing starts after S
seconds and a running experiment is stopped there, its finished trainings printed (a GPU
lease is short). ``--compile MODE`` (a torch.compile mode, issue 47's item 4): one
training of full at the smallest batch size eager and then compiled, their rates printed
(overall, compile included, and per epoch after the first), and the grid trains compiled
when that was faster overall. Without a venv (a GPU host) it runs ``python -m
worker.cli``. Features: the default backbone (EfficientNet-Lite0, ImageNet-pretrained: it
never saw CIFAR's labels).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import time
from pathlib import Path

from bench.common import (
    ROOT,
    bench_env,
    cifar_folder,
    cifar_mini_folder,
    cifar_subset,
    curator_cmd,
    curator_pipeline,
    machine,
)
from worker.pipeline.choices import COMPILE_MODES

SIZES = {
    "toy": {"per_class": 60, "test_per_class": 100, "model": "cifar-resnet20",
            "batches": "32,64,128", "epochs": 2, "seeds": 1, "prune": None},
    "cpu": {"per_class": 500, "test_per_class": 300, "model": "cifar-resnet20",
            "batches": "64,128,256,512", "epochs": 20, "seeds": 1, "prune": None},
    "gpu": {"per_class": 5000, "model": "resnet18", "batches": "1024,2048,4096,8192",
            "epochs": 60, "seeds": 3, "prune": 0.5},
}
# The issue's grid, for the time it would take at the measured rate: 4 subsets (full,
# filtered, corrected, random) × 4 batch sizes × 3 seeds.
ISSUE_GRID = 48


class Clock:
    """Seconds since the start, and what is left before the deadline (None: no deadline)."""

    def __init__(self, deadline: float | None) -> None:
        self.t0, self.deadline = time.perf_counter(), deadline

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - (time.perf_counter() - self.t0)


def experiment(run: Path, name: str, subsets: str, batches: str, size: dict, seeds: int,
               parallel: int, clock: Clock, compile_mode: str = "off",
               must: bool = True) -> tuple[list[dict], float]:
    """``curator experiment`` as a user runs it; its verdict report printed. Returns its
    ``results.csv`` rows (those finished, when the deadline stopped it) and its wall time.
    A failure ends the bench, unless not ``must`` (then it is printed and no rows come)."""
    cmd = [*curator_cmd(), "experiment", str(run), "--name", name, "--subsets", subsets,
           "--batch-sizes", batches, "--seeds", str(seeds), "--epochs", str(size["epochs"]),
           "--optimizer", "auto", "--model", size["model"], "--parallel", str(parallel),
           "--compile", compile_mode]
    left = clock.left()
    if left is not None and left <= 0:
        print(f"  {name}: not started, the deadline has passed", flush=True)
        return [], 0.0
    print("  $ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=bench_env(), capture_output=True, text=True,
                              timeout=left)
        print(done.stdout[-6000:], flush=True)
        if done.returncode:
            if must:
                raise SystemExit(f"curator experiment failed: {done.stderr[-2000:]}")
            print(f"  {name} failed: {done.stderr[-2000:]}", flush=True)
            return [], time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        print(f"  stopped at the deadline after {time.perf_counter() - t0:.0f} s", flush=True)
    wall = time.perf_counter() - t0
    path = run / "experiments" / name / "results.csv"
    rows = []
    if path.is_file():
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    for r in rows:
        print(f"  {r['subset']:>11} batch {r['batch_size']:>5} seed {r['seed']}: "
              f"{100 * float(r['final_test_acc']):.2f}% in {float(r['seconds']):.0f} s, "
              f"{float(r['images_per_s']):,.0f} img/s, converged {r['converged']}", flush=True)
    return rows, wall


def images(row: dict) -> int:
    """Training images a row's training processed (its steps × its global batch)."""
    return int(row["steps"]) * int(row["batch_size"])


def epoch_rate(run: Path, row: dict) -> tuple[float, float]:
    """(median images per second of the epochs after the first, the first epoch's seconds
    beyond that median): the steady rate, and what compiling added to the first epoch."""
    lines = (run / row["train_dir"] / "metrics.jsonl").read_text().splitlines()
    epochs = [json.loads(ln) for ln in lines]
    later = epochs[1:] or epochs
    rate = statistics.median(e["images_per_s"] for e in later)
    typical = statistics.median(e["epoch_seconds"] for e in later)
    return rate, epochs[0]["epoch_seconds"] - typical


def compiled_or_eager(run: Path, mode: str, smallest: str, size: dict,
                      clock: Clock) -> tuple[str, dict | None]:
    """One training of full at ``smallest``, eager then compiled with ``mode``; the rates
    printed. Returns the mode the grid should use (``mode`` when faster overall, compile
    included) and the eager row (None when it did not finish)."""
    eager, _ = experiment(run, "alone", "full", smallest, size, 1, 1, clock)
    if mode == "off" or not eager:
        return "off", eager[0] if eager else None
    compiled, _ = experiment(run, f"alone-{mode}", "full", smallest, size, 1, 1, clock,
                             mode, must=False)
    if not compiled:
        print(f"compile {mode}: no finished training: the grid runs eager", flush=True)
        return "off", eager[0]
    (e_rate, _), (c_rate, extra) = (epoch_rate(run, r[0]) for r in (eager, compiled))
    overall = float(compiled[0]["images_per_s"]) / float(eager[0]["images_per_s"])
    print(f"compile {mode}: {overall:.2f}x eager overall (compile included), "
          f"{c_rate / e_rate:.2f}x per epoch after the first ({c_rate:,.0f} against "
          f"{e_rate:,.0f} img/s); the first epoch {extra:.1f} s longer", flush=True)
    return (mode if overall > 1 else "off"), eager[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=SIZES, default="toy")
    ap.add_argument("--out", type=Path, default=Path("/tmp/paper_grid"))
    ap.add_argument("--seeds", type=int, help="default: the size's")
    ap.add_argument("--parallel", type=int, default=1, help="trainings at once")
    ap.add_argument("--prune", type=float, help="also full,pruned@F,random@F (gpu: 0.5)")
    ap.add_argument("--deadline", type=float, help="seconds: start nothing after them")
    ap.add_argument("--prune-first", action="store_true",
                    help="the pruning comparison before the grid (a lease that must have it)")
    ap.add_argument("--compile", default="off", choices=COMPILE_MODES,
                    help="a torch.compile mode to measure against eager first; the grid "
                    "uses it when faster")
    a = ap.parse_args()
    size = SIZES[a.size]
    seeds = a.seeds or size["seeds"]
    prune = a.prune if a.prune is not None else size["prune"]
    clock = Clock(a.deadline)
    print(machine(), f"· size {a.size} · {seeds} seed(s) · parallel {a.parallel}", flush=True)
    data = (cifar_mini_folder if size["per_class"] <= 200 else cifar_folder)(a.out / "data")
    folder, _ = cifar_subset(data, size["per_class"], size.get("test_per_class"))
    run = a.out / a.size / "run"
    curator_pipeline(run, f"folder:{folder}", "--inject-noise", "0.4", "--noise-kind",
                     "pairs")
    print(f"pipeline: {time.perf_counter() - clock.t0:.0f} s", flush=True)
    smallest = size["batches"].split(",")[0]

    def pruning() -> None:
        if prune is not None and (clock.left() is None or clock.left() > 30):
            experiment(run, "prune", f"full,pruned@{prune},random@{prune}", smallest, size,
                       seeds, a.parallel, clock)

    if a.prune_first:
        pruning()
    alone, mode = None, "off"
    if a.parallel > 1 or a.compile != "off":  # one training on its own, for the ratios
        mode, alone = compiled_or_eager(run, a.compile, smallest, size, clock)
    # Only trainings begun by this call count for its rate: a reused or resumed one
    # (an earlier call's) did all or part of its work before.
    before = {p.name for p in (run / "train").iterdir()} if (run / "train").is_dir() else set()
    rows, wall = experiment(run, "grid", "full,filtered,random", size["batches"], size, seeds,
                            a.parallel, clock, mode)
    new = [r for r in rows if Path(r["train_dir"]).name not in before]
    if new:
        rate = sum(images(r) for r in new) / wall
        line = (f"grid: {len(new)} trainings in {wall:.0f} s, {a.parallel} at once, "
                f"compile {mode}: "
                f"{rate:,.0f} img/s together")
        if alone is not None and a.parallel > 1:
            line += (f"; one alone {float(alone['images_per_s']):,.0f} img/s: "
                     f"{rate / float(alone['images_per_s']):.2f}x")
        per = sum(images(r) for r in new) / len(new)
        print(line + f"; the issue's {ISSUE_GRID} trainings at this rate: "
              f"{ISSUE_GRID * per / rate / 60:.1f} min", flush=True)
    if not a.prune_first:
        pruning()
    print(f"wall: {time.perf_counter() - clock.t0:.0f} s (pipeline included)")


if __name__ == "__main__":
    main()
