"""The paper's grid in one command: full, filtered and random over global batch sizes and
seeds, each with the same optimizer steps, ``--optimizer auto`` (LARS from 4,096, SGD
below), and a convergence-aware verdict per batch size (issue 47, item 3).

    PYTHONPATH=. .venv/bin/python -m bench.paper_grid [--size toy|cpu|gpu] [--out DIR]

Sizes (each a real ``curator pipeline`` then ``curator experiment``, as a user runs them):

- ``toy`` (CI's time on 2 cores, a few minutes): CIFAR-10's first 60 train images per
  class (600) with 40% injected pairs noise, CIFAR ResNet-20, batch sizes 32, 64, 128, 2
  epochs of full's steps, 1 seed. Checks that the grid runs end to end; its accuracies
  mean nothing.
- ``cpu``: 1,000 per class (10,000), ResNet-20, 40% pairs noise, batch sizes 128, 256,
  512, 1024, 3 seeds, 30 epochs of full's steps: the size this machine can hold.
- ``gpu``: CIFAR-10's 50,000 with 40% pairs noise, ResNet-18, batch sizes 1024, 2048,
  4096, 8192, 3 seeds, 60 epochs of full's steps (the issue's grid; needs a GPU host).

The experiment's tables are in ``OUT/<size>/run/experiments/grid``; this script prints the
verdict report and the wall time. Features: the default backbone (EfficientNet-Lite0,
ImageNet-pretrained: it never saw CIFAR's labels).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

from bench.common import (
    ROOT,
    cifar_folder,
    cifar_mini_folder,
    cifar_subset,
    curator_pipeline,
    machine,
)

SIZES = {
    "toy": {"per_class": 60, "model": "cifar-resnet20", "batches": "32,64,128", "epochs": 2,
            "seeds": 1},
    "cpu": {"per_class": 1000, "model": "cifar-resnet20", "batches": "128,256,512,1024",
            "epochs": 30, "seeds": 3},
    "gpu": {"per_class": 5000, "model": "resnet18", "batches": "1024,2048,4096,8192",
            "epochs": 60, "seeds": 3},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=SIZES, default="toy")
    ap.add_argument("--out", type=Path, default=Path("/tmp/paper_grid"))
    a = ap.parse_args()
    size = SIZES[a.size]
    print(machine(), f"· size {a.size}", flush=True)
    data = (cifar_mini_folder if size["per_class"] <= 200 else cifar_folder)(a.out / "data")
    folder, _ = cifar_subset(data, size["per_class"], 100 if a.size == "toy" else None)
    run = a.out / a.size / "run"
    t0 = time.perf_counter()
    curator_pipeline(run, f"folder:{folder}", "--inject-noise", "0.4", "--noise-kind",
                     "pairs")
    cmd = [str(ROOT / ".venv" / "bin" / "curator"), "experiment", str(run), "--name", "grid",
           "--subsets", "full,filtered,random", "--batch-sizes", size["batches"],
           "--seeds", str(size["seeds"]), "--epochs", str(size["epochs"]),
           "--optimizer", "auto", "--model", size["model"]]
    print("  $ " + " ".join(cmd), flush=True)
    env = {**os.environ, "OPENBLAS_CORETYPE": "Haswell", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    print(done.stdout[-6000:], flush=True)
    if done.returncode:
        raise SystemExit(f"curator experiment failed: {done.stderr[-2000:]}")
    print(f"wall: {time.perf_counter() - t0:.0f} s (pipeline included)")


if __name__ == "__main__":
    main()
