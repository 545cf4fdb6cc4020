"""DBSCAN (worker/pipeline/map/dbscan.py) against scikit-learn: the same labels, one pass
that answers any eps, and ``noise_until``, the eps at which a point stops being noise."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.pipeline.map.dbscan import dbscan_once, noise_until, sklearn_dbscan


def test_labels_identical_to_sklearn_on_random_blobs():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 300))
        centres = rng.normal(0, 5, (int(rng.integers(1, 5)), 2))
        pts = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 1, (n, 2))
        pts = pts.astype(np.float32)
        if trial % 4 == 0:
            pts = np.round(pts, 1)  # duplicates and distances exactly equal to eps
        eps = 0.1 if trial % 3 == 0 else float(rng.uniform(0.05, 1.5))
        ms = int(rng.integers(1, 12))
        ours = dbscan_once(pts, eps, ms)
        assert np.array_equal(ours, sklearn_dbscan(pts, eps, ms)), (trial, n, eps, ms)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 250), grid=st.sampled_from([0.0, 0.1, 0.5]),
       line=st.booleans(), eps=st.sampled_from([0.05, 0.1, 0.3, 1.0, 2.5, 40.0]),
       ms=st.integers(1, 15), seed=st.integers(0, 2**16))
def test_one_shot_dbscan_equals_sklearn_at_any_eps(n, grid, line, eps, ms, seed):
    """dbscan_once (k-nearest core test + Delaunay components) on blobs, grids with
    duplicates and distances exactly at eps, and points all on one line (no triangulation),
    including eps larger than the whole class."""
    rng = np.random.default_rng(seed)
    pts = rng.normal(0, 2, (n, 2))
    if grid:
        pts = np.round(pts / grid) * grid
    if line:
        pts[:, 1] = 0.5 * pts[:, 0] if seed % 2 else 0.0
    assert np.array_equal(dbscan_once(pts, eps, ms), sklearn_dbscan(pts, eps, ms))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 120), ms=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_noise_until_is_where_sklearn_stops_calling_a_point_noise(n, ms, seed):
    """The oracle: just below the threshold scikit-learn calls the point noise, at it
    (within float rounding) not."""
    rng = np.random.default_rng(seed)
    pts = np.concatenate([rng.normal(0, 1, (n, 2)), rng.uniform(-5, 5, (3, 2))])
    which = rng.choice(len(pts), min(6, len(pts)), replace=False)
    until = noise_until(pts, which, ms)
    for i, eps in zip(which, until, strict=True):
        if not np.isfinite(eps):
            assert ms > len(pts)
            continue
        if eps > 0:
            assert sklearn_dbscan(pts, eps * (1 - 1e-9), ms)[i] == -1
        # eps 0: the point is core at any eps (min_samples 1, or duplicates). Checked at
        # 1e-6, not less: scikit-learn's brute-force neighbours compute |x|² + |y|² - 2x·y,
        # so a point's distance to itself can round to ~1e-8 (OpenBLAS's Haswell kernel)
        # and it would miss itself at eps 1e-12; the random points lie far more than 1e-6
        # apart, so at 1e-6 only the point and its duplicates are neighbours, as at 0.
        assert sklearn_dbscan(pts, max(eps * (1 + 1e-9), 1e-6), ms)[i] != -1
