"""PCA then openTSNE on all samples together: one shared 2-D map.

The map must be shared across classes: a mislabeled "cat" that looks like a dog lands in
the dog region, far from the other cats, and only then does per-class DBSCAN call it noise.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from worker.pipeline.errors import InputError
from worker.pipeline.map.evidence import K_EVIDENCE
from worker.pipeline.map.neighbours import exact_neighbours
from worker.pipeline.number_params import PARAMS, check, group_params
from worker.pipeline.progress import Cancelled, ProgressFn, report
from worker.pipeline.sources.feature_values import MIN_MAP_SAMPLES, check_feature_values
from worker.pipeline.storage.rundir import RunDir, atomic_path, save_npy

# The defaults adapt to a small run (EmbeddingOptions.check_data); chosen values do not.
DEFAULT_PERPLEXITY = PARAMS["perplexity"].default
DEFAULT_PCA_DIMS = PARAMS["pca_dims"].default


@dataclass(frozen=True)
class EmbeddingOptions:
    """t-SNE settings; ``n_iter`` counts the iterations after early exaggeration.

    Each number is a parameter of the ``embedding`` group in worker/pipeline/number_params.py,
    which gives its default, range and help: the CLI's flags, the API's keywords, the form
    and the job record follow from there, so a new option is a field here and a line there.

    The iteration counts are below openTSNE's defaults (250 + 500): with its learning
    rate N/12 the map has converged by then. On 20k CIFAR ResNet-56 features, 150 + 300
    took 14.2 s instead of 19.3 s with the same 2-D 10-NN label agreement (0.853 vs
    0.852) and a 2% higher KL (docs/method.md).
    """

    pca_dims: int = DEFAULT_PCA_DIMS
    perplexity: float = DEFAULT_PERPLEXITY
    n_iter: int = PARAMS["n_iter"].default
    seed: int = 0
    gradient: str = "auto"  # "fft", "bh", or "auto": FFT from FFT_MIN_N points up
    exaggeration_iter: int = PARAMS["exaggeration_iter"].default

    def __post_init__(self) -> None:
        # Checked when the options are made (CLI, form, job record), before any work.
        for name in (*group_params("embedding"), "seed"):
            object.__setattr__(self, name, check(name, getattr(self, name)))
        if self.gradient not in ("auto", "fft", "bh"):
            raise InputError(f"--gradient must be auto, fft or bh, got {self.gradient!r}")

    def check_data(self, n: int, d: int) -> None:
        """The bounds the data set: perplexity < N/3 and pca-dims ≤ D. The defaults adapt to
        a small run instead (perplexity shrinks, PCA is skipped); a value the user chose is
        refused rather than silently changed."""
        if self.perplexity != DEFAULT_PERPLEXITY:
            check("perplexity", self.perplexity, high=(n - 1) / 3.0, strict=True,
                  why=f" (a third of the {n} samples)")
        if self.pca_dims != DEFAULT_PCA_DIMS:
            check("pca_dims", self.pca_dims, high=d, why=f" (the {d} feature dimensions)")


# FFT interpolation has a fixed cost per iteration that dominates small maps: on digits
# (1,797 points, 2 cores) FFT took 17 s and Barnes-Hut 3.7 s. From 10k points FFT wins.
FFT_MIN_N = 10_000
# Grid points per unit of embedding span for FFT gradients (openTSNE's default is 1). The
# grid grows with the map, so late iterations slow down; on 20k CIFAR ResNet-56 features
# 2 took 23.6 s instead of 57.7 s, with the same 10-NN label agreement in 2-D (0.852 vs
# 0.851) and a 4% higher final KL (2.61 vs 2.50).
FFT_INTS_IN_INTERVAL = 2
# Up to this many points the 3·perplexity nearest neighbours are found exactly, by blocks
# of BLAS distance products: at 20k points 1.7 s against 5.2 s for openTSNE's Annoy, at
# 50k 9.6 s against 14.1 s. Beyond it the quadratic cost loses to Annoy's approximation.
EXACT_KNN_MAX = 60_000


# PCA is fitted on at most this many rows (a seeded random sample beyond it) and applied
# block by block, so a 1.28M × 512 features file never needs a float32 copy in memory.
# Up to PCA_FIT_MAX rows nothing changes: the fit sees every row, as before.
PCA_FIT_MAX = 100_000
BLOCK = 65_536


def check_features(features: np.ndarray) -> np.ndarray:
    """Check that ``features`` are an (N, D) array the map can take (finite, of a size
    float32 holds, rows not all alike: :mod:`~worker.pipeline.sources.feature_values`),
    block by block (a memory-mapped file is never read whole), and return them as they
    are (float16/32, maybe mapped)."""
    if features.ndim != 2 or len(features) == 0:
        raise InputError(f"features must be a non-empty (N, D) array, got shape {features.shape}")
    check_feature_values(features, "features",
                         nan_fix="re-run 'curator extract' or check the model weights")
    return features


@dataclass
class Pca:
    """Features reduced by PCA, and the fit that reduced them.

    x : float32 (N, k); mean : float32 (D,) and components : float32 (k, D), both None when
    nothing was reduced (k ≥ D)
    """

    x: np.ndarray
    mean: np.ndarray | None = None
    components: np.ndarray | None = None


def fit_pca(features: np.ndarray, dims: int, seed: int = 0) -> Pca:
    """PCA to ``min(dims, D, N)`` dimensions, fitted on at most PCA_FIT_MAX rows.

    Parameters
    ----------
    features : ndarray, shape (N, D), float16 or float32, possibly memory-mapped
    """
    from sklearn.decomposition import PCA

    n, d = features.shape
    k = min(dims, d, n)
    if k >= d:
        return Pca(np.asarray(features, dtype=np.float32))
    pca = PCA(n_components=k, random_state=seed)
    if n <= PCA_FIT_MAX:
        x = pca.fit_transform(np.asarray(features, dtype=np.float32)).astype(np.float32)
    else:
        rows = np.sort(np.random.default_rng(seed).choice(n, PCA_FIT_MAX, replace=False))
        pca.fit(np.asarray(features[rows], np.float32))
        x = np.empty((n, k), dtype=np.float32)
        for start in range(0, n, BLOCK):
            x[start:start + BLOCK] = pca.transform(
                np.asarray(features[start:start + BLOCK], dtype=np.float32))
    return Pca(x, pca.mean_.astype(np.float32), pca.components_.astype(np.float32))


def pca_reduce(features: np.ndarray, dims: int, seed: int = 0) -> np.ndarray:
    """:func:`fit_pca`'s reduced features: float32 (N, min(dims, D, N))."""
    return fit_pca(features, dims, seed).x


def run_pca(run: RunDir, dims: int, seed: int = 0) -> Pca:
    """:func:`fit_pca` of the run's features, fitted once per features file and kept in
    ``cache/``: the embed step, the label evidence and the findings all read the map's PCA,
    and each fitted it again (4.2 s apiece at 50,000 × 1,280 on 2 cores)."""
    key = run.step("extract").get("cache_key")
    features = run.load_array(run.features, "extract", mmap=True)
    path = run.cache / f"pca-{key}-{dims}-{seed}-{PCA_FIT_MAX}.npz"
    if key and path.is_file():
        with np.load(path) as f:
            if len(f["x"]) == len(features):
                return Pca(f["x"], f["mean"], f["components"])
    pca = fit_pca(features, dims, seed)
    if key and pca.mean is not None:
        with atomic_path(path, ".npz") as tmp:
            np.savez(tmp, x=pca.x, mean=pca.mean, components=pca.components)
    return pca


def annoy_neighbours(x: np.ndarray, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The k approximate nearest other points of every point (openTSNE's Annoy index, the
    one its t-SNE uses by default), nearest first: the same shapes as
    :func:`exact_neighbours`, for maps too large for brute force."""
    from openTSNE.nearest_neighbors import Annoy

    indices, distances = Annoy(x, k, metric="euclidean", n_jobs=os.cpu_count() or 1,
                               random_state=seed).build()
    return indices.astype(np.int64), distances.astype(np.float32)


def _affinities(perplexity: float, knn: tuple[np.ndarray, np.ndarray]):
    """openTSNE perplexity affinities from precomputed neighbours ``knn``."""
    from openTSNE import affinity
    from openTSNE.nearest_neighbors import PrecomputedNeighbors

    return affinity.PerplexityBasedNN(perplexity=perplexity, n_jobs=os.cpu_count() or 1,
                                      knn_index=PrecomputedNeighbors(*knn))


def _initial_map(x: np.ndarray, seed: int) -> np.ndarray:
    """openTSNE's PCA initialisation of the map, float (N, 2). Features of one dimension
    have one principal component: they are given a second of zeros, so the map starts on
    their line and openTSNE's jitter (as for any data) lets the t-SNE spread it."""
    from openTSNE import initialization

    if x.shape[1] < 2:
        x = np.hstack([x, np.zeros_like(x)])
    return initialization.pca(x, random_state=seed)


def tsne_2d(features: np.ndarray, opts: EmbeddingOptions,
            progress: ProgressFn | None = None) -> np.ndarray:
    """PCA + openTSNE (FFT gradients, all cores, fixed seed).

    Parameters
    ----------
    features : ndarray, shape (N, D)

    Returns
    -------
    ndarray of float32, shape (N, 2)
    """
    return tsne_with_neighbours(features, opts, progress)[0]


def tsne_with_neighbours(features: np.ndarray, opts: EmbeddingOptions,
                         progress: ProgressFn | None = None,
                         pca: Callable[[], np.ndarray] | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tsne_2d`, also returning the exact nearest neighbours it found.

    ``pca`` gives the features reduced as :func:`pca_reduce` reduces them, once they are
    checked (:func:`run_pca`'s, kept for the run); by default they are reduced here.

    Returns
    -------
    embedding : ndarray of float32, shape (N, 2)
    neighbours : ndarray of int64, shape (N, 3·perplexity), nearest first, in the PCA
        space: exact up to ``EXACT_KNN_MAX`` points, from openTSNE's Annoy index above.
    """
    from openTSNE import TSNE

    x = check_features(features)
    n = len(x)
    if n < MIN_MAP_SAMPLES:
        raise InputError(f"t-SNE needs at least {MIN_MAP_SAMPLES} samples, got {n}")
    opts.check_data(n, x.shape[1])
    # openTSNE needs 3·perplexity < N; the default shrinks for tiny datasets.
    perplexity = min(opts.perplexity, (n - 1) / 3.0)
    x = pca() if pca else pca_reduce(x, opts.pca_dims, opts.seed)
    ee = opts.exaggeration_iter
    total = ee + opts.n_iter
    seen = {"offset": 0, "last": 0, "stop": False}

    def on_iter(iteration: int, error: float, embedding: np.ndarray) -> bool:
        # openTSNE restarts its counter after early exaggeration; keep one running count.
        if iteration < seen["last"]:
            seen["offset"] = ee
        seen["last"] = iteration
        try:
            report(progress, min(total, seen["offset"] + iteration), total,
                   f"embed: t-SNE KL {error:.3f}")
        except Cancelled:
            seen["stop"] = True
            return True
        return False

    if opts.gradient not in ("auto", "fft", "bh"):
        raise InputError(f"unknown t-SNE gradient {opts.gradient!r}: use auto, fft or bh")
    method = opts.gradient if opts.gradient != "auto" else ("fft" if n >= FFT_MIN_N else "bh")
    tsne = TSNE(perplexity=perplexity, n_iter=opts.n_iter, early_exaggeration_iter=ee,
                negative_gradient_method=method, ints_in_interval=FFT_INTS_IN_INTERVAL,
                n_jobs=os.cpu_count() or 1, random_state=opts.seed, callbacks=on_iter,
                callbacks_every_iters=25, verbose=False)
    k = min(n - 1, int(3 * perplexity))
    knn = exact_neighbours(x, k) if n <= EXACT_KNN_MAX else annoy_neighbours(x, k, opts.seed)
    emb = np.asarray(tsne.fit(affinities=_affinities(perplexity, knn),
                              initialization=_initial_map(x, opts.seed)), dtype=np.float32)
    if seen["stop"]:
        raise Cancelled("embedding cancelled")
    report(progress, total, total, "embed: done")
    return emb, knn[0]


def embed(run: RunDir, opts: EmbeddingOptions, progress: ProgressFn | None = None) -> np.ndarray:
    """Read ``features.npy`` (memory-mapped), write ``embedding.npy`` (N, 2) float32 and
    ``neighbours.npy`` (N, K_EVIDENCE) int64, the t-SNE's own neighbours (exact up to
    EXACT_KNN_MAX points, approximate above), so the cluster step's label evidence needs
    no second neighbour search (5.5 s at 50,000 samples, hours by brute force at 1.28M)."""
    emb, knn = tsne_with_neighbours(run.load_array(run.features, "extract", mmap=True), opts,
                                    progress, lambda: run_pca(run, opts.pca_dims, opts.seed).x)
    neighbours = run.path / "neighbours.npy"
    if knn.shape[1] >= min(K_EVIDENCE, len(emb) - 1):
        save_npy(neighbours, knn[:, :K_EVIDENCE])
    else:
        neighbours.unlink(missing_ok=True)  # stale: the cluster step computes them anew
    save_npy(run.embedding, emb)
    features_key = run.step("extract").get("cache_key")
    run.mark_step("embed", **asdict(opts), features_key=features_key)
    return emb
