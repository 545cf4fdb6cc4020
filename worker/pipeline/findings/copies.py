"""The copy test that the duplicate and leak kinds share: which candidate pairs are
copies of one picture, and the evidence a copy needs in this dataset.

- Candidates are each sample's ``K_CANDIDATES`` nearest samples in the map's PCA space
  that lie within ``CANDIDATE_RATIO`` × the data's typical nearest-neighbour distance.
- A candidate pair is a copy when its pixel match (findings/pixels.py) passes two tests,
  or, for runs without images only, when its feature distance is within ``FEATURE_ONLY``
  × the typical:

  1. **Beyond what different pictures of this dataset reach** (:func:`tail_cut`): the
     reference is a sample's best match among its nearest samples of rank ``RING`` (the
     11th to 20th nearest), for up to ``REFERENCE_ROWS`` samples drawn at random. A
     family of up to ten copies lies nearer than that, so these are different pictures
     however many copies the data hold: the reference, and the cut, stay where they are
     from 0% to 50% copies (docs/method.md, "What the cuts are calibrated on"). Each
     sample's best match among its *nearest* samples would be its copy wherever it has
     one: at 42% of the images in a copy pair that lifted the cut to 0.9997 and marked the
     exact copies alone. On Fisher's z (atanh of the match) the reference has a robust
     centre and spread (median, IQR / 1.349); a copy must lie ``TAIL_PROPOSE`` spreads
     above the centre (``TAIL_DROP`` to be dropped by default), and above the kind's cut.
     The cut follows the data: 0.99 on 8-px digits, where different writers' 1s match
     0.995, and 0.91 on CIFAR-10 photographs.
  2. **Standing out from the sample's own near pictures** (:func:`stands_out`, a ratio
     test as Lowe's for local features): ``1 − match`` is at most ``RATIO_PROPOSE``
     (``RATIO_DROP`` to drop) times the sample's *distinctness*, ``1 −`` its
     ``REFERENCE_RANK + 1``-th best match among its ``K_REFERENCE`` nearest (a group of up
     to that many copies still leaves a different picture there), or, where more of
     those pass the tail test (a family of more copies), of the best match below them
     (:func:`distinctness`).

  Neither alone holds on data it was not chosen on: the tail alone marks close pictures in
  a sparse corner, the ratio alone marks a lone look-alike where the other near pictures
  are poor matches (digits written as JPEG files: 6 marks). docs/benchmarks.md, "Copies:
  proposed or dropped", has the distributions the numbers were chosen on and the rows they
  were not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from worker.pipeline.findings.pixels import match_pairs

K_CANDIDATES = 5
CANDIDATE_RATIO = 1.5
FEATURE_ONLY = 0.3

# The two tests (module docstring). Chosen on scikit-learn's digits, the same digits as
# JPEG files (no copies in either) and CIFAR-10 mini with our injector's copies; reported
# on other data in docs/benchmarks.md. The tails were first 3.5 and 5.0 spreads above a
# reference of each sample's best among its K_REFERENCE nearest; on the ring's reference
# (RING) the cuts they gave on the sets they were chosen on lie 5.0 and 6.6 spreads up
# (digits) and 4.8 and 6.8 (CIFAR-10 mini with 5% copies), and 5.0 and 6.5 are taken
# (docs/benchmarks.md, "Copies at any rate").
K_REFERENCE = 10
REFERENCE_RANK = 3
TAIL_PROPOSE, TAIL_DROP = 5.0, 6.5
RATIO_PROPOSE, RATIO_DROP = 0.15, 0.1
# The tail test's reference (test 1): neighbours of these ranks (0-based, end excluded) of
# at most REFERENCE_ROWS samples drawn at random.
RING = (10, 20)
REFERENCE_ROWS = 5000


def robust_centre(x: np.ndarray) -> tuple[float, float]:
    """The median of ``x`` (any shape, finite) and its robust spread, IQR / 1.349 (the
    standard deviation, for a normal distribution)."""
    q1, mid, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    return float(mid), float(q3 - q1) / 1.349


@dataclass(frozen=True)
class NearMatches:
    """Each sample's pixel matches with its ``K_REFERENCE`` nearest samples, summed up.

    Attributes
    ----------
    best : float32 (N,), its best match (the closest picture it resembles)
    distinct : float32 (N,), ``1 −`` its closest different picture's match
        (:func:`distinctness`), ≥ 1e-3
    reference : float32 (R,), what different pictures of the dataset reach (module
        docstring, test 1); None: :attr:`best` stands for it (a set too small for the
        ring)
    """

    best: np.ndarray
    distinct: np.ndarray
    reference: np.ndarray | None = None

    def _centre(self) -> tuple[float, float]:
        """The centre and robust spread of :attr:`reference` on Fisher's z."""
        ref = self.best if self.reference is None else self.reference
        mid, spread = robust_centre(np.arctanh(np.clip(ref, -0.9999, 0.9999)))
        return mid, max(spread, 1e-6)

    def tail_cut(self, spreads: float) -> float:
        """The match ``spreads`` robust spreads above the centre of :attr:`reference` on
        Fisher's z (module docstring, test 1)."""
        mid, spread = self._centre()
        return float(np.tanh(mid + spreads * spread))

    def spreads(self, match: np.ndarray) -> np.ndarray:
        """How many robust spreads ``match`` (any shape) lies above the centre of
        :attr:`reference` on Fisher's z: the inverse of :meth:`tail_cut`, float32."""
        mid, spread = self._centre()
        return ((np.arctanh(np.clip(match, -0.9999, 0.9999)) - mid) / spread).astype(np.float32)


def reference_rows(n: int, seed: int = 0, most: int = REFERENCE_ROWS) -> np.ndarray:
    """The rows a tail test's reference is read from: at most ``most`` of ``n``, drawn at
    random (``seed``), sorted. int64 (R,)."""
    if n <= most:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, most, replace=False))


def ring(neighbours: np.ndarray) -> np.ndarray | None:
    """The reference neighbours of each row (module docstring, test 1): int64 (N, r), or
    None when the index holds fewer than two past ``RING[0]`` (a set of under 13)."""
    return neighbours[:, RING[0]:RING[1]] if neighbours.shape[1] > RING[0] + 1 else None


def near_matches(views: np.ndarray, neighbours: np.ndarray, seed: int = 0) -> NearMatches:
    """:class:`NearMatches` of grey views (N, S, S) and the neighbour index (N, k)."""
    n, k = len(neighbours), min(K_REFERENCE, neighbours.shape[1])
    if k == 0:
        return NearMatches(np.zeros(n, np.float32), np.ones(n, np.float32))
    a = np.repeat(np.arange(n, dtype=np.int64), k)
    m = match_pairs(views, a, views, neighbours[:, :k].ravel()).reshape(n, k)
    far, reference = ring(neighbours), None
    if far is not None:
        rows = reference_rows(n, seed)
        reference = _ring_best(views, rows, far[rows])
    near = NearMatches(m.max(1).astype(np.float32), np.ones(n, np.float32),
                       None if reference is None else reference.astype(np.float32))
    return replace(near, distinct=distinctness(
        m, near.tail_cut(TAIL_PROPOSE),
        None if far is None else lambda rows: _ring_best(views, rows, far[rows])))


def _ring_best(views: np.ndarray, rows: np.ndarray, far: np.ndarray) -> np.ndarray:
    """Each of ``rows``' best pixel match with its neighbours ``far`` (R, r): (R,)."""
    r = far.shape[1]
    return match_pairs(views, np.repeat(rows, r), views, far.ravel()).reshape(len(rows),
                                                                             r).max(1)


def distinctness(match: np.ndarray, cut: float,
                 beyond: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """``1 −`` each row's closest different picture among its matches (N, k): its
    ``REFERENCE_RANK + 1``-th best, or, when more of its matches pass the tail ``cut``
    (a family of more copies), the best below them; a row whose every match passes reads
    ``beyond(rows)`` (its best among farther neighbours; None: its worst match). float32
    (N,), at least 1e-3."""
    n, k = match.shape
    ordered = -np.sort(-match, axis=1)
    rank = np.maximum(np.minimum(REFERENCE_RANK, k - 1), (match >= cut).sum(1))
    inside = rank < k
    ref = np.where(inside, ordered[np.arange(n), np.minimum(rank, k - 1)], ordered[:, -1])
    if beyond is not None and not inside.all():
        rows = np.flatnonzero(~inside)
        ref[rows] = beyond(rows)
    return np.maximum(1.0 - ref, 1e-3).astype(np.float32)


def stands_out(match: np.ndarray, distinct: np.ndarray, ratio: float) -> np.ndarray:
    """Whether each pair's match passes the ratio test at ``ratio`` (module docstring,
    test 2): ``1 − match ≤ ratio × distinct``, both (P,). bool (P,)."""
    return (1.0 - match) <= ratio * distinct


def copy_pairs(neighbours: np.ndarray, ratio: np.ndarray, views_a: np.ndarray | None,
               views_b: np.ndarray | None, threshold: float,
               distinct: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs that are copies (module docstring).

    Parameters
    ----------
    neighbours : int64 (N, k), each row's nearest rows of the other side, nearest first
    ratio : float (N, k), their distances over the typical nearest-neighbour distance
    views_a, views_b : grey views (findings/pixels.py) of the rows and of the neighbours'
        side, or None for runs without images (feature distance alone decides)
    threshold : the pixel match a copy needs
    distinct : float32 (N,), each row's distinctness (:class:`NearMatches`); a pair must
        also pass the ratio test at ``RATIO_PROPOSE`` (None: no ratio test)

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
    best = np.zeros(n, np.float32)
    if views_a is None or views_b is None:
        close = r[rows, cols] <= FEATURE_ONLY
        best[:] = 1.0 / (1.0 + (r[:, 0] if kk else np.inf))
    else:
        # With images the pixels decide: two different pictures can lie as close in
        # feature space as a copy does (docs/benchmarks.md, "Copies: proposed or dropped").
        m = match_pairs(views_a, a, views_b, b)
        close = m >= threshold
        if distinct is not None:
            close &= stands_out(m, distinct[a], RATIO_PROPOSE)
        np.maximum.at(best, a, m)
    return np.stack([a[close], b[close]], axis=1), best
