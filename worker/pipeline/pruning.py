"""Pruning by value: which of the samples the curation keeps to train on when only a
fraction of them is wanted (the ``pruned@F`` subsets, worker/train/subsets.py).

The value score is the prototype metric of Sorscher et al. (NeurIPS 2022): a sample's
cosine distance, in the run's features, to its class's centroid (k-means with k = 1 over
the samples the curation keeps, the features centred on their mean first). Small: a
typical example of its class ("easy"); large: an unusual one ("hard"). It needs no
training, only one pass over the features the run already has.

Every method keeps the fraction of each class (the class proportions of what the
curation keeps stay as they are):

- ``coverage``: coverage-centric selection (CCS, Zheng et al., ICLR 2023) on that score:
  the class's score range cut into :data:`STRATA` equal-width strata, the budget spread
  evenly over them, the smallest strata first (what they cannot use goes to the rest),
  random within a stratum: typical, unusual and in-between examples alike;
- ``easy``: the closest to the prototype (Sorscher: best when data is scarce);
- ``hard``: the farthest (best when data is plentiful).

``pruned@F`` uses ``coverage``, chosen a priori (CCS holds across pruning rates in its
paper) and reported on 10,000 CIFAR images. ``python -m bench.pruning --part choose``
measured the three on 5,000 others since and preferred ``easy``; reported on the 10,000
(data it was not chosen on), ``easy`` came out behind ``coverage`` at both fractions, so
``coverage`` stays (docs/benchmarks.md, "Pruning by value"). Each stays selectable by
name: ``pruned-easy@F`` and so on.
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.choices import DEFAULT_PRUNING, PRUNINGS

__all__ = ["DEFAULT_PRUNING", "PRUNINGS", "choose", "prototype_distance", "quota"]
STRATA = 50  # CCS's k for CIFAR-10
BLOCK = 65_536  # rows per block: the scores of a million 1,280-d samples in bounded memory


def prototype_distance(features: np.ndarray, labels: np.ndarray,
                       keep: np.ndarray) -> np.ndarray:
    """Each sample's cosine distance to its class's centroid among the kept samples.

    Parameters
    ----------
    features : (N, D) float array (float16 is read in float32 blocks)
    labels : (N,) int, the class of each sample (the one it would train with)
    keep : (N,) bool, the samples the centroids are taken over

    Returns
    -------
    (N,) float32 in [0, 2]: 1 − cos(x − mean, centroid); NaN for a sample whose class has
    no kept member, and for a row that is not finite (it takes no part in the centroids).
    """
    n, n_classes = len(features), int(labels.max()) + 1 if len(labels) else 0
    finite = np.ones(n, bool)
    for lo in range(0, n, BLOCK):
        finite[lo:lo + BLOCK] = np.isfinite(np.asarray(features[lo:lo + BLOCK])).all(axis=1)
    keep = keep & finite
    mean = np.zeros(features.shape[1], np.float64)
    for lo in range(0, n, BLOCK):
        rows = np.asarray(features[lo:lo + BLOCK], np.float32)[keep[lo:lo + BLOCK]]
        mean += rows.sum(axis=0, dtype=np.float64)
    mean /= max(int(keep.sum()), 1)

    def unit(lo: int) -> np.ndarray:
        x = np.asarray(features[lo:lo + BLOCK], np.float32) - mean.astype(np.float32)
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    sums = np.zeros((n_classes, features.shape[1]), np.float64)
    for lo in range(0, n, BLOCK):
        k = keep[lo:lo + BLOCK]
        np.add.at(sums, labels[lo:lo + BLOCK][k], unit(lo)[k])
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    centroids = (sums / np.maximum(norms, 1e-12)).astype(np.float32)
    out = np.empty(n, np.float32)
    for lo in range(0, n, BLOCK):
        y = labels[lo:lo + BLOCK]
        out[lo:lo + BLOCK] = 1.0 - np.einsum("ij,ij->i", unit(lo), centroids[y])
    out[(norms[labels, 0] == 0) | ~finite] = np.nan
    return out


def quota(count: int, fraction: float) -> int:
    """How many of a class's ``count`` kept samples a fraction keeps: at least one, halves
    rounded up."""
    return min(count, max(1, int(fraction * count + 0.5))) if count else 0


def coverage_pick(scores: np.ndarray, n: int, rng: np.random.Generator,
                  strata: int = STRATA) -> np.ndarray:
    """CCS's stratified sampling: positions of ``n`` of ``scores``, spread evenly over
    ``strata`` equal-width score ranges, the smallest first.

    Parameters
    ----------
    scores : (M,) float
    n : how many to pick, ≤ M
    rng : the seeded generator that picks within a stratum

    Returns
    -------
    (n,) int positions into ``scores``
    """
    lo, hi = float(scores.min()), float(scores.max())
    edges = np.linspace(lo, hi, strata + 1)[1:-1]
    bins = np.searchsorted(edges, scores, side="right")
    members = [np.flatnonzero(bins == b) for b in range(strata)]
    members = sorted((m for m in members if len(m)), key=len)
    picked, left = [], n
    for k, m in enumerate(members):
        take = min(len(m), left // (len(members) - k))
        picked.append(rng.choice(m, size=take, replace=False))
        left -= take
    return np.concatenate(picked) if picked else np.empty(0, np.int64)


def choose(scores: np.ndarray, labels: np.ndarray, pool: np.ndarray, fraction: float,
           method: str, seed: int) -> np.ndarray:
    """The samples ``pruned@fraction`` keeps out of ``pool``, class by class.

    Parameters
    ----------
    scores : (N,) float, :func:`prototype_distance`
    labels : (N,) int
    pool : (M,) int, the sample indices to choose from (what the curation keeps)
    fraction : in (0, 1]
    method : one of :data:`PRUNINGS`
    seed : seeds ``coverage``'s draws within a stratum

    Returns
    -------
    sorted int64 sample indices, :func:`quota` of each class of ``pool``
    """
    if method not in PRUNINGS:
        raise ValueError(f"unknown pruning {method!r}")
    rng = np.random.default_rng(seed)
    out = []
    for c in np.unique(labels[pool]):
        members = pool[labels[pool] == c]
        want = quota(len(members), fraction)
        # A sample without a score (a feature row that is not finite) comes last, by any
        # method: scored ones first, in the method's order.
        scored = members[np.isfinite(scores[members])]
        rest = members[~np.isfinite(scores[members])]
        s = scores[scored]
        if method == "coverage":
            first = scored[coverage_pick(s, min(want, len(scored)), rng)] if len(scored) \
                else scored
        else:
            order = np.argsort(s, kind="stable")
            first = scored[order if method == "easy" else order[::-1]][:want]
        out.append(np.concatenate([first, rest[:want - len(first)]]))
    return np.sort(np.concatenate(out)).astype(np.int64) if out else np.empty(0, np.int64)
