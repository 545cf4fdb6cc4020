"""Write a folder of N photograph-size JPEGs in class folders, reproducibly.

Each file is a real CIFAR-10 image (the shared JPEG folder, cycled through its 50,000
train images in a seeded order), cropped to keep 70–100% of each side and resized to a
random 256–500 px by 256–500 px (bicubic), saved at JPEG quality 90 into
``OUT/<class>/NNNNNNN.jpg``. The same ``--seed`` and ``--n`` give the same files, byte
for byte. Files already there are kept, so a larger ``--n`` only adds the rest.

It is what bench/datapath.py and the million-file bench decode: real image statistics at
ImageNet-like sizes (the upscaled content is smoother than a photograph, so files are
smaller, about 20 kB, and decode a little faster than camera JPEGs of the same size).

    python -m bench.jpeg_folder --n 200000 --out /tmp/jpegs-200k [--source DIR] [--seed 0]
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import numpy as np
from PIL import Image

from bench.common import cifar_folder
from worker.pipeline.sources.decoding import host_cores, ordered_map

SIDES = (256, 500)
KEEP = (0.70, 1.00)
QUALITY = 90


def source_images(root: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The class names, and every train image of a CIFAR-style folder as uint8
    (M, 32, 32, 3) with its class code (M,), in a fixed order."""
    classes = sorted(p.name for p in (root / "train").iterdir() if p.is_dir())
    images, labels = [], []
    for c, name in enumerate(classes):
        for f in sorted((root / "train" / name).glob("*.jpg")):
            with Image.open(f) as img:
                images.append(np.asarray(img.convert("RGB")))
            labels.append(c)
    return classes, np.stack(images), np.asarray(labels)


def photo(src: np.ndarray, rng: np.random.Generator, square: bool = False) -> bytes:
    """One JPEG file: ``src`` cropped, resized to 256–500 px a side (``square``: the same
    side both ways), quality 90."""
    h, w = src.shape[:2]
    kh, kw = (int(round(s * rng.uniform(*KEEP))) for s in (h, w))
    y, x = int(rng.integers(0, h - kh + 1)), int(rng.integers(0, w - kw + 1))
    size = tuple(int(s) for s in rng.integers(SIDES[0], SIDES[1] + 1, 2))
    if square:
        size = (size[0], size[0])
    img = Image.fromarray(src[y:y + kh, x:x + kw]).resize(size, Image.Resampling.BICUBIC)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=QUALITY)
    return buf.getvalue()


def write_folder(out: Path, n: int, source: Path, seed: int = 0,
                 workers: int | None = None, square: bool = False) -> Path:
    """Write (or complete) ``out`` with ``n`` files (``square``: each as wide as it is
    tall); returns ``out``."""
    classes, images, labels = source_images(source)
    for name in classes:
        (out / name).mkdir(parents=True, exist_ok=True)
    part = 500
    cycle = np.random.default_rng(seed).permutation(len(images))  # classes mixed from file 0

    def write_part(k: int) -> int:
        made = 0
        for i in range(k * part, min(n, (k + 1) * part)):
            j = cycle[i % len(images)]
            dest = out / classes[labels[j]] / f"{i:07d}.jpg"
            if dest.exists():
                continue
            dest.write_bytes(photo(images[j], np.random.default_rng([seed, i]), square))
            made += 1
        return made

    t, made = time.perf_counter(), 0
    for k, m in enumerate(ordered_map(write_part, -(-n // part), workers or host_cores())):
        made += m
        if k % 40 == 39:
            print(f"  {min(n, (k + 1) * part)}/{n} files", flush=True)
    print(f"wrote {made} files ({n - made} were there) in {time.perf_counter() - t:.0f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--source", type=Path, default=None,
                    help="a CIFAR-style folder (train/<class>/*.jpg); default: the shared one")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    write_folder(a.out, a.n, a.source or cifar_folder(), a.seed)


if __name__ == "__main__":
    main()
