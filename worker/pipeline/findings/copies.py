"""The copy test that the duplicate and leak kinds share: which candidate pairs are
copies of one picture, and the pixel match a copy needs in this dataset.

- Candidates are each sample's ``K_CANDIDATES`` nearest samples in the map's PCA space
  that lie within ``CANDIDATE_RATIO`` × the data's typical nearest-neighbour distance.
- A candidate pair is a copy when its pixel match (findings/pixels.py) reaches the cut,
  or, for runs without images, when its feature distance is within ``FEATURE_ONLY`` × the
  typical.
- The cut (:func:`pixel_cut`) is the threshold or, where more is needed, what different
  pictures of this dataset reach: the 99.9th percentile of the match between each sample
  and its 10th to 20th nearest samples (findings/detectors/duplicate.py says why).
"""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings.pixels import match_pairs

K_CANDIDATES = 5
CANDIDATE_RATIO = 1.5
FEATURE_ONLY = 0.3


NULL_NEIGHBOURS = (10, 20)  # which neighbours stand for different pictures
NULL_QUANTILE = 0.999


def pixel_cut(views: np.ndarray | None, neighbours: np.ndarray, threshold: float) -> float:
    """The pixel match a copy needs in this dataset: ``threshold``, raised to what
    different pictures reach here (module docstring)."""
    lo, hi = NULL_NEIGHBOURS
    hi = min(hi, neighbours.shape[1])
    if views is None or hi <= lo:
        return threshold
    n = len(neighbours)
    a = np.repeat(np.arange(n, dtype=np.int64), hi - lo)
    null = match_pairs(views, a, views, neighbours[:, lo:hi].ravel())
    return max(threshold, float(np.quantile(null, NULL_QUANTILE)))


def copy_pairs(neighbours: np.ndarray, ratio: np.ndarray, views_a: np.ndarray | None,
               views_b: np.ndarray | None, threshold: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs that are copies (module docstring).

    Parameters
    ----------
    neighbours : int64 (N, k), each row's nearest rows of the other side, nearest first
    ratio : float (N, k), their distances over the typical nearest-neighbour distance
    views_a, views_b : grey views (findings/pixels.py) of the rows and of the neighbours'
        side, or None for runs without images (feature distance alone decides)
    threshold : the pixel match a copy needs

    Returns
    -------
    pairs : int64 (P, 2), (row, neighbour) of each copy
    best : float32 (N,), each row's best pixel match among its candidates (without
        images: 1 / (1 + its nearest ratio)), the score copies are ranked by
    """
    n = len(neighbours)
    kk = min(K_CANDIDATES, neighbours.shape[1])
    r = ratio[:, :kk]
    rows, cols = np.nonzero(r <= CANDIDATE_RATIO)
    a, b = rows.astype(np.int64), neighbours[rows, cols].astype(np.int64)
    close = r[rows, cols] <= FEATURE_ONLY
    best = np.zeros(n, np.float32)
    if views_a is None or views_b is None:
        best[:] = 1.0 / (1.0 + (r[:, 0] if kk else np.inf))
    elif len(a):
        m = match_pairs(views_a, a, views_b, b)
        close |= m >= threshold
        np.maximum.at(best, a, m)
    return np.stack([a[close], b[close]], axis=1), best
