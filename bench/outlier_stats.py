"""A candidate second view for outliers (issue 46, item 4): rarity in low-level image
statistics, measured on the injected sources without the network's features.

Each image's thumbnail gives four numbers: mean saturation, contrast (the luminance's
standard deviation), mean luminance and edge density. They are standardised robustly
(median, IQR) and an image's rarity is its mean distance to its 10 nearest images in that
space over the median of the same: a lone image in statistics space scores high, a common
kind of image (CIFAR's own greyscale photographs, 1.5% of it) does not. It prints, per
injected source, the median rarity and how many reach 3 (a cut in the range of the
outlier kind's 2.5–5), for the sources the cuts were chosen on (``mixed``) and the
held-out ones, and what the natural greyscale images of the set look like beside the
injected grey ones.

    python -m bench.outlier_stats

Only ingest runs (thumbnails and injection), so it takes seconds.
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors

from bench.common import cifar_mini_folder, machine
from worker.pipeline.metrics import auroc
from worker.pipeline.runner import ensure_ingested
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.sources.inject import read_truth
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.runlock import run_lock

K = 10
CUT = 3.0
OUT = "/tmp/curator-bench/outlier-stats"


def image_stats(thumbs: np.ndarray) -> np.ndarray:
    """(N, 4) float32: saturation, contrast, brightness, edge density of uint8 (N, S, S, 3)."""
    x = thumbs.astype(np.float32) / 255
    hi, lo = x.max(-1), x.min(-1)
    sat = np.where(hi > 0, (hi - lo) / np.maximum(hi, 1e-6), 0).mean((1, 2))
    lum = x @ np.array([0.299, 0.587, 0.114], np.float32)
    edges = np.abs(np.diff(lum, axis=2)).mean((1, 2)) + np.abs(np.diff(lum, axis=1)).mean((1, 2))
    return np.stack([sat, lum.std((1, 2)), lum.mean((1, 2)), edges], 1)


def rarity(stats: np.ndarray, k: int = K) -> np.ndarray:
    """Mean distance to the k nearest in robust-standardised statistics, over its median."""
    iqr = np.subtract(*np.percentile(stats, [75, 25], axis=0))
    z = (stats - np.median(stats, axis=0)) / np.maximum(iqr, 1e-6)
    d, _ = NearestNeighbors(n_neighbors=k + 1).fit(z).kneighbors(z)
    d = d[:, 1:].mean(1)
    return d / np.median(d)


def main() -> None:
    root = cifar_mini_folder()
    print(f"# rarity in image statistics, CIFAR-10 mini train (2,000) + 40 injected outliers "
          f"· {machine()}")
    print("| sources | AUROC | reach 3 (injected / all) | by source: median rarity, found |")
    print("|---|---:|---:|---|")
    for sources in ("mixed", "held-out"):
        run = RunDir(f"{OUT}/{sources}")
        with run_lock(run, "bench"):
            ensure_ingested(run, DatasetOptions(parse_spec(f"folder:{root}/train"),
                                                inject_outliers=40, outlier_sources=sources,
                                                seed=0))
        thumbs = run.load_array(run.thumbnails, "ingest")
        stats = image_stats(thumbs)
        r = rarity(stats)
        truth = [t for t in read_truth(run.path) if t["kind"] == "outlier"]
        injected = np.zeros(len(thumbs), bool)
        injected[[t["index"] for t in truth]] = True
        per = []
        for how in sorted({t["how"] for t in truth}):
            idx = [t["index"] for t in truth if t["how"] == how]
            per.append(f"{how} {np.median(r[idx]):.2f}, {int((r[idx] >= CUT).sum())}/{len(idx)}")
        print(f"| {sources} | {auroc(r, injected):.3f} | {int((injected & (r >= CUT)).sum())} / "
              f"{int((r >= CUT).sum())} | {'; '.join(per)} |")
        if sources == "held-out":
            grey = [t["index"] for t in truth if t["how"] == "grey"]
            natural = (stats[:, 0] < 0.02) & ~injected
            print(f"\nnatural greyscale images: {int(natural.sum())}, contrast "
                  f"{stats[natural, 1].min():.3f}–{stats[natural, 1].max():.3f}; injected grey: "
                  f"contrast {stats[grey, 1].min():.3f}–{stats[grey, 1].max():.3f}; all images: "
                  f"median contrast {np.median(stats[~injected, 1]):.3f}, 1st percentile "
                  f"{np.percentile(stats[~injected, 1], 1):.3f}")


if __name__ == "__main__":
    main()
