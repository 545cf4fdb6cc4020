"""What the image-quality kinds add to the findings step, timed on an existing run.

On the run given, the whole findings step (``ensure_findings(run, redo=True)``, what
``curator pipeline`` and ``curator findings --redo`` call: every stored kind computed and
written) and then the eight image-quality kinds alone (``dark`` … ``border``, on a fresh
context, so their pixel statistics are read off the thumbnails again, as the step reads
them once), ``--repeat`` times each, alternating, in one process. Printed: each time, the
least of each, and ``quality_share`` (the kinds' least over the step's least) beside the
worst pairing (the kinds' most over the step's least).

    nice -n 10 .venv/bin/python -m bench.quality_time --run RUN [--repeat 3]

The run's findings are rewritten (the same tables: nothing else changes).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench.common import machine


def quality_kinds() -> list:
    """The registered image-quality kinds, in display order."""
    from worker.pipeline.findings import kinds
    from worker.pipeline.findings.detectors.quality import QualityKind

    return [k for k in kinds() if isinstance(k, QualityKind)]


def time_step(run_path: Path) -> float:
    """Seconds of one whole findings step on the run, every kind computed again."""
    from worker.pipeline.findings import ensure_findings
    from worker.pipeline.storage.rundir import RunDir

    t = time.perf_counter()
    ensure_findings(RunDir(run_path), redo=True)
    return time.perf_counter() - t


def time_quality(run_path: Path) -> float:
    """Seconds of the image-quality kinds alone on a fresh context (the statistics read
    from the thumbnails once, as in the step), with the run's stored cuts."""
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.findings.step import stored_thresholds
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(run_path)
    samples = run.read_samples()  # read before the clock, as the step reads it once
    t = time.perf_counter()
    ctx = FindingContext(run, samples, stored_thresholds(run))
    for kind in quality_kinds():
        kind.compute(ctx)
    return time.perf_counter() - t


def measure(run_path: Path, repeat: int) -> tuple[list[float], list[float]]:
    """(step seconds, quality seconds), ``repeat`` of each, alternating."""
    steps, quality = [], []
    for k in range(repeat):
        steps.append(time_step(run_path))
        quality.append(time_quality(run_path))
        print(f"  round {k + 1}: findings step {steps[-1]:.2f} s, quality kinds "
              f"{quality[-1]:.2f} s", flush=True)
    return steps, quality


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="a run whose pipeline is done")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not (args.run / "run.json").is_file():
        raise SystemExit(f"{args.run}: no run.json: give a run folder")
    from worker.pipeline.storage.rundir import RunDir

    n = len(RunDir(args.run).read_samples())
    print(f"{machine()} · load {os.getloadavg()[0]:.2f} · {n} images · "
          f"{len(quality_kinds())} quality kinds", flush=True)
    steps, quality = measure(args.run, max(args.repeat, 1))
    step, kinds = min(steps), min(quality)
    print(f"findings_step_s={step:.2f} (of {', '.join(f'{s:.2f}' for s in steps)})")
    print(f"quality_kinds_s={kinds:.2f} (of {', '.join(f'{s:.2f}' for s in quality)})")
    print(f"quality_share={kinds / step:.4f} (worst {max(quality) / step:.4f}; "
          f"target <= 0.10: {'met' if kinds / step <= 0.10 else 'not met'})")


if __name__ == "__main__":
    main()
