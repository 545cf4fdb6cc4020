"""Image-quality kinds against injected defects, beside CleanVision.

Each defect (too dark, too bright, blurred, flattened, cropped to a wide strip, turned
grey, overexposed, letterboxed) is injected at three strengths into a few images of the
CIFAR-10 mini train split, one defect and strength at a time; the images are written as a
folder, ingested as ``curator`` ingests any folder (thumbnails and original sizes), and
our kind for that defect is computed on the run. CleanVision (``cleanvision`` on the
bench's path, ``.bench-venv/site``) checks the same folder. The cuts are our kinds'
number parameters (``--dark-threshold`` …, ``worker/pipeline/number_params.py``), chosen
on the middle strength; the weak and strong ones are held out. Printed: precision, recall and F1 per
defect and strength, and the share of clean images each kind marks.

    nice -n 10 .venv/bin/python -m bench.quality [--per-defect 30] [--no-cleanvision]

CleanVision goes on the bench's own path, not into the project's environment:
``.venv/bin/python -m pip install --target .bench-venv/site --no-deps cleanvision
imagehash tabulate PyWavelets`` (its other needs, pandas, matplotlib, scipy, fsspec and
tqdm, are the project's). CleanVision's checks run with their default thresholds; its
``grayscale`` reads the file's colour mode, so an RGB file of a grey picture is never
grey to it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance, ImageFilter

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path("/work/shared/data")
STRENGTHS = ("weak", "middle", "strong")
TUNED = "middle"  # the strength the cuts were chosen on; the others are held out


def _darken(img: Image.Image, s: int) -> Image.Image:
    f = (0.35, 0.25, 0.15)[s]
    return Image.fromarray((np.asarray(img, np.float32) * f).round().astype(np.uint8))


def _brighten(img: Image.Image, s: int) -> Image.Image:
    a = (0.55, 0.65, 0.75)[s]  # blended toward white: no pixel clipped, none dark
    x = np.asarray(img, np.float32)
    return Image.fromarray((x + (255 - x) * a).round().astype(np.uint8))


def _blur(img: Image.Image, s: int) -> Image.Image:
    radius = (0.8, 1.2, 1.8)[s] * max(img.size) / 32  # in 32-px units
    return img.filter(ImageFilter.GaussianBlur(radius))


def _flatten(img: Image.Image, s: int) -> Image.Image:
    keep = (0.15, 0.1, 0.05)[s]  # contrast left about the image's mean
    x = np.asarray(img, np.float32)
    m = x.mean((0, 1), keepdims=True)
    return Image.fromarray((m + (x - m) * keep).round().clip(0, 255).astype(np.uint8))


def _strip(img: Image.Image, s: int) -> Image.Image:
    ratio = (2.5, 3.0, 4.0)[s]  # a centre strip ratio times as wide as it is tall
    w, h = img.size
    keep = max(1, round(w / ratio))
    top = (h - keep) // 2
    return img.crop((0, top, w, top + keep))


def _grey(img: Image.Image, s: int) -> Image.Image:
    return ImageEnhance.Color(img).enhance((0.15, 0.08, 0.0)[s])


def _overexpose(img: Image.Image, s: int) -> Image.Image:
    # Exposure raised until a share of the image's own pixels (15%, 30%, 45%) clips: a
    # gain fixed for every image would leave a dark one unclipped.
    x = np.asarray(img, np.float32)
    top = np.percentile(x @ np.array([0.299, 0.587, 0.114], np.float32), (85, 70, 55)[s])
    return Image.fromarray((x * 255.0 / max(float(top), 1.0)).clip(0, 255).astype(np.uint8))


def _letterbox(img: Image.Image, s: int) -> Image.Image:
    bar = (0.12, 0.16, 0.2)[s]  # each bar's share of the height, black, inside the frame
    x = np.array(img)
    k = max(1, round(x.shape[0] * bar))
    x[:k] = 0
    x[-k:] = 0
    return Image.fromarray(x)


# Defect → (how it is injected, our kind, CleanVision's issue types: a mark by any of
# them counts; none where it has no check for it).
DEFECTS: dict[str, tuple[Callable[[Image.Image, int], Image.Image], str, tuple[str, ...]]] = {
    "dark": (_darken, "dark", ("dark",)),
    "bright": (_brighten, "bright", ("light",)),
    "blurry": (_blur, "blurry", ("blurry",)),
    "low_info": (_flatten, "low_info", ("low_information",)),
    "odd_size": (_strip, "odd_size", ("odd_aspect_ratio", "odd_size")),
    "grey": (_grey, "grey", ("grayscale",)),
    "overexposed": (_overexpose, "overexposed", ("light",)),
    "border": (_letterbox, "border", ()),
}


def inject_defect(img: Image.Image, defect: str, strength: str) -> Image.Image:
    """``img`` with ``defect`` (a :data:`DEFECTS` key) at ``strength`` (a :data:`STRENGTHS`
    item)."""
    return DEFECTS[defect][0](img.convert("RGB"), STRENGTHS.index(strength))


def _cifar_mini(work: Path) -> Path:
    """The CIFAR-10 mini folder (train/ and test/, a folder per class) under ``work``."""
    with tarfile.open(SHARED / "cifar10-jpeg-mini.tar.gz") as tar:
        tar.extractall(work, filter="data")
    return work / "cifar10-mini"


def clean_images(work: Path, per_class: int, photos: int = 0
                 ) -> tuple[list[str], list[Image.Image], list[int]]:
    """The clean images: (class names, images, labels). The first ``per_class`` CIFAR-10
    mini train photographs of each class, or, with ``photos``, that many 256–500 px
    square photographs made from them (bench/jpeg_folder.py, as bench/stress.py makes
    its folder), read back from their JPEG files."""
    root = _cifar_mini(work)
    train = root / "train"
    if photos:
        from bench.jpeg_folder import write_folder

        train = write_folder(work / "photos", photos, root, square=True)
    classes = sorted(p.name for p in train.iterdir())
    images, labels = [], []
    for k, c in enumerate(classes):
        for f in sorted((train / c).glob("*.jpg"))[:None if photos else per_class]:
            images.append(Image.open(f).convert("RGB"))
            labels.append(k)
    return classes, images, labels


def write_set(root: Path, data: tuple[list[str], list[Image.Image], list[int]],
              chosen: dict[str, np.ndarray], strength: str) -> list[str]:
    """Write every image as a PNG under ``root/<class>/``, each ``chosen[defect]`` one with
    that defect; returns each image's path relative to ``root``, in image order."""
    classes, images, labels = data
    which = np.full(len(images), "", dtype=object)
    for defect, idx in chosen.items():
        which[idx] = defect
    paths = []
    for i, (img, k) in enumerate(zip(images, labels, strict=True)):
        rel = f"{classes[k]}/{i:05d}.png"
        (root / classes[k]).mkdir(parents=True, exist_ok=True)
        (inject_defect(img, which[i], strength) if which[i] else img).save(root / rel)
        paths.append(rel)
    return paths


def ours(root: Path, runs: Path, paths: list[str]
         ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], float]:
    """Our kinds' marks and scores on the folder (image order), and the seconds the kinds
    took."""
    from worker.pipeline.findings import get_kind
    from worker.pipeline.findings.context import FindingContext
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions, ingest
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(runs / root.name)
    ingest(run, DatasetOptions(parse_spec(f"folder:{root}")))
    samples = run.read_samples()
    order = np.array([samples.paths.index(p) for p in paths])
    ctx = FindingContext(run, samples)
    t = time.perf_counter()
    tables = {d: get_kind(kind).compute(ctx) for d, (_, kind, _) in DEFECTS.items()}
    secs = time.perf_counter() - t
    return ({d: t.issue[order] for d, t in tables.items()},
            {d: t.score[order] for d, t in tables.items()}, secs)


def chosen_cut(score: np.ndarray, truth: np.ndarray, scored: np.ndarray,
               least: float = 3.0, clean_rate: float = 0.01) -> float:
    """How the cuts were chosen, on one strength: the lowest cut that reaches the best F1
    there (recall first among equals), but at least ``least`` robust spreads (nearer the
    median is no outlier, whatever one set holds) and marking at most ``clean_rate`` of
    the clean images."""
    seen = np.floor(score[scored] * 100) / 100
    cuts = np.unique(np.concatenate([seen, seen + 0.01]))  # at a score and just above it
    f1 = np.array([prf(score >= c, truth, scored)[2] for c in cuts])
    clean = np.sort(score[scored & ~truth])[::-1]
    allowed = int(clean_rate * len(clean))
    low = float(clean[allowed]) + 0.01 if allowed < len(clean) else -np.inf
    return max(float(cuts[np.flatnonzero(f1 >= f1.max() - 1e-9)[0]]), least, low)


def best_cut(score: np.ndarray, truth: np.ndarray, scored: np.ndarray) -> tuple[float, float]:
    """The cut on ``score`` with the best F1 over the ``scored`` images, and that F1."""
    best = (float("inf"), 0.0)
    for cut in np.unique(np.floor(score[scored & truth] * 100) / 100):
        f = prf(score >= cut, truth, scored)[2]
        if f > best[1]:
            best = (float(cut), f)
    return best


def cleanvision(root: Path, paths: list[str]) -> dict[str, np.ndarray]:
    """CleanVision's marks on the folder (image order), by defect (none where it has no
    check for it)."""
    from cleanvision import Imagelab

    lab = Imagelab(filepaths=[str(root / p) for p in paths], verbose=False)
    types = sorted({t for _, _, cv in DEFECTS.values() for t in cv})
    lab.find_issues({t: {} for t in types}, n_jobs=1, verbose=False)  # one core: shared host
    issues = lab.issues.reindex([str(root / p) for p in paths])
    return {d: np.logical_or.reduce([issues[f"is_{t}_issue"].to_numpy(bool) for t in cv])
            for d, (_, _, cv) in DEFECTS.items() if cv}


def prf(marked: np.ndarray, truth: np.ndarray, scored: np.ndarray) -> tuple[float, float, float]:
    """Precision, recall and F1 of ``marked`` against ``truth`` over the ``scored`` images."""
    m, t = marked[scored], truth[scored]
    tp = float((m & t).sum())
    p = tp / max(float(m.sum()), 1.0)
    r = tp / max(float(t.sum()), 1.0)
    return p, r, 2 * p * r / max(p + r, 1e-12)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=300)
    ap.add_argument("--per-defect", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-cleanvision", action="store_true")
    ap.add_argument("--photos", type=int, default=0,
                    help="use this many 256-500 px photographs in place of CIFAR's 32 px")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / ".bench-venv" / "site"))
    work = Path(tempfile.mkdtemp(prefix="quality-bench-"))
    try:
        _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> None:
    """Inject, ingest, mark and score at every strength under ``work``; print the table."""
    data = clean_images(work, args.per_class, args.photos)
    n = len(data[1])
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(n)
    chosen = {d: np.sort(perm[k * args.per_defect:(k + 1) * args.per_defect])
              for k, d in enumerate(DEFECTS)}
    injected = np.zeros(n, bool)
    injected[np.concatenate(list(chosen.values()))] = True
    # Images grey to begin with are grey in a colour dataset too: truth for ``grey``.
    native_grey = np.array([float(np.ptp(np.asarray(im, np.int16), axis=2).mean()) < 2.0
                            for im in data[1]])
    rows, rates = [], {}
    for strength in STRENGTHS:
        root = work / f"set-{strength}"
        paths = write_set(root, data, chosen, strength)
        mine, scores, secs = ours(root, work / "runs", paths)
        theirs = {} if args.no_cleanvision else cleanvision(root, paths)
        print(f"{strength}: our kinds {secs:.1f} s on {n} images", flush=True)
        for d in DEFECTS:
            truth = np.zeros(n, bool)
            truth[chosen[d]] = True
            if d == "grey":
                truth |= native_grey & ~injected
            scored = ~injected | truth  # the other defects' images are left out
            rows.append((d, strength, prf(mine[d], truth, scored),
                         prf(theirs[d], truth, scored) if d in theirs else None))
            if strength == TUNED:
                cut, f1 = best_cut(scores[d], truth, scored)
                print(f"  {d}: F1-best cut {cut:.2f} (F1 {f1:.2f}); chosen cut "
                      f"{chosen_cut(scores[d], truth, scored):.2f}", flush=True)
                rates[d] = (float(mine[d][~injected & ~truth].mean()),
                            float(theirs[d][~injected & ~truth].mean()) if d in theirs
                            else None)
    report(rows, rates, n, args.per_defect, "256-500 px photographs" if args.photos
           else "CIFAR-10 mini train images")


def report(rows: list, rates: dict, n: int, per_defect: int, what: str) -> None:
    """Print the P/R/F1 table (markdown) and the clean images' mark rates."""
    print(f"\n{n} {what}, {per_defect} per defect; cuts chosen on CIFAR-10 mini's "
          f"'{TUNED}', the others held out\n")
    print("| defect | strength | ours P | ours R | ours F1 | CleanVision P | R | F1 |")
    print("|---|---|---|---|---|---|---|---|")
    for d, s, (p, r, f), cv in rows:
        theirs = " | ".join(f"{v:.2f}" for v in cv) if cv else "– | – | –"
        print(f"| {d} | {s}{' (tuned)' if s == TUNED else ''} | {p:.2f} | {r:.2f} | {f:.2f} "
              f"| {theirs} |")
    print("\n| kind | clean images marked (ours) | (CleanVision) |\n|---|---|---|")
    for d, (mine, theirs) in rates.items():
        print(f"| {d} | {100 * mine:.2f}% | "
              f"{'–' if theirs is None else f'{100 * theirs:.2f}%'} |")


if __name__ == "__main__":
    main()
