"""Exact neighbours on the CPU: faiss's flat index against blocks of torch products
(worker/pipeline/map/neighbours.py), the same search, in the same run.

    PYTHONPATH=. .venv/bin/python -m bench.exact_knn [--n 50000] [--repeats 2]

Two searches the pipeline makes, on real data: the copy-robust key index (findings/
warps.py: 64-dim mirror-invariant keys of CIFAR-10's first N train photographs, k = 5) and
the map's neighbours (embedding.py: the same photographs' 50-dim PCA of their 8×8 RGB
thumbnails standing in for features, k = 90, the t-SNE's 3 × perplexity). Prints each
path's best time, the ratio torch / faiss, and how many neighbour lists agree (ties may
swap places).
"""

from __future__ import annotations

import argparse

import numpy as np

from bench.common import cifar_train_images, machine, timed


def main() -> None:
    import torch

    from worker.pipeline.findings.warps import copy_views
    from worker.pipeline.map.embedding import pca_reduce
    from worker.pipeline.map.neighbours import faiss_knn, torch_knn

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    thumbs = cifar_train_images(a.n)
    keys = copy_views(thumbs).key
    small = torch.nn.functional.adaptive_avg_pool2d(
        torch.from_numpy(thumbs).permute(0, 3, 1, 2).float(), 8).reshape(len(thumbs), -1)
    feats = pca_reduce(small.numpy(), 50)
    print(f"# exact neighbours, torch blocks vs faiss flat · {machine()} · "
          f"{torch.get_num_threads()} torch threads", flush=True)
    for name, x, k in (("key index", keys, 5), ("map neighbours", feats, 90)):
        t_torch, ref = timed(lambda x=x, k=k: torch_knn(x, None, k, "cpu"), a.repeats)
        t_faiss, got = timed(lambda x=x, k=k: faiss_knn(x, None, k), a.repeats)
        same = np.mean([set(p) == set(q) for p, q in zip(ref[0], got[0], strict=True)])
        print(f"{name}: n={len(x):,} d={x.shape[1]} k={k}: torch {t_torch:.2f} s, faiss "
              f"{t_faiss:.2f} s, ratio={t_torch / t_faiss:.2f}x; lists equal {same:.4f}",
              flush=True)


if __name__ == "__main__":
    main()
