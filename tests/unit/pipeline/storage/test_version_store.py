"""Versions in the curation store (worker/pipeline/storage/version_store.py): written whole
in one transaction, refused by SQLite itself when anything tries to change or delete one,
and a store from before versions upgraded with its decisions saved as ``initial``,
authored ``unknown``. A full disk is one clear line."""

from __future__ import annotations

import sqlite3

import pytest

from worker.pipeline.errors import InputError
from worker.pipeline.storage.author import acting_as
from worker.pipeline.storage.curation_store import (
    HISTORY_VERSION,
    SCHEMA,
    CurationStore,
    connect,
)
from worker.pipeline.storage.version_store import (
    BLOBS,
    INITIAL,
    OUTCOME_FORMAT,
    StaleState,
    insert_outcome,
    insert_version,
    read_state,
    version_row,
    version_rows,
)


def _outcome(fill: bytes = b"\x01") -> dict:
    """An outcome's columns as versions.py writes them (the bytes are opaque here)."""
    return {"format": OUTCOME_FORMAT, "n_samples": 3, "counts": {"n_kept": 2},
            "tables": {"reason": ["cluster"]}, "train_key": "t" * 32, "outcome_key": "o" * 32,
            **{c: fill * 3 for c in BLOBS}}


def _row(store: CurationStore, name: str) -> tuple[dict, int]:
    with connect(store.path) as db:
        state = read_state(db)
    return {"name": name, "created_at": "2026-11-29T00:00:00+00:00", "author": "ana",
            "note": "checked", "state": state}, state["revision"]


def test_a_version_is_written_whole_and_read_back(tmp_path):
    store = CurationStore(tmp_path / "curation.sqlite")
    with acting_as("ana"):
        store.set_overrides([4], "drop")
        store.set_relabels([7], 2)
    row, revision = _row(store, "v1")
    assert row["state"]["overrides"] == {"4": ["drop", "ana", row["state"]["overrides"]["4"][2]]}
    assert row["state"]["relabels"]["7"][:2] == [2, "ana"]
    with connect(store.path) as db:
        insert_version(db, row, _outcome(), revision)
        got = version_row(db, "v1")
        listed = version_rows(db)
        assert version_row(db, "v2") is None
    assert got["outcome"] == {**_outcome(), "counts": {"n_kept": 2}}
    assert (got["author"], got["note"], got["store_revision"]) == ("ana", "checked", revision)
    assert [(r["name"], r["counts"]) for r in listed] == [("v1", {"n_kept": 2})]
    assert store.revision() == revision  # saving a version is no curation change


def test_a_taken_name_or_a_changed_store_writes_nothing(tmp_path):
    store = CurationStore(tmp_path / "curation.sqlite")
    row, revision = _row(store, "v1")
    with connect(store.path) as db:
        insert_version(db, row, _outcome(), revision)
        with pytest.raises(InputError, match="version 'v1' exists"):
            insert_version(db, row, _outcome(b"\x02"), revision)
    store.set_overrides([1], "keep")
    with connect(store.path) as db, pytest.raises(StaleState):
        insert_version(db, {**row, "name": "v2"}, _outcome(), revision)
    with connect(store.path) as db:
        assert [r["name"] for r in version_rows(db)] == ["v1"]
        assert version_row(db, "v1")["outcome"]["kept"] == b"\x01" * 3


@pytest.mark.parametrize("statement", [
    "UPDATE versions SET note = 'changed'", "DELETE FROM versions",
    "UPDATE version_outcomes SET kept = x'00'", "DELETE FROM version_outcomes",
    "INSERT OR REPLACE INTO versions VALUES ('v1', 'now', 'eve', '', 0, '{}')"])
def test_sqlite_refuses_to_change_or_delete_a_version(tmp_path, statement):
    store = CurationStore(tmp_path / "curation.sqlite")
    row, revision = _row(store, "v1")
    with connect(store.path) as db:
        insert_version(db, row, _outcome(), revision)
    db = sqlite3.connect(store.path)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            db.execute(statement)
    finally:
        db.close()
    with connect(store.path) as db:
        assert version_row(db, "v1")["note"] == "checked"
        assert version_row(db, "v1")["outcome"]["kept"] == b"\x01" * 3


def _store_before_versions(path, decisions: bool) -> None:
    """A store as the code before versions left it: its schema, user_version 2, and
    (``decisions``) a signed drop and relabel."""
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA + "INSERT INTO settings VALUES ('revision', '5');"
                         "INSERT INTO class_params VALUES (0, 0.5, 5, 'then');")
        if decisions:
            db.executescript(
                "INSERT INTO overrides VALUES (3, 'drop', '2026-11-01T00:00:00+00:00', 'ana');"
                "INSERT INTO relabels VALUES (8, 1, '2026-11-02T00:00:00+00:00', 'ben');"
                "INSERT INTO history (description, changes, created_at, author) VALUES "
                "('drop 1 sample(s)', '[[\"overrides\", 3, null, \"drop\"]]', 'then', 'ana');")
        db.execute("PRAGMA user_version = 2")


def test_a_store_from_before_versions_keeps_its_decisions_as_initial(tmp_path):
    path = tmp_path / "curation.sqlite"
    _store_before_versions(path, decisions=True)
    store = CurationStore(path)
    with connect(path) as db:
        [row] = version_rows(db)
        assert db.execute("PRAGMA user_version").fetchone()[0] == HISTORY_VERSION
    assert (row["name"], row["author"], row["store_revision"]) == (INITIAL, "unknown", 5)
    assert row["counts"] is None  # its outcome is resolved when versions.py first reads it
    assert row["state"]["overrides"] == {"3": ["drop", "ana", "2026-11-01T00:00:00+00:00"]}
    assert row["state"]["relabels"] == {"8": [1, "ben", "2026-11-02T00:00:00+00:00"]}
    assert row["state"]["params"] == {"0": [0.5, 5]} and store.revision() == 5
    assert store.overrides() == {3: "drop"} and store.relabels() == {8: 1}
    with connect(path) as db:  # filled once; a second writer's outcome is ignored
        insert_outcome(db, INITIAL, _outcome())
        insert_outcome(db, INITIAL, _outcome(b"\x02"))
        assert version_row(db, INITIAL)["outcome"]["kept"] == b"\x01" * 3
    CurationStore(path)  # opened again: upgraded once, still one version
    with connect(path) as db:
        assert [r["name"] for r in version_rows(db)] == [INITIAL]


def test_a_store_without_decisions_gets_no_initial_version(tmp_path):
    path = tmp_path / "curation.sqlite"
    _store_before_versions(path, decisions=False)
    CurationStore(path)
    with connect(path) as db:
        assert version_rows(db) == []


def test_a_full_disk_during_a_store_write_is_one_clear_line(tmp_path):
    """SQLite's "database or disk is full" (here: the file may not grow past its pages)
    becomes one line saying what to do, not "restore it from a backup"."""
    store = CurationStore(tmp_path / "curation.sqlite")
    with pytest.raises(InputError, match="is full .*free space and run again") as e, \
            connect(store.path) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages}")
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO settings VALUES (?, ?)",
                       [(f"k{i}", "x" * 1000) for i in range(200)])
    assert "\n" not in str(e.value) and "backup" not in str(e.value)
    assert store.setting("k0") is None  # rolled back
