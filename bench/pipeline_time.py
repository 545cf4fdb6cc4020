"""Whole-pipeline time on the 50,000 CIFAR-10N images: this tree against a baseline
revision, measured in the same run.

The baseline is checked out with ``git worktree`` and run with this tree's virtual
environment (``PYTHONPATH`` points at its sources); the two alternate, ``--rounds`` times
each, every run into a fresh ``--out`` so nothing is reused. Prints each time and
``pipeline_ratio=`` (this tree's mean / the baseline's mean).

    python -m bench.pipeline_time [--baseline 36c59fb] [--rounds 2]

The default baseline is the last commit before the adaptive rule (issue 10).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, SHARED, cifar_folder, machine


def pipeline_args(out: Path) -> list[str]:
    return ["pipeline", "--dataset", f"folder:{cifar_folder()}", "--split", "train",
            "--labels", str(SHARED / "cifar10n-train-labels.csv"),
            "--label-column", "aggre_label", "--true-label-column", "clean_label",
            "--model", "cifar-resnet56",
            "--weights", str(SHARED / "weights/resnet56-4bfd9763.th"), "--out", str(out)]


def timed_run(source: Path, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(source), "CURATOR_BROKER_URL": ""}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "worker.cli", *pipeline_args(out)], cwd=source,
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="36c59fb")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(f"# pipeline time, 50,000 CIFAR-10N images, ResNet-56 · {machine()}")
    work = Path(tempfile.mkdtemp(prefix="curator-pipeline-time-"))
    base = work / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", str(base), args.baseline], cwd=ROOT,
                   check=True, capture_output=True)
    times: dict[str, list[float]] = {"baseline": [], "this tree": []}
    try:
        for r in range(args.rounds):
            for name, source in (("baseline", base), ("this tree", ROOT)):
                t = timed_run(source, work / f"{name.replace(' ', '-')}-{r}")
                times[name].append(t)
                print(f"{name} round {r + 1}: {t:.1f} s", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT,
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    mean = {k: sum(v) / len(v) for k, v in times.items()}
    print(f"baseline mean {mean['baseline']:.1f} s · this tree mean {mean['this tree']:.1f} s")
    print(f"pipeline_ratio={mean['this tree'] / mean['baseline']:.3f}")


if __name__ == "__main__":
    main()
