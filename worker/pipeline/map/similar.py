"""More like this: a sample's nearest samples across every class of the run.

The space is the one the label evidence and the findings search (the features' PCA to
:data:`SPACE_DIMS` dimensions, fitted once per features file: :func:`~.embedding.run_pca`),
so "near" here is what the review list's evidence calls near. The search is exact, over
the run's rows, read once per run and features file and kept in the process
(:func:`search_space`), so a query is one matrix-vector product over them, not a read of
the PCA file and a copy into a new index (that was 17 ms of the 17 ms at 50,000 samples;
docs/benchmarks.md, "More like this"). An image file that is not in the run is
searched the same way, from its features projected into the same space
(:mod:`.image_query`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

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
# Rows beyond k measured again directly (nearest_rows): rows the product's rounding could
# have ranked just outside the k.
RECHECK = 16


@dataclass(frozen=True)
class SearchSpace:
    """A run's rows in the search's space, with what the exact search needs of them.

    ``pca``: the run's PCA (``pca.x`` float32 (N, d) the rows); ``sq``: float32 (N,), each
    row's squared norm.
    """

    pca: Pca
    sq: np.ndarray


def _space_key(run: RunDir) -> tuple:
    """Which features file the space is of: the extract step's cache key and the file's
    stamp (a re-extraction, or the file replaced, builds it again)."""
    try:
        st = run.features.stat()
    except FileNotFoundError:
        raise InputError(f"run {run.run_id} has no features.npy: run 'curator extract --out "
                         f"{run.path}' first") from None
    return hashkey(str(run.path.resolve()), run.step("extract").get("cache_key"),
                   st.st_mtime_ns, st.st_size)


# A second ask while the first builds the space (the Curate page builds it as it opens)
# waits for that build: two fits at once on two cores finish later than one.
@cached(LRUCache(maxsize=SPACES_KEPT), key=_space_key, condition=threading.Condition())
def search_space(run: RunDir) -> SearchSpace:
    """The run's :class:`SearchSpace`, built on the first query and kept in the process."""
    pca = run_pca(run, SPACE_DIMS)
    x = np.ascontiguousarray(pca.x, np.float32)
    return SearchSpace(Pca(x, pca.mean, pca.components), np.einsum("ij,ij->i", x, x))


def nearest_rows(space: SearchSpace, query: np.ndarray, k: int, exclude: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of ``space`` nearest ``query``, nearest first (ties by row), by the
    exact search.

    One matrix-vector product gives every squared distance as ‖x‖² − 2x·q + ‖q‖²; the
    nearest ``k`` and a margin are then measured again directly, ‖x − q‖², because the
    product's rounding can leave a point's distance to itself at 1e-2 instead of 0 (a
    sample's own file). For one query this is faster than faiss's flat index, built once
    (24 ms against faiss's 44 ms p95 at 1.28M samples; docs/benchmarks.md, "More like
    this").

    Parameters
    ----------
    space : the run's rows, (N, d) in the PCA space
    query : float32 (d,)
    exclude : a row left out of the answer (the query's own sample)

    Returns
    -------
    indices : int64 (min(k, N - (exclude is not None)),), distances : float32, the same
    shape, Euclidean
    """
    x = space.pca.x
    q = np.asarray(query, np.float32)
    d2 = space.sq - 2.0 * (x @ q) + float(q @ q)
    if exclude is not None:
        d2[exclude] = np.inf
    m = min(k, len(x) - (exclude is not None))
    take = min(len(x), m + RECHECK)
    cand = np.argpartition(d2, take - 1)[:take] if take < len(x) else np.arange(len(x))
    if exclude is not None:
        cand = cand[cand != exclude]
    exact = np.einsum("ij,ij->i", x[cand] - q, x[cand] - q)
    order = np.lexsort((cand, exact))[:m]
    return cand[order].astype(np.int64), np.sqrt(exact[order]).astype(np.float32)


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
