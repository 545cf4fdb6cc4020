"""The embedding's large-N settings against the 50k run's, on one 100,000-row sample.

Above ``EXACT_KNN_MAX`` (60,000) points the t-SNE's neighbours come from openTSNE's Annoy
index instead of an exact search, and above ``PCA_FIT_MAX`` rows PCA is fitted on a
sample. Both change the map only through approximations; this measures what they cost
and save on the same 100,000 synthetic rows (bench/synth.py, the 1,000-class setting):
the time of the embedding, and the 2-D 10-NN label agreement (the share of each point's
10 nearest neighbours *on the map* with its true label), with exact neighbours and a
PCA fitted on every row (the settings every run up to 60,000 points gets) as baseline.

    python -m bench.tsne_scale [--n 100000]
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from bench.common import machine
from bench.synth import SynthSpec, write_synthetic
from worker.pipeline.map import embedding


def map_agreement(emb: np.ndarray, labels: np.ndarray, k: int = 10) -> float:
    """Share of each point's k nearest neighbours on the 2-D map with its label."""
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=k + 1).fit(emb).kneighbors(emb, return_distance=False)
    return float((labels[nn[:, 1:]] == labels[:, None]).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/curator-scale"))
    args = ap.parse_args()
    spec = SynthSpec(n=args.n, classes=1000, class_offset=0.5)
    feats, labels_csv = write_synthetic(args.work / f"data-{args.n}-tsne", spec)
    x = np.load(feats, mmap_mode="r")
    with open(labels_csv, newline="") as fh:
        truth = np.array([int(r["true_label"][1:]) for r in csv.DictReader(fh)])
    opts = embedding.EmbeddingOptions()
    rows = []
    settings = (("exact neighbours, PCA on every row (the 50k settings)", 10**9, 10**9),
                ("Annoy neighbours, PCA on 50,000 rows (the 1.28M settings)", 0, 50_000))
    for name, exact_max, pca_max in settings:
        embedding.EXACT_KNN_MAX, embedding.PCA_FIT_MAX = exact_max, pca_max
        t0 = time.perf_counter()
        emb, _ = embedding.tsne_with_neighbours(x, opts)
        seconds = time.perf_counter() - t0
        rows.append((name, seconds, map_agreement(emb, truth)))
        print(f"{name:<58} {seconds:7.1f} s   2-D 10-NN agreement {rows[-1][2]:.4f}",
              flush=True)
    print(f"# {args.n:,} x {spec.dim}, {spec.classes} classes · {machine()}")
    print(f"time ratio (baseline / large-N settings): {rows[0][1] / rows[1][1]:.2f}x; "
          f"agreement difference: {rows[1][2] - rows[0][2]:+.4f}")


if __name__ == "__main__":
    main()
