"""A blur detector learned from images, scored as the image-quality kinds score.

``bench.quality_bound`` shows how far a network trained on one defect at one strength
tells weakly blurred CIFAR-10 images from clean ones. This asks what a detector a user
could run would do: the same small CNN (``quality_bound.network``) trained once, on
CIFAR-10 train images outside the mini set, to tell clean images from copies blurred at
a random radius (log-uniform, 0.5–4 px in 32-px units), either side saved as a JPEG of a
random quality (60–95) half the time. Its logit is scored as a robust z on the clean
images (the median and 1.4826 × the median absolute deviation), the cut chosen on
CIFAR-10 mini's middle strength by ``bench.quality``'s rule (the lowest cut, at least 3
spreads, with the best F1, at most 1% of clean images marked), and F1 reported at that
cut on every strength, on the mini set and on 500 square 256–500 px photographs made
from it (``bench.quality --photos``; their 64-px thumbnails are shown to the network at
32 px). F1 is computed from the rates on the bench's mix, 30 defective images in 2,000.

    nice -n 10 .venv/bin/python -m bench.blur_learned [--train 16000] [--epochs 6]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageFilter

from bench.quality import STRENGTHS, clean_images, inject_defect
from bench.quality_bound import (
    MIX_DEFECTIVE,
    MIX_TOTAL,
    cifar_train,
    reencoded,
    score,
    stack,
    train,
)
from worker.pipeline.sources.ingest import thumbnail

RADII = (0.5, 4.0)  # px in 32-px units, log-uniform
JPEG_QUALITY = (60, 95)
CUTS = np.arange(3.0, 15.0, 0.05)


def blurred_at_random(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    """``img`` blurred by a Gaussian of a random radius in :data:`RADII`."""
    r = float(np.exp(rng.uniform(*np.log(RADII)))) * max(img.size) / 32
    return img.filter(ImageFilter.GaussianBlur(r))


def maybe_jpeg(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    """``img``, half the time saved as a JPEG of a random quality and read back."""
    return reencoded(img, int(rng.integers(*JPEG_QUALITY))) if rng.random() < 0.5 else img


def at_32(img: Image.Image, side: int) -> Image.Image:
    """The run's ``side``-px thumbnail of ``img``, shown at 32 px."""
    thumb = Image.fromarray(thumbnail(img, side))
    return thumb if side == 32 else thumb.resize((32, 32), Image.Resampling.LANCZOS)


def robust_z(v: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``v`` in robust spreads above ``ref``'s median."""
    med = np.median(ref)
    return (v - med) / max(1.4826 * float(np.median(np.abs(ref - med))), 1e-6)


def f1(clean_z: np.ndarray, bad_z: np.ndarray, cut: float) -> float:
    """F1 at ``cut`` on the bench's mix, from the rates."""
    fpr, tpr = float((clean_z >= cut).mean()), float((bad_z >= cut).mean())
    pos, neg = MIX_DEFECTIVE, MIX_TOTAL - MIX_DEFECTIVE
    return 2 * pos * tpr / (2 * pos * tpr + neg * fpr + pos * (1 - tpr))


def chosen_cut(clean_z: np.ndarray, bad_z: np.ndarray) -> float:
    """bench.quality's rule: the lowest cut with the best F1, at most 1% clean marked."""
    ok = [c for c in CUTS if (clean_z >= c).mean() <= 0.01]
    scores = [f1(clean_z, bad_z, c) for c in ok]
    return float(ok[int(np.argmax(scores))])


def scored(net: torch.nn.Module, images: list[Image.Image], side: int
           ) -> dict[str, np.ndarray]:
    """The network's logit on ``images`` clean and at every strength of blur."""
    out = {"clean": score(net, stack([at_32(im, side) for im in images]))}
    for s in STRENGTHS:
        out[s] = score(net, stack([at_32(inject_defect(im, "blurry", s), side)
                                   for im in images]))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=int, default=16000, help="train images outside the mini set")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    rng = np.random.default_rng(args.seed)
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        images, mini = cifar_train(Path(tmp))
        pool = rng.permutation(rng.choice(np.flatnonzero(~mini), args.train, replace=False))
        a, b = pool[: len(pool) // 2], pool[len(pool) // 2:]
        net = train(stack([maybe_jpeg(images[i], rng) for i in a]),
                    stack([maybe_jpeg(blurred_at_random(images[i], rng), rng) for i in b]),
                    args.epochs, args.seed)
        print(f"trained on {args.train} images in {time.perf_counter() - t:.0f} s", flush=True)
        sets = {"CIFAR-10 mini": (clean_images(Path(tmp), 200)[1], 32),
                "photographs": (clean_images(Path(tmp) / "p", 0, photos=500)[1], 64)}
        cut = None
        print("| images | cut | weak | middle (chosen on) | strong | clean marked |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, (imgs, side) in sets.items():
            logit = scored(net, imgs, side)
            z = {k: robust_z(v, logit["clean"]) for k, v in logit.items()}
            cut = chosen_cut(z["clean"], z["middle"]) if cut is None else cut
            print(f"| {name} | {cut:.2f} | " + " | ".join(f"{f1(z['clean'], z[s], cut):.2f}"
                                                    for s in STRENGTHS)
                  + f" | {100 * (z['clean'] >= cut).mean():.2f}% |", flush=True)


if __name__ == "__main__":
    main()
