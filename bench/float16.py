"""Do float16 features cost any accuracy? The same run's features as float32 and as
float16, each through ``curator pipeline --dataset features:``, flags compared.

From an existing run (default: the CIFAR-10N run, ResNet-56 features; its weights were
trained on CIFAR-10's true labels, which flatters every detector), writes its features
twice (float32, and float16 rounded from them) with one labels CSV (given label, true
label, image path), runs the pipeline on each with the same seed, and prints each run's
flag precision / recall / F1 against the true labels, the share of samples whose flag
agrees between the two, and the features' size on disk. The float32 run is the baseline:
both go through the same path, so any difference is the dtype's.

    python -m bench.float16 [--run runs/bench-cifar10n]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.common import machine
from worker.pipeline.curation.snapshot import current_decisions
from worker.pipeline.storage.rundir import RunDir

CURATOR = str(Path(sys.executable).parent / "curator")


def _scores(flagged: np.ndarray, noisy: np.ndarray) -> tuple[float, float, float]:
    tp = float((flagged & noisy).sum())
    p = tp / max(flagged.sum(), 1)
    r = tp / max(noisy.sum(), 1)
    return p, r, 2 * p * r / max(p + r, 1e-12)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, default=Path("runs/bench-cifar10n"))
    args = ap.parse_args()
    source = RunDir(args.run).require()
    samples = source.read_samples()
    feats = np.load(source.features).astype(np.float32)
    work = Path(tempfile.mkdtemp(prefix="curator-f16-"))
    with open(work / "labels.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["label", "true_label"])
        w.writerows((samples.classes[g], samples.classes[t])
                    for g, t in zip(samples.labels, samples.true_labels, strict=True))
    env = {**os.environ, "CURATOR_BROKER_URL": ""}
    flags, sizes = {}, {}
    for dtype in ("float32", "float16"):
        path = work / f"features-{dtype}.npy"
        np.save(path, feats.astype(dtype))
        sizes[dtype] = path.stat().st_size / 2**20
        out = work / f"run-{dtype}"
        subprocess.run([CURATOR, "pipeline", "--dataset", f"features:{path}", "--labels",
                        str(work / "labels.csv"), "--true-label-column", "true_label",
                        "--out", str(out)], env=env, check=True, capture_output=True)
        flags[dtype] = current_decisions(RunDir(out))[1].flagged
    noisy = samples.labels != samples.true_labels
    print(f"# {len(feats):,} x {feats.shape[1]} features of {args.run} · {machine()}")
    for dtype, f in flags.items():
        p, r, f1 = _scores(f, noisy)
        print(f"{dtype}: {sizes[dtype]:7.1f} MiB  flagged {int(f.sum()):6d}  "
              f"P {p:.3f}  R {r:.3f}  F1 {f1:.3f}")
    agree = float((flags["float32"] == flags["float16"]).mean())
    f1_32, f1_16 = (_scores(flags[d], noisy)[2] for d in ("float32", "float16"))
    print(f"same flag for {agree:.4f} of samples; F1 float16 / float32: {f1_16 / f1_32:.4f}")
    print(f"ratio={f1_16 / f1_32:.4f}")


if __name__ == "__main__":
    main()
