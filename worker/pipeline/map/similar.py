"""More like this: a sample's nearest samples across every class of the run.

The space is the one the label evidence and the findings search (the features' PCA to
:data:`SPACE_DIMS` dimensions, fitted once per features file: :func:`~.embedding.run_pca`),
so "near" here is what the review list's evidence calls near. The search is exact (faiss
on the CPU, torch on a GPU: :func:`~.neighbours.knn_query`): one query against the run's
rows is a single matrix product, milliseconds at 50,000 samples. An image file that is
not in the run is searched the same way, from its features projected into the same space
(:mod:`.image_query`).
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.errors import InputError
from worker.pipeline.map.embedding import run_pca
from worker.pipeline.map.neighbours import knn_query
from worker.pipeline.number_params import check
from worker.pipeline.storage.rundir import RunDir

SPACE_DIMS = 50  # the evidence's space (map.clustering.feature_neighbours)


def nearest_rows(x: np.ndarray, query: np.ndarray, k: int, exclude: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of ``x`` nearest ``query``, nearest first, by the exact search.

    Parameters
    ----------
    x : float32 (N, d), the run's rows in the PCA space
    query : float32 (d,)
    exclude : a row left out of the answer (the query's own sample), wherever ties put it

    Returns
    -------
    indices : int64 (min(k, N - (exclude is not None)),), distances : float32, the same
    shape, Euclidean
    """
    extra = int(exclude is not None)
    idx, dist = knn_query(x, np.asarray(query, np.float32)[None], min(k + extra, len(x)))
    idx, dist = idx[0], dist[0]
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
    x = run_pca(run, SPACE_DIMS).x
    if isinstance(index, bool) or not (isinstance(index, int | np.integer)
                                        and 0 <= index < len(x)):
        raise InputError(f"no sample {index!r}: the run's samples are 0 to {len(x) - 1}")
    return nearest_rows(x, x[index], k, exclude=int(index))
