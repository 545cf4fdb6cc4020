"""Every decision signed and dated: the store records who made each change and when, who
undid it, and each sample's last author; a store made before decisions were signed is
brought up to date with its decisions authored "unknown"."""

from __future__ import annotations

import json
import sqlite3

from worker.pipeline.storage.author import UNKNOWN, acting_as, current_author, os_user
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.decision_log import (
    last_decision,
    last_decisions,
    overridden,
    sample_history,
)


def test_each_decision_and_its_undo_are_signed(tmp_path):
    store = CurationStore(tmp_path / "curation.sqlite")
    with acting_as("ana"):
        store.set_overrides([3, 4], "drop")
    with acting_as("ben"):
        store.set_relabels([3], 7)
        assert current_author() == "ben"
    assert current_author() == os_user()  # outside the block: the OS user again
    with acting_as("cho"):
        store.undo()  # takes ben's relabel back
    newest, first = store.history()
    assert (newest["author"], newest["undone"], newest["undone_by"]) == ("ben", True, "cho")
    assert newest["undone_at"] >= newest["created_at"]
    assert (first["author"], first["undone"], first["undone_by"]) == ("ana", False, None)
    # The sample's rows say who set what stands now.
    assert {s: d.author for s, d in last_decisions(store).items()} == {3: "ana", 4: "ana"}
    assert last_decision(store, 3).author == "ana" and last_decision(store, 5) is None
    rows = sample_history(store, 3)
    assert [(r["author"], r["what"], r["before"], r["after"], r["undone"]) for r in rows] \
        == [("ana", "decision", None, "drop", False), ("ben", "label", None, 7, True)]


def test_a_later_decision_on_the_same_sample_stands_and_both_are_kept(tmp_path):
    """Two reviewers on one sample: both decisions are recorded, the later one stands and
    names its author."""
    store = CurationStore(tmp_path / "curation.sqlite")
    with acting_as("ana"):
        store.set_overrides([9], "keep")
    with acting_as("ben"):
        store.set_overrides([9], "drop")
    assert store.overrides() == {9: "drop"} and last_decision(store, 9).author == "ben"
    assert [(r["author"], r["before"], r["after"]) for r in sample_history(store, 9)] == \
        [("ana", None, "keep"), ("ben", "keep", "drop")]


def test_the_pipeline_signs_its_own_steps(tmp_path):
    store = CurationStore(tmp_path / "curation.sqlite")
    store.set_class_params({0: (0.5, 5)}, "automatic parameters", pipeline=True)
    assert store.history()[0]["author"] == "pipeline"


def test_a_store_made_before_signing_is_brought_up_to_date(tmp_path):
    """An upgrade: the columns are added when the store is opened, the earlier decisions
    are authored "unknown", nothing is lost, and the next decision is signed."""
    path = tmp_path / "curation.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO settings VALUES ('revision', '3');"
            "CREATE TABLE overrides (sample INTEGER PRIMARY KEY, decision TEXT NOT NULL, "
            "updated_at TEXT NOT NULL);"
            "INSERT INTO overrides VALUES (5, 'drop', '2026-11-01T00:00:00+00:00');"
            "CREATE TABLE relabels (sample INTEGER PRIMARY KEY, label INTEGER NOT NULL, "
            "updated_at TEXT NOT NULL);"
            "CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, description TEXT "
            "NOT NULL, changes TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, created_at "
            "TEXT NOT NULL, pipeline INTEGER NOT NULL DEFAULT 0);"
            "PRAGMA user_version = 1;")
        db.execute("INSERT INTO history (description, changes, created_at) VALUES (?, ?, ?)",
                   ("drop 1", json.dumps([["overrides", 5, None, "drop"]]),
                    "2026-11-01T00:00:00+00:00"))
    store = CurationStore(path)
    assert store.overrides() == {5: "drop"} and store.revision() == 3
    assert store.history()[0]["author"] == UNKNOWN
    assert last_decision(store, 5).author == UNKNOWN
    with acting_as("ana"):
        store.set_relabels([5], 2)
        store.undo()
    assert store.history()[0]["undone_by"] == "ana"
    assert store.undo() == "drop 1" and store.overrides() == {}  # the old decision undoes


def test_the_earlier_author_learns_which_decisions_another_person_overrode(tmp_path):
    """ana's keep of 9 and relabel of 4 are replaced by ben's drop and relabel (both
    listed, newest first); her drop of 5, which cho set back to hers after ben, and her
    keep of 6, which ben's undone drop no longer replaces, are not."""
    store = CurationStore(tmp_path / "curation.sqlite")
    with acting_as("ana"):
        store.set_overrides([9, 6], "keep")
        store.set_overrides([5], "drop")
        store.set_relabels([4], 2)
    with acting_as("ben"):
        store.set_overrides([5], "keep")
    (row,) = overridden(store, "ana")
    assert (row["sample"], row["mine"], row["theirs"], row["by"]) == (5, "drop", "keep", "ben")
    with acting_as("ben"):
        store.set_overrides([9], "drop")
        store.set_relabels([4], 7)
    with acting_as("cho"):
        store.set_overrides([5], "drop")  # ana's value again
    with acting_as("ben"):
        store.set_overrides([6], "drop")
        store.undo()  # takes the drop of 6 back: ana's keep stands
    rows = overridden(store, "ana")
    assert [(r["sample"], r["what"], r["mine"], r["theirs"], r["by"]) for r in rows] == [
        (4, "label", 2, 7, "ben"), (9, "decision", "keep", "drop", "ben")]
    # ben's keep of 5 is the one cho replaced.
    assert [(r["sample"], r["by"]) for r in overridden(store, "ben")] == [(5, "cho")]
    assert overridden(store, "nobody") == []


def test_an_undo_by_another_person_is_told_to_the_author_too(tmp_path):
    """The undo stack is the run's: ben's undo takes back ana's newest decision, and ana is
    told; once she decides on that sample again, it is hers again."""
    store = CurationStore(tmp_path / "curation.sqlite")
    with acting_as("ana"):
        store.set_overrides([3], "drop")
    with acting_as("ben"):
        store.undo()
    (row,) = overridden(store, "ana")
    assert (row["sample"], row["mine"], row["theirs"], row["by"], row["undone"]) == \
        (3, "drop", None, "ben", True)
    with acting_as("ana"):
        store.set_overrides([3], "keep")
    assert overridden(store, "ana") == []


def test_a_new_decision_keeps_the_undone_ones_in_the_log_out_of_reach(tmp_path):
    store = CurationStore(tmp_path / "curation.sqlite")
    with acting_as("ana"):
        store.set_overrides([3], "drop")
    with acting_as("ben"):
        store.undo()
    with acting_as("ana"):
        store.set_overrides([4], "keep")  # a new decision: the undone drop can't be redone
    assert not store.can_redo() and store.overrides() == {4: "keep"}
    newest, first = store.history()
    assert (first["author"], first["undone"], first["undone_by"]) == ("ana", True, "ben")
    assert [(r["after"], r["undone"]) for r in sample_history(store, 3)] == [("drop", True)]
