"""Islands of outliers (worker/pipeline/findings/detectors/outlier.py ``islands``): a
batch of samples from another source, filed under many labels and each nearest to others
of the batch, is marked as one group; on hand-made neighbour lists."""

from __future__ import annotations

import numpy as np

from worker.pipeline.findings.detectors.outlier import ISLAND_MIN, islands


def _ring(members: list[int], k: int = 3) -> list[list[int]]:
    """Each member's neighbours: the next k members around the ring."""
    return [[members[(j + d) % len(members)] for d in range(1, k + 1)]
            for j in range(len(members))]


def test_islands_are_marked_groups_of_many_labels():
    n = 30
    nb = np.array([[(i + d) % n for d in range(1, 4)] for i in range(n)])
    labels = np.zeros(n, np.int64)
    marked = np.zeros(n, bool)
    a, b, c = list(range(0, 6)), list(range(10, 16)), list(range(20, 20 + ISLAND_MIN - 1))
    for group in (a, b, c):
        nb[group] = _ring(group)
        marked[group] = True
    labels[a] = [0, 1, 2, 0, 1, 2]  # three labels: an island
    labels[b] = [4, 4, 4, 5, 5, 5]  # two labels: a class's corner, not an island
    labels[c] = np.arange(len(c))   # too few members
    isl = islands(marked, nb, labels)
    assert (isl[a] == 0).all() and (isl[np.setdiff1d(np.arange(n), a)] == -1).all()
    # unmarked samples never join, even when their neighbours are an island's
    marked[a[0]] = False
    isl = islands(marked, nb, labels)
    assert isl[a[0]] == -1 and (isl[a[1:]] == 0).all()
