"""More like this: a sample's nearest samples across every class of the run.

The space is the one the label evidence and the findings search (the features' PCA to
:data:`SPACE_DIMS` dimensions, fitted once per features file: :func:`~.embedding.run_pca`),
so "near" here is what the review list's evidence calls near. The search is exact (faiss
on the CPU, torch on a GPU: :func:`~.neighbours.knn_query`): one query against the run's
rows is a single matrix product, milliseconds at 50,000 samples.
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.errors import InputError
from worker.pipeline.map.embedding import run_pca
from worker.pipeline.map.neighbours import knn_query
from worker.pipeline.number_params import check
from worker.pipeline.storage.rundir import RunDir

SPACE_DIMS = 50  # the evidence's space (map.clustering.feature_neighbours)


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
    idx, dist = knn_query(x, x[index:index + 1], min(k + 1, len(x)))
    keep = idx[0] != index  # itself, wherever ties put it
    return idx[0][keep][:k], dist[0][keep][:k]
