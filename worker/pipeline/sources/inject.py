"""Injected duplicates and outliers, whose truth is recorded, for demos and benchmarks.

- ``--inject-duplicates RATE``: ``round(RATE·N)`` copies of samples chosen at random
  (seeded), each made at one strength (``--duplicate-strength``; ``mixed`` cycles
  through the first four, ``held-out`` through the seven after them), carrying its
  source's label (one copy per chosen sample unless ``--duplicate-family`` says more; a
  label of another class for the share ``--duplicate-across`` gives, both below):

  ========  ===============================================================
  exact     the same pixels
  light     JPEG re-encoded at quality 85 and resized to 90% and back
  medium    mirrored, shifted by up to 2 px, brightness ×0.9–1.1
  strong    a random crop of 80% of the area resized back, mirrored half the time,
            brightness, contrast and saturation ×0.8–1.2, JPEG quality 70
  crop      a random crop keeping 60–90% of the area (aspect 3:4 to 4:3), resized back
  rotate    rotated 3–10° either way (corners filled with the mean colour)
  jitter    brightness, contrast and saturation ×0.6–1.4, hue shifted, grey a third
            of the time
  blur      Gaussian blur, radius 0.6–1.5 px at 32 px (scaled with the side)
  jpeg      JPEG re-encoded at quality 30–60
  overlay   a caption or a logo (a filled shape) drawn over a corner
  aspect    stretched 1.15–1.4× along one side, centre-cropped back
  ========  ===============================================================

  The detectors' cuts were chosen looking at the first four (and the chosen-on outlier
  sources below); the others were made afterwards to report on data the cuts were not
  chosen on (docs/benchmarks.md, "Held-out rows").

- ``--duplicate-family K`` (1 to 10, default 1): the copies come in families: each chosen
  sample gets from 1 to ``K`` copies (drawn uniformly, seeded), until ``round(RATE·N)``
  copies are made (the last family may be cut short). A family's copies follow one
  another, each with the family's source as ``source``; the strengths cycle per copy as
  above. With 1 (one copy per chosen sample) the copies are those made before the option
  existed.

- ``--duplicate-across SHARE`` (0 to 1, default 0): ``round(SHARE·copies)`` of the copies,
  chosen at random (seeded), carry the label of another class than their source's (one
  chosen at random among the others): a copy filed in another class's folder. Their
  pixels are those made without it, and their true label stays their source's. The label
  a copy carries is the run's sample table's (``samples.csv``), so a copy filed across is
  one whose label differs from its ``source``'s there. With 0 the labels are those made
  before the option existed.

- ``--inject-leaks N``: copies of ``N`` test images chosen at random (seeded) put into
  train, each made at one strength as ``--duplicate-strength`` says, carrying the test
  image's label: leaks whose truth is known (``source`` is the test image's index).

- ``--inject-outliers N``: ``N`` images from other sources, with a random label. With
  ``--outlier-sources mixed`` (the default, the chosen-on sources): half scikit-learn's
  digits (another domain; for the digits dataset, crops of scikit-learn's two sample
  photographs), a fifth photograph crops, and the rest corrupt-looking (uniform noise) or
  blank (one colour with faint noise) images. With ``held-out``, in turn: ``grey``
  (low-contrast greyscale photograph crops), ``lines`` (line drawings), ``texture``
  (stripes and checks), ``shapes`` (rendered shapes on a plain ground) and ``solid`` (a
  colour with strong noise). One source name gives only that source.

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
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

from worker.pipeline.choices import (
    HELD_OUT,
    HELD_OUT_SOURCES,
    STRENGTHS,
)
from worker.pipeline.errors import InputError


@dataclass
class TestImages:
    """A test split to copy leaks from: ``load(j)`` reads test image j, ``labels`` (M,)
    are their classes as the train split's codes."""

    load: Callable[[int], Image.Image]
    labels: np.ndarray


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
    if strength in HELD_OUT:
        return _held_out(img, strength, rng)
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


def _held_out(img: Image.Image, how: str, rng: np.random.Generator) -> Image.Image:
    """A copy by one of the held-out transformations (module docstring)."""
    w, h = img.size
    u = rng.uniform
    if how == "crop":
        area, aspect = u(0.6, 0.9), np.exp(u(np.log(3 / 4), np.log(4 / 3)))
        cw = min(w, max(1, round(w * np.sqrt(area * aspect))))
        ch = min(h, max(1, round(h * np.sqrt(area / aspect))))
        x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        return img.crop((x0, y0, x0 + cw, y0 + ch)).resize((w, h), Image.Resampling.BILINEAR)
    if how == "rotate":
        angle = float(u(3, 10) * rng.choice([-1, 1]))
        mean = tuple(int(v) for v in np.asarray(img).reshape(-1, len(img.getbands()))
                     .mean(0))
        return img.rotate(angle, Image.Resampling.BILINEAR,
                          fillcolor=mean if len(mean) > 1 else mean[0])
    if how == "jitter":
        out = img
        for enhance in (ImageEnhance.Brightness, ImageEnhance.Contrast, ImageEnhance.Color):
            out = enhance(out).enhance(float(u(0.6, 1.4)))
        if out.mode == "RGB":
            hsv = np.asarray(out.convert("HSV")).copy()
            hsv[..., 0] = (hsv[..., 0].astype(int) + int(rng.integers(-20, 21))) % 256
            out = Image.fromarray(hsv, "HSV").convert("RGB")
            if rng.random() < 1 / 3:
                out = out.convert("L").convert("RGB")
        return out
    if how == "blur":
        return img.filter(ImageFilter.GaussianBlur(float(u(0.6, 1.5)) * max(w, h) / 32))
    if how == "jpeg":
        return _jpeg(img, int(rng.integers(30, 61)))
    if how == "overlay":
        return _overlay(img, rng)
    s = float(u(1.15, 1.4))  # aspect: stretched along one side, centre-cropped back
    big = (round(w * s), h) if rng.random() < 0.5 else (w, round(h * s))
    out = img.resize(big, Image.Resampling.BILINEAR)
    x0, y0 = (big[0] - w) // 2, (big[1] - h) // 2
    return out.crop((x0, y0, x0 + w, y0 + h))


def _overlay(img: Image.Image, rng: np.random.Generator) -> Image.Image:
    """A caption (a word with a dark outline) or a logo (a filled shape) over a corner."""
    from PIL import ImageFont

    w, h = img.size
    out = img.convert("RGB")
    draw = ImageDraw.Draw(out)
    corner = int(rng.integers(4))
    if rng.random() < 0.5:
        size = max(6, h // 5)
        try:
            font = ImageFont.load_default(size=size)
        except TypeError:  # Pillow without FreeType sizes
            font = ImageFont.load_default()
        text = str(rng.choice(["©2021", "SAMPLE", "photo", "#tag", "stock"]))
        x = 1 if corner % 2 == 0 else max(1, w - size * len(text) // 2)
        y = 1 if corner < 2 else h - size - 1
        draw.text((x, y), text, fill="white", font=font, stroke_width=max(1, size // 8),
                  stroke_fill="black")
    else:
        r = max(3, round(min(w, h) * float(rng.uniform(0.12, 0.2))))
        x = 1 if corner % 2 == 0 else w - 2 * r - 1
        y = 1 if corner < 2 else h - 2 * r - 1
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        if rng.random() < 0.5:
            draw.ellipse((x, y, x + 2 * r, y + 2 * r), fill=colour, outline="white")
        else:
            draw.rectangle((x, y, x + 2 * r, y + 2 * r), fill=colour, outline="white")
    return out.convert(img.mode)


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


def _source_image(kind: str, size: int, dataset_kind: str,
                  rng: np.random.Generator) -> np.ndarray:
    """One outlier image (size, size, 3) uint8 from source ``kind`` (module docstring)."""
    if kind in ("digits", "photo") and _other_images(dataset_kind)[0] == kind:
        other = _other_images(dataset_kind)[1]
        g = Image.fromarray(other[int(rng.integers(len(other)))])
        return np.asarray(g.resize((size, size), Image.Resampling.BILINEAR).convert("RGB"))
    if kind in ("photo", "grey"):
        photo = _photo_crops(1, rng, size)[0]
        if kind == "photo":
            return photo
        g = np.asarray(Image.fromarray(photo).convert("L"), np.float32)
        g = 128 + (g - g.mean()) * rng.uniform(0.25, 0.5) + rng.uniform(-40, 40)
        return np.repeat(np.clip(g, 0, 255).astype(np.uint8)[..., None], 3, axis=2)
    if kind == "noise":
        return rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
    if kind in ("blank", "solid"):
        colour, sd = rng.integers(0, 256, 3), 2 if kind == "blank" else rng.uniform(15, 30)
        return np.clip(colour + rng.normal(0, sd, (size, size, 3)), 0, 255).astype(np.uint8)
    if kind == "texture":
        y, x = np.mgrid[0:size, 0:size] / size
        theta, freq = rng.uniform(0, np.pi), rng.uniform(3, 9)
        wave = np.sin(2 * np.pi * freq * (x * np.cos(theta) + y * np.sin(theta)))
        if rng.random() < 0.5:  # checks: a second wave across the first
            wave = wave * np.sin(2 * np.pi * freq * (x * np.sin(theta) - y * np.cos(theta)))
        a, b = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
        t = (wave[..., None] + 1) / 2
        return np.round(a * t + b * (1 - t)).astype(np.uint8)
    img = Image.new("RGB", (size, size), "white" if kind == "lines" else
                    tuple(int(c) for c in rng.integers(0, 256, 3)))
    draw = ImageDraw.Draw(img)
    if kind == "lines":  # a line drawing: dark strokes on white
        for _ in range(int(rng.integers(3, 9))):
            pts = [tuple(float(v) for v in rng.uniform(0, size, 2)) for _ in range(2)]
            draw.line(pts, fill="black", width=max(1, size // 32))
        return np.asarray(img)
    for _ in range(int(rng.integers(1, 4))):  # shapes: filled figures on a plain ground
        x0, y0 = rng.uniform(0, size * 0.6, 2)
        x1, y1 = x0 + rng.uniform(size * 0.2, size * 0.5), y0 + rng.uniform(size * 0.2,
                                                                             size * 0.5)
        fill = tuple(int(c) for c in rng.integers(0, 256, 3))
        box = (float(x0), float(y0), float(x1), float(y1))
        if rng.random() < 0.5:
            draw.ellipse(box, fill=fill)
        else:
            draw.polygon([(box[0], box[3]), ((box[0] + box[2]) / 2, box[1]), (box[2], box[3])],
                         fill=fill)
    return np.asarray(img)


def outlier_images(n: int, size: int, dataset_kind: str, grey: bool,
                   rng: np.random.Generator, sources: str = "mixed"
                   ) -> tuple[np.ndarray, list[str]]:
    """``n`` outlier images (n, size, size, 3) and the source of each (module docstring:
    ``sources`` is ``mixed``, ``held-out`` or one source's name)."""
    if sources != "mixed":
        names = HELD_OUT_SOURCES if sources == "held-out" else (sources,)
        kinds = [names[k % len(names)] for k in range(n)]
        out = np.stack([_source_image(k, size, dataset_kind, rng) for k in kinds]) if n \
            else np.zeros((0, size, size, 3), np.uint8)
        if grey:
            out[:] = np.round(out.mean(axis=3, keepdims=True)).astype(np.uint8)
        return out, kinds
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


class _Made:
    """The injected images, their truth rows and paths, in the order they are made: the
    copies and leaks one by one, then the outliers as one block."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.images: list[np.ndarray] = []
        self.outliers = np.zeros((0, size, size, 3), np.uint8)
        self.rows: list[dict] = []
        self.paths: list[str] = []

    def add_copies(self, load: Callable[[int], Image.Image], chosen: np.ndarray, kind: str,
                   grey: bool, strength: str, rng: np.random.Generator) -> None:
        """Append a copy of each of ``chosen`` (read by ``load``), at the strengths
        ``strength`` cycles through in a shuffled order, as injected ``kind`` samples."""
        cycle = {"mixed": STRENGTHS, "held-out": HELD_OUT}.get(strength, (strength,))
        strengths = [cycle[k % len(cycle)] for k in range(len(chosen))]
        rng.shuffle(strengths)
        for k, (s, how) in enumerate(zip(chosen.tolist(), strengths, strict=True)):
            copy = augment(load(s).convert("L" if grey else "RGB"), how, rng)
            if copy.size != (self.size, self.size):
                copy = copy.resize((self.size, self.size), Image.Resampling.BILINEAR)
            self.images.append(np.asarray(copy.convert("RGB")))
            self.paths.append(f"injected/{kind}/{k:06d}")
            self.rows.append({"kind": kind, "source": s, "how": how})

    def add_outliers(self, images: np.ndarray, sources: list[str]) -> None:
        """Append the outlier ``images`` (M, S, S, 3), each made by its source."""
        self.outliers = images
        for k, how in enumerate(sources):
            self.paths.append(f"injected/outlier/{k:06d}")
            self.rows.append({"kind": "outlier", "source": -1, "how": how})

    def stacked(self) -> np.ndarray:
        """Every injected image, uint8 (M, S, S, 3), in the order made."""
        made = np.stack(self.images) if self.images else \
            np.zeros((0, self.size, self.size, 3), np.uint8)
        return np.concatenate([made, self.outliers])


def family_sizes(total: int, family: int, seed: int) -> np.ndarray:
    """How many copies each chosen source gets: sizes drawn from 1 to ``family`` until
    ``total`` copies are made, the last cut short to fit (all ones when ``family`` is 1)."""
    if family <= 1 or total <= 0:
        return np.ones(max(total, 0), np.int64)
    sizes = np.random.default_rng([seed, 13]).integers(1, family + 1, size=total)
    ends = np.cumsum(sizes)
    m = int(np.searchsorted(ends, total)) + 1  # the first family that reaches the total
    sizes = sizes[:m].copy()
    sizes[-1] -= int(ends[m - 1]) - total
    return sizes


def relabel_across(labels: np.ndarray, n_classes: int, share: float,
                   seed: int) -> np.ndarray:
    """``labels`` (the copies' sources' labels) with ``round(share·len)`` of them, chosen
    at random, changed to another class chosen at random among the others."""
    out = labels.copy()
    n_across = int(round(share * len(out)))
    if not n_across:
        return out
    if n_classes < 2:
        raise InputError("--duplicate-across files copies under another class: the dataset "
                         "has only one")
    rng = np.random.default_rng([seed, 17])
    which = np.sort(rng.choice(len(out), size=n_across, replace=False))
    out[which] = (out[which] + rng.integers(1, n_classes, size=n_across)) % n_classes
    return out


@dataclass(frozen=True)
class TrainImages:
    """The dataset the injected samples join: ``load(i)`` reads its image i, ``labels``
    (N,) and ``true_labels`` (N,; -1 unknown) are codes of its ``n_classes`` classes, and
    ``kind`` is its spec's kind (which outliers suit it). The injected images come out
    ``size``×``size`` RGB, with the same values in every channel when ``grey``."""

    load: Callable[[int], Image.Image]
    labels: np.ndarray
    true_labels: np.ndarray
    n_classes: int
    kind: str
    size: int
    grey: bool


@dataclass(frozen=True)
class InjectionPlan:
    """What to inject (module docstring), all drawn from ``seed``: copies of a share
    ``duplicates`` of the samples at ``strength``, in families of 1 to ``family``, a share
    ``across`` of them labelled as another class; ``leaks`` copies of test images; and
    ``outliers`` images from ``sources``. With ``family`` 1 and ``across`` 0 the output is
    what it was before either existed."""

    duplicates: float
    outliers: int
    strength: str
    seed: int
    sources: str = "mixed"
    leaks: int = 0
    family: int = 1
    across: float = 0.0


def inject(train: TrainImages, plan: InjectionPlan, test: TestImages | None = None
           ) -> Injected:
    """Make the injected samples that ``plan`` asks for ``train``; ``plan.leaks`` copies
    of ``test``'s images join train.

    Returns
    -------
    Injected, in order: the copies (a family's one after another), the leaks, then the
    outliers.
    """
    rng = np.random.default_rng([plan.seed, 7])
    made = _Made(train.size)
    copied = _copied_sources(len(train.labels), plan, rng)
    made.add_copies(train.load, copied, "duplicate", train.grey, plan.strength, rng)
    leaked = _add_leaks(made, test, train.grey, plan)
    if plan.outliers:
        made.add_outliers(*outlier_images(plan.outliers, train.size, train.kind, train.grey,
                                          rng, plan.sources))
    n_outliers = len(made.outliers)
    leak_labels = test.labels[leaked] if test is not None else np.empty(0, np.int64)
    labels = np.concatenate([
        relabel_across(train.labels[copied], train.n_classes, plan.across, plan.seed),
        leak_labels, rng.integers(0, train.n_classes, n_outliers)]).astype(np.int64)
    # A copy's true label is its source's (unknown stays unknown), also when it is filed
    # under another class; a leak's its test image's where the train split's are known;
    # an outlier has none.
    leak_true = leak_labels if (train.true_labels >= 0).any() else \
        np.full(len(leak_labels), -1)
    true_labels = np.concatenate([train.true_labels[copied], leak_true,
                                  np.full(n_outliers, -1)]).astype(np.int64)
    return Injected(made.stacked(), labels, true_labels, made.paths, made.rows)


def _copied_sources(n: int, plan: InjectionPlan, rng: np.random.Generator) -> np.ndarray:
    """The samples to copy, int64 (round(duplicates·n),): each chosen source (drawn from
    ``rng``) repeated as many times as its family has copies."""
    n_dup = int(round(plan.duplicates * n))
    # Sizes from their own generator: with families of one, the sources (and everything
    # drawn after them) are the ones drawn before families existed.
    sizes = family_sizes(n_dup, plan.family, plan.seed)
    chosen = np.sort(rng.choice(n, size=min(len(sizes), n), replace=False)) if n_dup else \
        np.empty(0, np.int64)
    return np.repeat(chosen, sizes[:len(chosen)])


def _add_leaks(made: _Made, test: TestImages | None, grey: bool, plan: InjectionPlan
               ) -> np.ndarray:
    """Add copies of ``plan.leaks`` test images chosen at random to ``made``; returns
    their indices in the test split, int64 (L,) (none without ``test``)."""
    if not plan.leaks or test is None:
        return np.empty(0, np.int64)
    # Its own generator: the copies and outliers stay what they were without leaks.
    leak_rng = np.random.default_rng([plan.seed, 11])
    m = len(test.labels)
    leaked = np.sort(leak_rng.choice(m, size=min(plan.leaks, m), replace=False))
    made.add_copies(test.load, leaked, "leak", grey, plan.strength, leak_rng)
    return leaked


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
