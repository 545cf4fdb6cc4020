"""More like this: a sample's nearest samples across every class of the run.

The space is the one the label evidence and the findings search (the features' PCA to
:data:`SPACE_DIMS` dimensions, fitted once per features file: :func:`~.embedding.run_pca`),
so "near" here is what the review list's evidence calls near. The search is exact: faiss's
flat index over the run's rows, built once per run and features file and kept in the
process (:func:`search_space`), so a query is one matrix product over the rows and not a
read of the PCA file and a copy into a new index (that was 17 ms of the 17 ms at 50,000
samples; docs/benchmarks.md, "More like this"). An image file that is not in the run is
searched the same way, from its features projected into the same space
(:mod:`.image_query`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from cachetools import LRUCache, cached
from cachetools.keys import hashkey

from worker.pipeline.errors import InputError
from worker.pipeline.map.embedding import Pca, run_pca
from worker.pipeline.number_params import check
from worker.pipeline.storage.rundir import RunDir

SPACE_DIMS = 50  # the evidence's space (map.clustering.feature_neighbours)
# Runs whose search space a process keeps: 1.28M samples in PCA-50 are 256 MB, kept once
# in the index (the rows the answers index are the PCA file's, read once).
SPACES_KEPT = 2


@dataclass(frozen=True)
class SearchSpace:
    """A run's rows in the search's space and the exact index over them.

    ``pca``: the run's PCA (``pca.x`` float32 (N, d) the rows); ``index``: a faiss
    ``IndexFlatL2`` holding the same rows.
    """

    pca: Pca
    index: Any


def _space_key(run: RunDir) -> tuple:
    """Which features file the space is of: the extract step's cache key and the file's
    stamp (a re-extraction, or the file replaced, builds it again)."""
    st = run.features.stat()
    return hashkey(str(run.path.resolve()), run.step("extract").get("cache_key"),
                   st.st_mtime_ns, st.st_size)


@cached(LRUCache(maxsize=SPACES_KEPT), key=_space_key, lock=threading.Lock())
def search_space(run: RunDir) -> SearchSpace:
    """The run's :class:`SearchSpace`, built on the first query and kept in the process."""
    import faiss

    pca = run_pca(run, SPACE_DIMS)
    x = np.ascontiguousarray(pca.x, np.float32)
    index = faiss.IndexFlatL2(x.shape[1])
    index.add(x)
    return SearchSpace(Pca(x, pca.mean, pca.components), index)


def nearest_rows(space: SearchSpace, query: np.ndarray, k: int, exclude: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of ``space`` nearest ``query``, nearest first, by the exact search.

    Parameters
    ----------
    space : the run's rows, (N, d) in the PCA space, and their index
    query : float32 (d,)
    exclude : a row left out of the answer (the query's own sample), wherever ties put it

    Returns
    -------
    indices : int64 (min(k, N - (exclude is not None)),), distances : float32, the same
    shape, Euclidean
    """
    extra = int(exclude is not None)
    n = len(space.pca.x)
    q = np.ascontiguousarray(np.asarray(query, np.float32)[None])
    d2, idx = space.index.search(q, min(k + extra, n))
    idx, dist = idx[0].astype(np.int64), np.sqrt(np.maximum(d2[0], 0)).astype(np.float32)
    if extra:
        keep = idx != exclude
        idx, dist = idx[keep], dist[keep]
    return idx[:k], dist[:k]


def nearest_samples(run: RunDir, index: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` samples nearest sample ``index``, nearest first, the sample itself left out.

    Returns
    -------
    indices : int64 (min(k, N - 1),), distances : float32, the same shape, Euclidean in
    the PCA space

    Raises
    ------
    InputError
        ``index`` is not a sample of the run, or ``k`` is out of range.
    """
    k = int(check("similar_k", k))
    space = search_space(run)
    x = space.pca.x
    if isinstance(index, bool) or not (isinstance(index, int | np.integer)
                                        and 0 <= index < len(x)):
        raise InputError(f"no sample {index!r}: the run's samples are 0 to {len(x) - 1}")
    return nearest_rows(space, x[index], k, exclude=int(index))
