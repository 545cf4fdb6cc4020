"""The duplicate kind's grouping (worker/pipeline/findings/detectors/duplicate.py): exact
units are the lowest index of equal hashes, star groups never chain and split a chain at
its centre (Hypothesis), and a family grouped with a kept near copy is found."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.pipeline.findings.detectors.duplicate import exact_units, star_groups

# --------------------------------------------------------------------------- grouping
hashes_st = st.lists(st.integers(0, 6), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(hashes=hashes_st)
def test_exact_units_are_the_lowest_index_of_equal_hashes(hashes):
    h = np.asarray(hashes, np.uint64)
    unit = exact_units(h, len(h))
    assert unit.dtype == np.int64
    for i, v in enumerate(hashes):
        assert unit[i] == hashes.index(v)
    assert (exact_units(None, len(h)) == np.arange(len(h))).all()


@st.composite
def grouping_inputs(draw) -> tuple[np.ndarray, np.ndarray, int]:
    n = draw(st.integers(1, 30))
    h = np.asarray(draw(st.lists(st.integers(0, n + 5), min_size=n, max_size=n)), np.uint64)
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    pairs = draw(st.lists(pair, max_size=40)) if n > 1 else []
    return exact_units(h, n), np.asarray(pairs, np.int64).reshape(-1, 2), n


@settings(max_examples=300, deadline=None)
@given(inputs=grouping_inputs())
def test_star_groups_never_chain(inputs):
    units, pairs, n = inputs
    group = star_groups(units, pairs, n)
    assert group.shape == (n,) and group.dtype == np.int64
    ids = group[group >= 0]
    g = int(ids.max()) + 1 if len(ids) else 0
    assert set(ids.tolist()) == set(range(g))  # numbered 0..G-1
    # Near pairs between units (exact copies are one unit), in both directions.
    near = {(int(units[a]), int(units[b])) for a, b in pairs.tolist() if units[a] != units[b]}
    near |= {(b, a) for a, b in near}
    sizes = np.bincount(units, minlength=n)
    # Every pair has an end in a group: an end left out was a partner of a sample another
    # star took, and it is not alike that star's centre (so it is the one copy kept).
    for a, b in pairs.tolist():
        assert group[a] >= 0 or group[b] >= 0
    assert (np.bincount(group[group >= 0]) >= 2).all()  # no group of one
    for i in range(n):
        assert group[i] == group[units[i]]  # a sample follows its exact unit
        touched = sizes[units[i]] > 1 or any(u == units[i] for u, _ in near)
        assert group[i] < 0 or touched  # nothing else is grouped
        if sizes[units[i]] > 1:
            assert group[i] >= 0  # exact copies always are
    for k in range(g):
        members = {int(u) for u in units[group == k]}
        # A star: one unit (the centre) is a near partner of every other unit of it.
        assert any(all(u == c or (u, c) in near for u in members) for c in members), \
            (k, members, near)


def test_star_groups_split_a_chain_at_its_centre():
    """A≈B≈C with A and C not alike: B (most partners) is the centre of all three. With
    A≈B≈C≈D, D is not alike B: it never joins B's star (single linkage would)."""
    units = np.arange(4)
    assert star_groups(units, np.array([[0, 1], [1, 2]]), 4).tolist() == [0, 0, 0, -1]
    chain = star_groups(units, np.array([[0, 1], [1, 2], [2, 3]]), 4)
    assert chain[0] == chain[1] == chain[2] >= 0 and chain[3] != chain[0]
    # Exact copies with no near partner are a group of their own; the rest stay out.
    assert star_groups(np.array([0, 1, 0, 3]), np.empty((0, 2), np.int64), 4).tolist() == \
        [0, -1, 0, -1]


def test_a_family_grouped_with_a_kept_near_copy_is_found():
    """Samples 0 (source) and 3 (its injected exact copy) are both dropped as copies of
    sample 1, a near copy kept in their group: the injected copy was removed, so the
    family is found (recall 1.0)."""
    from worker.pipeline.findings.detectors.duplicate import duplicate_scores

    marked = np.array([True, False, False, True])
    related = np.array([1, -1, -1, 1])
    group = np.array([0, 0, -1, 0])
    truth = [{"index": 3, "source": 0, "kind": "duplicate", "how": "exact"}]
    scores = duplicate_scores(marked, related, truth, group)
    assert scores["recall"] == 1.0 and scores["precision"] == 1.0
    # Without the groups only the kept copy can tell: the family looks missed.
    assert duplicate_scores(marked, related, truth)["recall"] == 0.0
