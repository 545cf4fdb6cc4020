"""Exact Euclidean nearest neighbours: every brute-force search of the pipeline.

On the CPU, faiss's flat index (BLAS products with a fused top-k: at 50,000 × 64 and k = 5
it took 5.1 s on one core where blocks of torch products with ``topk`` took 13.4 s, the
same neighbours; docs/benchmarks.md "Exact neighbours"); on a GPU, blocks of torch
products. Both paths give the same answer and are tested against each other.
"""

from __future__ import annotations

import numpy as np

# Distances held at a time by the torch path: ~100 MB, so memory stays flat in N.
BLOCK_DISTANCES = 25_000_000


def _on_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def _drop_self(idx: np.ndarray, dist: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``k + 1`` neighbours of each base row (N, k + 1) less the row itself: (N, k) each.
    Among exact copies the row need not come first (or at all), so it is found, not
    assumed."""
    own = idx == np.arange(len(idx))[:, None]
    own[~own.any(1), -1] = True  # no self among them: the farthest goes instead
    order = np.argsort(own, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(idx, order, 1), np.take_along_axis(dist, order, 1)


def torch_knn(base: np.ndarray, queries: np.ndarray | None, k: int, device: str
              ) -> tuple[np.ndarray, np.ndarray]:
    """The search by blocks of torch matrix products on ``device`` (the GPU path; on the
    CPU, what the faiss path is tested against). ``queries`` None: the base rows
    themselves, each without itself. Returns as :func:`knn_query`."""
    import torch

    b = torch.from_numpy(np.ascontiguousarray(base, np.float32)).to(device)
    q_all = b if queries is None else \
        torch.from_numpy(np.ascontiguousarray(queries, np.float32)).to(device)
    bsq = (b * b).sum(1)
    m = len(q_all)
    idx = np.empty((m, k), np.int64)
    dist = np.empty((m, k), np.float32)
    block = max(64, BLOCK_DISTANCES // max(len(base), 1))
    for s in range(0, m, block):
        q = q_all[s:s + block]
        d2 = torch.addmm(bsq[None, :], q, b.T, alpha=-2).add_((q * q).sum(1)[:, None])
        if queries is None:  # not its own neighbour
            rows = torch.arange(len(q), device=d2.device)
            d2[rows, rows + s] = float("inf")
        val, nn = torch.topk(d2, k, dim=1, largest=False, sorted=True)
        idx[s:s + block] = nn.cpu().numpy()
        dist[s:s + block] = val.clamp_min_(0).sqrt_().cpu().numpy()
    return idx, dist


def faiss_knn(base: np.ndarray, queries: np.ndarray | None, k: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """The search by faiss's flat (exact) index on every core. Returns as
    :func:`knn_query`."""
    import faiss

    m = len(base) if queries is None else len(queries)
    if k == 0:
        return np.empty((m, 0), np.int64), np.empty((m, 0), np.float32)
    b = np.ascontiguousarray(base, np.float32)
    index = faiss.IndexFlatL2(b.shape[1])
    index.add(b)
    own = queries is None
    d2, idx = index.search(b if own else np.ascontiguousarray(queries, np.float32), k + own)
    idx = idx.astype(np.int64)
    dist = np.sqrt(np.maximum(d2, 0)).astype(np.float32)
    return _drop_self(idx, dist, k) if own else (idx, dist)


def knn_query(base: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``base`` (N, d) to every row of ``queries`` (M, d).

    Returns
    -------
    indices : int64 (M, min(k, N)), distances : float32 (M, min(k, N)), Euclidean,
    nearest first
    """
    k = min(k, len(base))
    if _on_gpu():
        return torch_knn(base, queries, k, "cuda")
    return faiss_knn(base, queries, k)


def exact_neighbours(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest other points of every point of ``x`` (N, D), nearest first.

    Returns
    -------
    indices : int64 (N, min(k, N - 1)), never the point itself; distances : float32, the
    same shape, Euclidean
    """
    k = max(0, min(k, len(x) - 1))
    if _on_gpu():
        return torch_knn(x, None, k, "cuda")
    return faiss_knn(x, None, k)
