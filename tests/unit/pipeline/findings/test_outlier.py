"""Islands of outliers: a batch of images from another source, filed under many labels,
each nearest to others of the batch, is one finding: listed together, shown together,
kept or dropped together in one undoable step. Real digits run with 30 injected line
drawings; the grouping itself on hand-made neighbour lists."""

from __future__ import annotations

import numpy as np
import pytest

from app.curate import review_queue as review
from app.curate.key_actions import run_action
from app.run_data import current_state, run_data
from worker.pipeline.errors import InputError
from worker.pipeline.findings.detectors.outlier import ISLAND_MIN, islands
from worker.pipeline.storage.curation_store import CurationStore


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


def test_a_batch_of_line_drawings_is_one_island_decided_together(island_root):
    from worker.pipeline.findings import View, get_kind

    data = run_data(island_root, "digits")
    table = data.findings["outlier"]
    injected = np.arange(1797, 1797 + 30)
    island = table.facts["island"]
    assert (island[injected] == 0).all() and (island >= 0).sum() == 30
    s = data.samples
    view = View(s.paths, s.classes, s.labels, (), np.zeros(len(s), bool), data.findings)
    why = get_kind("outlier").why(table, int(injected[0]), view)
    assert "one of an island of 30 outliers filed under" in why
    # shown together: the focused one first, then the others of its island
    items = review.related_images(data, current_state(data), int(injected[3]), "digits")
    assert items[0]["caption"].startswith(f"#{injected[3]} ")
    assert len(items) == min(30, review.ISLAND_SHOWN)
    # dropped together in one step, undone in one
    store = CurationStore(data.run.store)
    before = store.revision()
    changed = run_action(island_root, "digits",
                         {"sample": int(injected[5]), "action": "drop_island"})
    assert changed == 30 and store.revision() == before + 1
    assert not current_state(data).decisions.kept[injected].any()
    with pytest.raises(InputError, match="already dropped"):
        review.decide_island(island_root, "digits", int(injected[0]), "drop")
    store.undo()
    assert not any(int(s) in current_state(data).overrides for s in injected)
    assert run_action(island_root, "digits",
                      {"sample": int(injected[0]), "action": "keep_island"}) == 30
    assert current_state(data).decisions.kept[injected].all()
    store.undo()
    with pytest.raises(InputError, match="in no island"):
        review.decide_island(island_root, "digits", 0, "drop")
