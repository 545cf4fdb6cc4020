"""Feature extraction throughput on the CIFAR-10 JPEGs with CIFAR ResNet-56.

Baseline, the plain loop: for each batch of 500 files, PIL-decode them, stack, normalise,
and run the unmodified model under ``torch.no_grad``. Ours: ``ingest`` (decode once,
thumbnails, corrupt-file check) plus ``extract`` (BN folded, channels_last, reading the
exact thumbnails, bf16 autocast where the CPU has native bf16), timed together, so the
comparison includes all decoding. Ours also runs once in fp32 to show what bf16 adds.
Every variant produces features for the same files; the script checks they agree with
the plain loop's (cosine similarity per sample). Prints images/s for each and a final
``speedup=`` line (ours with ``precision=auto`` against the plain loop).

    python -m bench.extract [--limit 50000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from bench.common import SHARED, cifar_folder, machine, timed
from worker.pipeline.datasets import parse_spec
from worker.pipeline.features import FeatureOptions, extract
from worker.pipeline.ingest import DatasetOptions, ingest
from worker.pipeline.models import IMAGENET_MEAN, IMAGENET_STD, build_backbone, resolve_precision
from worker.pipeline.rundir import RunDir

WEIGHTS = SHARED / "weights" / "resnet56-4bfd9763.th"


def plain_loop(files: list[Path], batch: int = 500) -> np.ndarray:
    net = build_backbone("cifar-resnet56", WEIGHTS, 10, 32).net.eval()
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    out = []
    with torch.no_grad():
        for s in range(0, len(files), batch):
            imgs = np.stack([np.asarray(Image.open(f).convert("RGB")) for f in files[s:s + batch]])
            x = torch.from_numpy(imgs).permute(0, 3, 1, 2).float() / 255.0
            out.append(net((x - mean) / std).numpy())
    return np.concatenate(out)


def ours(root: Path, workdir: Path, precision: str) -> np.ndarray:
    run = RunDir(workdir / f"run-{precision}")
    ds = ingest(run, DatasetOptions(parse_spec(f"folder:{root}")))
    return extract(run, ds, FeatureOptions(model="cifar-resnet56", weights=WEIGHTS,
                                           batch_size=500, precision=precision))


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest per-row cosine similarity of two (N, D) feature arrays."""
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12
    return float((num / den).min())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=50000, help="images (first N of train)")
    args = ap.parse_args()
    src = cifar_folder() / "train"
    files = sorted(src.rglob("*.jpg"))[: args.limit]
    work = Path(tempfile.mkdtemp(prefix="bench-extract-"))
    try:
        # Lay the chosen files out as an image folder (symlinks) for our side.
        root = work / "data"
        for f in files:
            (root / f.parent.name).mkdir(parents=True, exist_ok=True)
            (root / f.parent.name / f.name).symlink_to(f)
        files = sorted(root.rglob("*.jpg"))  # the same order our folder listing uses
        print(f"# extraction, CIFAR ResNet-56, {len(files)} JPEGs · {machine()}", flush=True)
        t_plain, a = timed(lambda: plain_loop(files))
        print(f"{'plain loop':20s} {len(files) / t_plain:8.0f} img/s  ({t_plain:.1f} s)",
              flush=True)
        auto = resolve_precision("auto", torch.device("cpu"))
        times = {}
        for precision in ("fp32", "auto"):
            t, b = timed(lambda p=precision: ours(root, work, p))
            times[precision] = t
            cos = min_cosine(a, b)
            label = f"ours {precision}" + (f" (= {auto})" if precision == "auto" else "")
            print(f"{label:20s} {len(files) / t:8.0f} img/s  ({t:.1f} s, ingest included; "
                  f"min cosine to plain {cos:.5f})", flush=True)
            if cos < 0.999:
                raise SystemExit("features differ: the fast path is wrong")
        print(f"speedup_fp32={t_plain / times['fp32']:.2f}")
        print(f"speedup={t_plain / times['auto']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
