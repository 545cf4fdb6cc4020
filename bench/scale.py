"""The scale path: synthetic class-structured features (bench/synth.py) through the
pipeline as ``--dataset features:``, one step per ``curator`` subprocess, with each step's
wall time and peak resident memory (the child's ``ru_maxrss``). The findings step runs
every finding kind (near-duplicates by feature distance: a features run has no pixels;
outliers; no test split, so no leaks).

The memory figure is printed as a ratio against two baselines computed in the same run:
the budget (12 GB for 1,281,167 × 512) and the size of the features as float32 (what any
step that loaded them whole, in float32, would hold at least).

    python -m bench.scale                      # 1,281,167 × 512, 1,000 classes (hours)
    python -m bench.scale --n 100000 --classes 100
    python -m bench.scale --n 100000 --ui      # also bench/ui_latency.py on the run
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import machine
from bench.synth import SynthSpec, write_synthetic

CURATOR = str(Path(sys.executable).parent / "curator")
BUDGET_GB = 12.0


@dataclass
class Step:
    name: str
    seconds: float
    peak_gb: float


def run_step(name: str, args: list[str]) -> Step:
    """One ``curator`` command in a child process: its wall time and peak RSS."""
    env = {**os.environ, "CURATOR_BROKER_URL": ""}  # jobs on threads, in this child
    # stderr (progress bars) to a file: a pipe nobody reads would block the child when full.
    with tempfile.TemporaryFile("w+") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([CURATOR, *args], env=env, stdout=subprocess.DEVNULL,
                                stderr=log, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        log.seek(0)
        err = log.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"curator {' '.join(args)} failed:\n{err[-2000:]}")
    return Step(name, seconds, usage.ru_maxrss / 2**20)  # ru_maxrss is in KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=SynthSpec.n)
    ap.add_argument("--classes", type=int, default=SynthSpec.classes)
    ap.add_argument("--dim", type=int, default=SynthSpec.dim)
    ap.add_argument("--flip", type=float, default=SynthSpec.flip)
    ap.add_argument("--class-offset", type=float,
                    help="default: 0.2 up to 100 classes, 0.5 above (see bench/synth.py)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/curator-scale"))
    ap.add_argument("--ui", action="store_true", help="also run bench/ui_latency.py on it")
    ap.add_argument("--keep", action="store_true", help="keep the run for later benchmarks")
    args = ap.parse_args()
    offset = args.class_offset or (0.2 if args.classes <= 100 else 0.5)
    spec = SynthSpec(n=args.n, classes=args.classes, dim=args.dim, flip=args.flip,
                     class_offset=offset)
    tag = f"{spec.n}x{spec.dim}-c{spec.classes}-o{offset:g}"
    t0 = time.perf_counter()
    feats, labels = write_synthetic(args.work / f"data-{tag}", spec)
    made = time.perf_counter() - t0
    run = args.work / f"run-{tag}"
    shutil.rmtree(run, ignore_errors=True)
    dataset = ["--dataset", f"features:{feats}", "--labels", str(labels),
               "--true-label-column", "true_label"]
    print(f"# scale: {spec.n:,} x {spec.dim} features ({spec.dtype}), {spec.classes} classes, "
          f"{spec.flip:.0%} flipped · {machine()}", flush=True)
    print(f"synthetic input written in {made:.1f} s (reused when present)", flush=True)
    steps: list[Step] = []
    for name, step_args in (
            ("ingest + copy features", ["extract", *dataset, "--out", str(run)]),
            ("embed (PCA + t-SNE)", ["embed", str(run)]),
            ("cluster (evidence + DBSCAN)", ["cluster", str(run)]),
            ("findings (every kind)", ["findings", str(run), "--top", "0"]),
            ("export (csv manifest)", ["export", str(run), "--dest", "bench"])):
        steps.append(run_step(name, step_args))
        s = steps[-1]  # printed as it finishes: the 1.28M run takes hours
        print(f"{s.name:<30} {s.seconds:8.1f} s   peak RSS {s.peak_gb:6.2f} GB", flush=True)
    evaluation = subprocess.run([CURATOR, "evaluate", str(run), "--json", "--no-cleanlab"],
                                capture_output=True, text=True, check=True)
    current = json.loads(evaluation.stdout)["current"]

    f32_gb = spec.n * spec.dim * 4 / 2**30
    budget = BUDGET_GB * spec.n / SynthSpec.n if spec.n < SynthSpec.n else BUDGET_GB
    peak = max(s.peak_gb for s in steps)
    print(f"total {sum(s.seconds for s in steps):.1f} s; flags vs the flipped rows: "
          f"precision {current['precision']:.3f} recall {current['recall']:.3f} "
          f"F1 {current['f1']:.3f}")
    print(f"peak RSS / features as float32 ({f32_gb:.2f} GB): {peak / f32_gb:.2f}x")
    print(f"peak RSS / budget ({budget:.2f} GB, 12 GB scaled to N): {peak / budget:.2f}x")
    print(f"peak_gb={peak:.2f}")
    if args.ui:
        # Above 100 classes the classes are compact (offset 0.5): the default eps range
        # moves no counts there, and the bench times the repaint up to the counts.
        compact = ["--eps-range", "0.02,0.2"] if args.classes > 100 else []
        subprocess.run([sys.executable, "-m", "bench.ui_latency", "--run", str(run),
                        "--eps-changes", "20", "--switches", "20", "--apply-all", "3",
                        *compact], check=True)
    if not args.keep:
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
