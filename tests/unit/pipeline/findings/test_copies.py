"""The copy test's calibration (worker/pipeline/findings/copies.py): a set too small for
the ring its reference is read from reads the best matches instead."""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings.copies import (
    NearMatches,
    near_matches,
    ring,
)
from worker.pipeline.findings.pixels import grey_views
from worker.pipeline.map.neighbours import exact_neighbours


def test_a_set_too_small_for_the_ring_reads_the_best_matches():
    rng = np.random.default_rng(0)
    thumbs = rng.integers(0, 255, (8, 32, 32, 3), dtype=np.uint8)
    nbrs = exact_neighbours(grey_views(thumbs).reshape(8, -1).astype(np.float32), 7)[0]
    assert ring(nbrs) is None
    near = near_matches(grey_views(thumbs), nbrs)
    assert near.reference is None
    assert near.tail_cut(1.0) == NearMatches(near.best, near.best).tail_cut(1.0)
