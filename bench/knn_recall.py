"""Recall of the approximate neighbour index against exact search, and their times.

Above ``EXACT_KNN_MAX`` points the embed step finds the t-SNE's neighbours (which the
label evidence and every finding kind read: worker/pipeline/findings/index.py) with
openTSNE's Annoy index instead of exact search. This measures what that costs: on
synthetic class-structured features (bench/synth.py) in the same PCA space, recall@k of
Annoy's neighbours against exact ones for a random sample of queries, and the time of each
(exact search's for every point extrapolated from the sample; the baseline).

    python -m bench.knn_recall --n 200000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.common import machine
from bench.synth import SynthSpec, write_synthetic
from worker.pipeline.map.embedding import annoy_neighbours, pca_reduce
from worker.pipeline.map.evidence import K_EVIDENCE
from worker.pipeline.map.neighbours import knn_query


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--classes", type=int, default=200)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=90, help="neighbours searched (the t-SNE's 90)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/curator-knn"))
    args = ap.parse_args()
    spec = SynthSpec(n=args.n, classes=args.classes, class_offset=0.5)
    feats, _ = write_synthetic(args.work / f"data-{args.n}-{args.classes}", spec)
    x = pca_reduce(np.load(feats, mmap_mode="r"), 50)
    print(f"# knn recall: {args.n:,} x 512 -> PCA-50, {args.classes} classes · {machine()}")
    t0 = time.perf_counter()
    approx, _ = annoy_neighbours(x, args.k)
    annoy_s = time.perf_counter() - t0
    q = np.sort(np.random.default_rng(0).choice(args.n, args.queries, replace=False))
    t0 = time.perf_counter()
    exact, _ = knn_query(x, x[q], args.k + 1)
    exact_s = (time.perf_counter() - t0) * args.n / args.queries
    exact = exact[:, 1:]  # the query itself
    for k in (1, 10, K_EVIDENCE):
        hits = np.mean([len(np.intersect1d(approx[i, :k], exact[j, :k])) / k
                        for j, i in enumerate(q)])
        print(f"recall@{k:<3} {hits:.4f}")
    print(f"Annoy (all {args.n:,} points, k={args.k}) {annoy_s:.1f} s; exact search "
          f"(extrapolated from {args.queries:,} queries) {exact_s:.1f} s; "
          f"ratio exact/Annoy {exact_s / annoy_s:.2f}x")


if __name__ == "__main__":
    main()
