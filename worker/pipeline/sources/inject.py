"""Injected duplicates and outliers, whose truth is recorded, for demos and benchmarks.

- ``--inject-duplicates RATE``: ``round(RATE·N)`` copies of samples chosen at random
  (seeded), each made at one strength (``--duplicate-strength``; ``mixed`` cycles
  through all four), carrying its source's label:

  ========  ===============================================================
  exact     the same pixels
  light     JPEG re-encoded at quality 85 and resized to 90% and back
  medium    mirrored, shifted by up to 2 px, brightness ×0.9–1.1
  strong    a random crop of 80% of the area resized back, mirrored half the time,
            brightness, contrast and saturation ×0.8–1.2, JPEG quality 70
  ========  ===============================================================

- ``--inject-outliers N``: ``N`` images from other sources, with a random label: half
  scikit-learn's digits (another domain; for the digits dataset, crops of
  scikit-learn's two sample photographs), a fifth photograph crops, and the rest
  corrupt-looking (uniform noise) or blank (one colour with faint noise) images.

The injected samples follow the dataset's own, as ``injected/<kind>/<n>`` paths; their
pixels are kept in the run (``injected.npy``) and what each is in ``injected.csv``
(index, path, kind, source sample, how), which ``curator evaluate`` scores against.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance

STRENGTHS = ("exact", "light", "medium", "strong")
DUPLICATE_STRENGTHS = (*STRENGTHS, "mixed")


@dataclass
class Injected:
    """What was added: images (M, S, S, 3) uint8, labels (M,) class codes, true labels
    (M,) (-1 for outliers), paths, and one truth row per image."""

    images: np.ndarray
    labels: np.ndarray
    true_labels: np.ndarray
    paths: list[str]
    rows: list[dict]


def _jpeg(img: Image.Image, quality: int) -> Image.Image:
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue())).convert(img.mode)


def augment(img: Image.Image, strength: str, rng: np.random.Generator) -> Image.Image:
    """A near copy of ``img`` at ``strength`` (module docstring), same size and mode."""
    w, h = img.size
    if strength == "exact":
        return img.copy()
    if strength == "light":
        small = img.resize((max(1, round(w * 0.9)), max(1, round(h * 0.9))),
                           Image.Resampling.BILINEAR)
        return _jpeg(small.resize((w, h), Image.Resampling.BILINEAR), 85)
    if strength == "medium":
        out = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        dx, dy = (int(v) for v in rng.integers(-2, 3, size=2))
        arr = np.asarray(out)
        arr = np.roll(arr, (dy, dx), axis=(0, 1))
        out = Image.fromarray(arr)
        return ImageEnhance.Brightness(out).enhance(float(rng.uniform(0.9, 1.1)))
    side = np.sqrt(0.8)
    cw, ch = max(1, round(w * side)), max(1, round(h * side))
    x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    out = img.crop((x0, y0, x0 + cw, y0 + ch)).resize((w, h), Image.Resampling.BILINEAR)
    if rng.random() < 0.5:
        out = out.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    for enhance in (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color):
        out = enhance(out).enhance(float(rng.uniform(0.8, 1.2)))
    return _jpeg(out, 70)


def _other_images(dataset_kind: str) -> tuple[str, np.ndarray]:
    """(name, uint8 grayscale images (K, H, W)) of the other domain for outliers."""
    if dataset_kind != "digits":
        from sklearn.datasets import load_digits

        return "digits", np.round(load_digits().images * (255.0 / 16.0)).astype(np.uint8)
    return "photo", _photo_crops(64, np.random.default_rng(1), 32)[..., 0]


def _photo_crops(n: int, rng: np.random.Generator, size: int) -> np.ndarray:
    """``n`` random square crops (RGB, size×size) of scikit-learn's sample photographs."""
    from sklearn.datasets import load_sample_images

    photos = load_sample_images().images
    out = np.empty((n, size, size, 3), np.uint8)
    for k in range(n):
        p = photos[int(rng.integers(len(photos)))]
        side = int(rng.integers(size, min(p.shape[:2]) // 2))
        y, x = int(rng.integers(0, p.shape[0] - side)), int(rng.integers(0, p.shape[1] - side))
        out[k] = np.asarray(Image.fromarray(p[y:y + side, x:x + side]).resize(
            (size, size), Image.Resampling.BILINEAR))
    return out


def outlier_images(n: int, size: int, dataset_kind: str, grey: bool,
                   rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
    """``n`` outlier images (n, size, size, 3) and the source of each (module docstring)."""
    name, other = _other_images(dataset_kind)
    n_other, n_photo = n // 2, n // 5
    n_noise = (n - n_other - n_photo) // 2
    kinds = [name] * n_other + ["photo"] * n_photo + ["noise"] * n_noise
    kinds += ["blank"] * (n - len(kinds))
    out = np.empty((n, size, size, 3), np.uint8)
    photos = _photo_crops(n_photo, rng, size) if n_photo else None
    for k, kind in enumerate(kinds):
        if kind == name:
            g = Image.fromarray(other[int(rng.integers(len(other)))]).resize(
                (size, size), Image.Resampling.BILINEAR)
            out[k] = np.asarray(g.convert("RGB"))
        elif kind == "photo":
            out[k] = photos[k - n_other]
        elif kind == "noise":
            out[k] = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
        else:
            colour = rng.integers(0, 256, 3)
            out[k] = np.clip(colour + rng.normal(0, 2, (size, size, 3)), 0, 255)
    if grey:  # a grayscale dataset stays grayscale: same value in every channel
        out[:] = np.round(out.mean(axis=3, keepdims=True)).astype(np.uint8)
    return out, kinds


def inject(load: Callable[[int], Image.Image], labels: np.ndarray, true_labels: np.ndarray,
           n_classes: int, size: int, grey: bool, dataset_kind: str, duplicates: float,
           outliers: int, strength: str, seed: int) -> Injected:
    """Make the injected samples for a dataset of ``len(labels)`` samples whose images
    ``load(i)`` reads; all come out ``size``×``size`` RGB (same values in every channel
    when ``grey``).

    Returns
    -------
    Injected, in order: the copies, then the outliers.
    """
    rng = np.random.default_rng([seed, 7])
    n = len(labels)
    n_dup = int(round(duplicates * n))
    sources = np.sort(rng.choice(n, size=min(n_dup, n), replace=False)) if n_dup else \
        np.empty(0, np.int64)
    strengths = [STRENGTHS[k % 4] if strength == "mixed" else strength
                 for k in range(len(sources))]
    rng.shuffle(strengths)
    images, rows, paths = [], [], []
    for k, (s, how) in enumerate(zip(sources.tolist(), strengths, strict=True)):
        src = load(s)
        mode = "L" if grey else "RGB"
        copy = augment(src.convert(mode), how, rng)
        if copy.size != (size, size):
            copy = copy.resize((size, size), Image.Resampling.BILINEAR)
        images.append(np.asarray(copy.convert("RGB")))
        paths.append(f"injected/duplicate/{k:06d}")
        rows.append({"kind": "duplicate", "source": s, "how": how})
    out_imgs, out_kinds = outlier_images(outliers, size, dataset_kind, grey, rng) \
        if outliers else (np.zeros((0, size, size, 3), np.uint8), [])
    for k, how in enumerate(out_kinds):
        paths.append(f"injected/outlier/{k:06d}")
        rows.append({"kind": "outlier", "source": -1, "how": how})
    stacked = np.concatenate([np.stack(images) if images else
                              np.zeros((0, size, size, 3), np.uint8), out_imgs])
    labels_new = np.concatenate([labels[sources],
                                 rng.integers(0, n_classes, len(out_kinds))]).astype(np.int64)
    # A copy's true label is its source's (unknown stays unknown); an outlier has none.
    true_new = np.concatenate([true_labels[sources],
                               np.full(len(out_kinds), -1)]).astype(np.int64)
    return Injected(stacked, labels_new, true_new, paths, rows)


def truth_path(run_path: Path) -> Path:
    return run_path / "injected.csv"


def write_truth(path: Path, first_index: int, injected: Injected) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["index", "path", "kind", "source", "how"])
        for k, (p, r) in enumerate(zip(injected.paths, injected.rows, strict=True)):
            w.writerow([first_index + k, p, r["kind"], r["source"], r["how"]])


def read_truth(run_path: Path) -> list[dict]:
    """``injected.csv``'s rows (index and source as ints), [] for a run without it."""
    path = truth_path(run_path)
    if not path.is_file():
        return []
    with open(path, newline="") as fh:
        return [{**r, "index": int(r["index"]), "source": int(r["source"])}
                for r in csv.DictReader(fh)]
