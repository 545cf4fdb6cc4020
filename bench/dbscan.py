"""One class's DBSCAN, ours (``dbscan_once``) against plain sklearn DBSCAN, across eps.

The class comes from a real run's shared t-SNE map (``--run``; its largest class); without
one, from a 5,000-point openTSNE map of CIFAR pixels. For a sweep of eps values from 0.5×
to 8× the automatic one (automatic eps on a map of 1,000 classes lands near a class's own
diameter, which is where a pair list grows to O(n²)), it times:

- ``ours``: ``worker.pipeline.map.dbscan.dbscan_once`` (k-nearest core test + Delaunay
  components), what the cluster step and the app run;
- ``sklearn``: ``DBSCAN(eps, min_samples).fit_predict`` on the same points,

and checks the labels are identical. Prints medians per eps and a final ``speedup=`` line
(sklearn / ours, median over the sweep).

    python -m bench.dbscan [--run runs/cifar10n]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from bench.common import machine, timed
from worker.pipeline.map.clustering import auto_eps
from worker.pipeline.map.dbscan import dbscan_once, sklearn_dbscan


def class_points(run: Path) -> tuple[np.ndarray, str]:
    if (run / "embedding.npy").is_file():
        from worker.pipeline.storage.rundir import RunDir

        labels = RunDir(run).read_samples().labels
        emb = np.load(run / "embedding.npy")
        c = int(np.argmax(np.bincount(labels)))
        return emb[labels == c], f"{run}, class {c}"
    from bench.tsne import cifar_pixels
    from worker.pipeline.map.embedding import EmbeddingOptions, tsne_2d

    return tsne_2d(cifar_pixels(5000), EmbeddingOptions()), "openTSNE of 5,000 CIFAR images"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=Path, default=Path("runs/cifar10n"))
    ap.add_argument("--min-samples", type=int, default=5)
    args = ap.parse_args()
    pts, source = class_points(args.run)
    ms = args.min_samples
    base_eps = auto_eps(pts, ms)
    print(f"# DBSCAN on {len(pts)} points ({source}), min_samples={ms} · {machine()}")
    print(f"automatic eps {base_eps:.3f}")
    ratios = []
    for factor in (0.5, 1.0, 2.0, 4.0, 8.0):
        eps = base_eps * factor
        t_ours, a = timed(lambda eps=eps: dbscan_once(pts, eps, ms), repeat=5)
        t_sk, b = timed(lambda eps=eps: sklearn_dbscan(pts, eps, ms), repeat=3)
        if not np.array_equal(a, b):
            raise SystemExit(f"labels differ at eps={eps}")
        ratios.append(t_sk / t_ours)
        print(f"eps {factor:3.1f}x auto: ours {t_ours * 1e3:8.2f} ms   sklearn "
              f"{t_sk * 1e3:8.2f} ms   {t_sk / t_ours:6.1f}x   labels identical")
    print(f"speedup={statistics.median(ratios):.1f}")


if __name__ == "__main__":
    main()
