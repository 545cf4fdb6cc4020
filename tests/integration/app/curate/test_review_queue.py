"""The review list across classes (app/curate/review_queue.py) on real runs, no browser:
its rows, the confusion pairs, relabel to any class and the bulk actions, each one
undoable step; and an island of 30 injected line drawings listed, shown and decided
together."""

from __future__ import annotations

import numpy as np
import pytest

from app.curate import review_queue as review
from app.curate.key_actions import run_action
from app.run_data import current_state, run_data
from worker.pipeline.errors import InputError
from worker.pipeline.storage.curation_store import CurationStore


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


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


def _state(root):
    data = run_data(root, "digits")
    return data, current_state(data)


def test_the_queue_spans_every_class_most_likely_wrong_first(root):
    data, state = _state(root)
    rows = review.queue_rows(data, state, "digits")
    marks = review.finding_marks(data, state)
    listed = np.flatnonzero(np.logical_or.reduce(list(marks.values())))
    assert sorted(r["sample"] for r in rows) == listed.tolist()
    assert set(np.flatnonzero(state.decisions.flagged)) <= set(listed.tolist())
    # Each row names the kinds that mark it; the rule's flags are label findings.
    for r in rows:
        assert r["finding"].split(",") == [k for k, m in marks.items() if m[r["sample"]]]
    assert len({r["given"] for r in rows}) == len(data.samples.classes)  # all 10 digits
    scores = [r["score"] for r in rows]
    assert scores == sorted(scores, reverse=True)
    first = rows[0]
    i = first["sample"]
    assert first["id"] == str(i) and first["thumb"] == f"/thumb/digits/{i}.png"
    assert first["given"] == data.samples.classes[data.samples.labels[i]]
    assert first["state"] == "flagged" and first["now"] == ""
    assert first["suggested"] == data.samples.classes[data.suggested[i]]


def test_row_changes_turn_the_rows_of_one_revision_into_the_next(root):
    """After a keep, a drop and an eps change, the transaction from the old rows, applied
    to them, gives the new rows: nothing else is sent to the browser."""
    data, before = _state(root)
    old = review.queue_rows(data, before, "digits")
    store = CurationStore(data.run.store)
    store.set_overrides([old[0]["sample"]], "keep")
    store.set_overrides([int(np.flatnonzero(~before.decisions.flagged)[0])], "drop")
    code = int(data.samples.labels[old[-1]["sample"]])
    eps, ms = store.class_params()[code]
    store.set_class_params({code: (eps * 3, ms)})
    new = review.queue_rows(data, current_state(data), "digits")
    change = review.row_changes(old, new)
    assert change["async"] is False and change["add"] and change["update"]
    rows = {r["id"]: r for r in old}
    for r in change["remove"]:
        del rows[r["id"]]
    rows.update({r["id"]: r for r in change["add"] + change["update"]})
    assert sorted(rows.values(), key=lambda r: r["sample"]) == sorted(
        new, key=lambda r: r["sample"])
    assert len(change["update"]) + len(change["add"]) < len(new)  # not every row again
    assert review.row_changes(new, new) == {"add": [], "update": [], "remove": [],
                                            "async": False}


def test_confusion_counts_the_pairs_largest_first(root):
    data, state = _state(root)
    rows = review.queue_rows(data, state, "digits")
    pairs = review.confusion(rows, top=100)
    with_suggestion = [r for r in rows if r["suggested"]]
    assert sum(p["count"] for p in pairs) == len(with_suggestion)
    counts = [p["count"] for p in pairs]
    assert counts == sorted(counts, reverse=True)
    top = pairs[0]
    assert top["count"] == sum(1 for r in with_suggestion
                               if (r["given"], r["suggested"]) == (top["given"], top["suggested"]))


def test_relabel_to_any_class_keeps_it_and_undoes_in_one_step(root):
    data, state = _state(root)
    rows = review.queue_rows(data, state, "digits")
    a, b = rows[0]["sample"], rows[1]["sample"]
    store = CurationStore(data.run.store)
    store.set_overrides([a], "drop")
    # Not the suggestion: a class of the reviewer's choosing.
    target = next(c for c in data.samples.classes
                  if c not in (rows[0]["suggested"], rows[0]["given"], rows[1]["given"]))
    assert review.relabel_to(root, "digits", [a, b], target) == 3  # 2 relabels + 1 drop cleared
    state = current_state(data)
    code = data.samples.classes.index(target)
    assert state.relabels[a] == code and state.relabels[b] == code and a not in state.overrides
    by_id = {r["sample"]: r for r in review.queue_rows(data, state, "digits")}
    assert by_id[a]["state"] == "relabelled" and by_id[a]["now"] == target
    assert store.undo() == f"relabel 2 sample(s) to {target}"
    state = current_state(data)
    assert a not in state.relabels and state.overrides == {a: "drop"}
    with pytest.raises(InputError, match="no class 'zebra'"):
        review.relabel_to(root, "digits", [a], "zebra")
    with pytest.raises(InputError, match="select rows first"):
        review.relabel_to(root, "digits", [], target)


def test_bulk_actions_say_what_they_change_and_are_one_step(root):
    data, state = _state(root)
    listed = [r["sample"] for r in review.queue_rows(data, state, "digits")]
    plan = review.bulk_plan(data, state, listed, "accept", 0.9)
    expected = [s for s in listed if data.suggested[s] != data.samples.labels[s]
                and data.score[s] >= 0.9]
    assert plan.changes == len(expected) > 0
    store = CurationStore(data.run.store)
    before = store.revision()
    assert review.bulk_apply(root, "digits", listed, "accept", 0.9) == len(expected)
    assert store.revision() == before + 1  # one step
    state = current_state(data)
    assert {s: int(data.suggested[s]) for s in expected} == state.relabels
    # Accepting again changes nothing, and says so.
    assert review.bulk_plan(data, state, listed, "accept", 0.9).changes == 0
    with pytest.raises(InputError, match="nothing to change"):
        review.bulk_apply(root, "digits", listed, "accept", 0.9)
    drop = review.bulk_plan(data, state, listed, "drop")
    assert drop.changes == len(listed)
    review.bulk_apply(root, "digits", listed, "drop")
    assert not current_state(data).decisions.kept[listed].any()
    store.undo()
    store.undo()
    assert current_state(data).relabels == {} and current_state(data).overrides == {}
    for bad in (None, -0.1, 1.5):
        with pytest.raises(InputError, match="score threshold"):
            review.bulk_plan(data, state, listed, "accept", bad)
    with pytest.raises(InputError, match="no bulk action"):
        review.bulk_plan(data, state, listed, "explode")
