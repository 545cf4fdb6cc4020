"""Per-class DBSCAN re-cluster time on a 5,000-point class, against plain sklearn DBSCAN.

The class comes from a real run's shared t-SNE map (default ``runs/cifar10n``, 5,000
points per class); without one, from a 5,000-point openTSNE map of CIFAR pixels. For a
sweep of eps values around the automatic one, it times:

- ``recluster``: our cached neighbour index answering a new eps (what a slider does);
- ``cold``: building that index and clustering once;
- ``sklearn``: ``DBSCAN(eps, min_samples).fit_predict`` on the same points,

and checks the labels are identical. Prints medians and a final ``speedup=`` line
(sklearn / recluster).

    python -m bench.dbscan [--run runs/cifar10n]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from bench.common import machine, timed
from worker.pipeline.clustering import ClassClusterer, auto_eps
from worker.pipeline.dbscan import sklearn_dbscan


def class_points(run: Path) -> tuple[np.ndarray, str]:
    if (run / "embedding.npy").is_file():
        from worker.pipeline.rundir import RunDir

        labels = RunDir(run).read_samples().labels
        emb = np.load(run / "embedding.npy")
        c = int(np.argmax(np.bincount(labels)))
        return emb[labels == c], f"{run}, class {c}"
    from bench.tsne import cifar_pixels
    from worker.pipeline.embedding import EmbeddingOptions, tsne_2d

    return tsne_2d(cifar_pixels(5000), EmbeddingOptions()), "openTSNE of 5,000 CIFAR images"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=Path, default=Path("runs/cifar10n"))
    ap.add_argument("--min-samples", type=int, default=5)
    args = ap.parse_args()
    pts, source = class_points(args.run)
    ms = args.min_samples
    base_eps = auto_eps(pts, ms)
    sweep = [base_eps * f for f in np.linspace(0.5, 2.0, 16)]
    print(f"# DBSCAN on {len(pts)} points ({source}), min_samples={ms} · {machine()}")
    cold, _ = timed(lambda: ClassClusterer(pts, 2 * base_eps).labels(base_eps, ms), repeat=5)
    cc = ClassClusterer(pts, 2 * base_eps)
    ours, theirs = [], []
    for eps in sweep:
        t_ours, a = timed(lambda eps=eps: cc.labels(eps, ms), repeat=7)
        t_sk, b = timed(lambda eps=eps: sklearn_dbscan(pts, eps, ms), repeat=7)
        if not np.array_equal(a, b):
            raise SystemExit(f"labels differ at eps={eps}")
        ours.append(t_ours)
        theirs.append(t_sk)
    o, s = statistics.median(ours), statistics.median(theirs)
    print(f"labels identical at all {len(sweep)} eps values (auto eps {base_eps:.3f})")
    print(f"recluster median {o * 1e3:6.2f} ms  (max {max(ours) * 1e3:.2f})")
    print(f"cold      best   {cold * 1e3:6.2f} ms  (index build + cluster)")
    print(f"sklearn   median {s * 1e3:6.2f} ms  (max {max(theirs) * 1e3:.2f})")
    print(f"cold_speedup={s / cold:.1f}")
    print(f"speedup={s / o:.1f}")


if __name__ == "__main__":
    main()
