"""Versions in the curation store: named, immutable records of a run's curation.

Two tables of the run's ``curation.sqlite`` hold them (the curation store creates them
with its own, :data:`VERSIONS_SCHEMA`):

- ``versions``: one row per version: ``name``, ``created_at`` (UTC, ISO 8601), ``author``,
  ``note``, ``store_revision`` (the store's revision it was taken at) and ``state``, the
  raw store state as JSON (:func:`read_state`);
- ``version_outcomes``: what the curation did to each sample at that version, resolved:
  ``n_samples``, ``counts`` (JSON), ``tables`` (JSON: the strings the codes stand for),
  ``train_key`` and ``outcome_key`` (digests that find a version equal to another
  outcome) and one compressed blob per column of :data:`BLOBS`.

SQLite itself keeps them immutable: triggers abort every UPDATE and DELETE on either
table. A version and its outcome are written in one ``BEGIN IMMEDIATE`` transaction
(:func:`insert_version`), so a crash leaves the whole version or none of it. The one
exception is a version made when a store from before versions is upgraded (``initial``,
:func:`add_initial_version`): its raw state is saved then, and its outcome is added later,
once (:func:`insert_outcome`), by the code that can resolve it
(worker/pipeline/curation/versions.py).

This module stores rows and bytes only; every function takes an open connection
(``curation_store.connect``), so the store can create and upgrade these tables without
importing what reads them.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from worker.pipeline.errors import InputError
from worker.pipeline.storage.author import UNKNOWN
from worker.pipeline.storage.rundir import now_iso
from worker.pipeline.storage.transaction import immediate

# The per-sample columns of a version's outcome, each a zlib-compressed numpy array.
BLOBS = ("kept", "label", "decision", "reason", "findings", "decided_by")
# The version a store from before versions gets for the decisions it holds.
INITIAL = "initial"
INITIAL_NOTE = "the decisions this run held when versions were added"
# The format of an outcome's blobs and tables (versions.py reads it).
OUTCOME_FORMAT = 1

# UPDATE and DELETE abort; so does an INSERT over an existing name, for INSERT OR REPLACE
# would delete the old row without a DELETE trigger (SQLite's recursive_triggers is off).
_IMMUTABLE = "".join(
    f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} {when}"
    f"BEGIN SELECT RAISE(ABORT, 'a version is immutable: {op.lower()} refused'); END;\n"
    for table in ("versions", "version_outcomes")
    for op, when in (("UPDATE", ""), ("DELETE", ""), ("INSERT", f"WHEN EXISTS (SELECT 1 "
                     f"FROM {table} WHERE name = NEW.name) ")))
VERSIONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    name TEXT PRIMARY KEY, created_at TEXT NOT NULL, author TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '', store_revision INTEGER NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS version_outcomes (
    name TEXT PRIMARY KEY REFERENCES versions (name), format INTEGER NOT NULL,
    n_samples INTEGER NOT NULL, counts TEXT NOT NULL, tables TEXT NOT NULL,
    train_key TEXT NOT NULL, outcome_key TEXT NOT NULL, kept BLOB NOT NULL,
    label BLOB NOT NULL, decision BLOB NOT NULL, reason BLOB NOT NULL,
    findings BLOB NOT NULL, decided_by BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS version_outcomes_train ON version_outcomes (train_key);
CREATE INDEX IF NOT EXISTS version_outcomes_outcome ON version_outcomes (outcome_key);
""" + _IMMUTABLE
_OUTCOME_COLUMNS = ("format", "n_samples", "counts", "tables", "train_key", "outcome_key",
                    *BLOBS)


class StaleState(Exception):  # noqa: N818 - a condition to retry, not an error to show
    """The store changed between reading the state a version resolves and writing it."""


def revision(db: sqlite3.Connection) -> int:
    """The store's revision (settings ``revision``)."""
    row = db.execute("SELECT value FROM settings WHERE key='revision'").fetchone()
    return int(row[0]) if row else 0


def read_state(db: sqlite3.Connection) -> dict[str, Any]:
    """The raw curation state, JSON-ready: ``revision``, ``rule`` (None: the default),
    ``params`` (class code → [eps, min_samples]), ``cuts`` (class code → flagged),
    ``overrides`` (sample → [decision, author, updated_at]) and ``relabels`` (sample →
    [class code, author, updated_at]); keys as text. Read inside the caller's transaction
    (or one statement at a time: call it inside ``BEGIN`` for one state)."""
    rule = db.execute("SELECT value FROM settings WHERE key='rule'").fetchone()
    return {
        "revision": revision(db), "rule": rule[0] if rule else None,
        "params": {str(c): [float(e), int(m)] for c, e, m in db.execute(
            "SELECT label, eps, min_samples FROM class_params ORDER BY label")},
        "cuts": {str(c): int(k) for c, k in db.execute(
            "SELECT label, flagged FROM class_cuts ORDER BY label")},
        "overrides": {str(s): [d, a, t] for s, d, a, t in db.execute(
            "SELECT sample, decision, author, updated_at FROM overrides ORDER BY sample")},
        "relabels": {str(s): [int(lab), a, t] for s, lab, a, t in db.execute(
            "SELECT sample, label, author, updated_at FROM relabels ORDER BY sample")},
    }


def has_decisions(db: sqlite3.Connection) -> bool:
    """Whether the store holds a reviewer's decision: a standing override, relabel or cut,
    or any history row that is not the pipeline's own."""
    return any(db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone()  # noqa: S608
               for table in ("overrides", "relabels", "class_cuts")) or bool(
        db.execute("SELECT 1 FROM history WHERE pipeline=0 LIMIT 1").fetchone())


def add_initial_version(db: sqlite3.Connection) -> None:
    """Inside the store's upgrade transaction: a store that holds decisions gets version
    :data:`INITIAL`, authored ``unknown``, with its raw state now and no outcome yet
    (versions.py resolves it the first time it reads it)."""
    if not has_decisions(db) or db.execute("SELECT 1 FROM versions WHERE name=?",
                                           (INITIAL,)).fetchone():
        return
    state = read_state(db)
    db.execute("INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?)",
               (INITIAL, now_iso(), UNKNOWN, INITIAL_NOTE, state["revision"],
                json.dumps(state)))


def insert_version(db: sqlite3.Connection, row: dict[str, Any], outcome: dict[str, Any],
                   expected_revision: int) -> None:
    """Write a version and its outcome in one ``BEGIN IMMEDIATE`` transaction.

    Parameters
    ----------
    row : ``name``, ``created_at``, ``author``, ``note``, ``state`` (dict)
    outcome : :data:`_OUTCOME_COLUMNS` (blobs as bytes, counts and tables as dicts)
    expected_revision : the store revision ``state`` was read at

    Raises
    ------
    StaleState
        The store changed since (nothing written: read and resolve it again).
    InputError
        A version of that name exists (nothing written).
    """
    with immediate(db):
        if revision(db) != expected_revision:
            raise StaleState
        if db.execute("SELECT 1 FROM versions WHERE name=?", (row["name"],)).fetchone():
            raise InputError(f"version {row['name']!r} exists: versions never change; pick "
                             "another name ('curator versions RUN' lists them)")
        db.execute("INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?)",
                   (row["name"], row["created_at"], row["author"], row["note"],
                    expected_revision, json.dumps(row["state"])))
        _insert_outcome(db, row["name"], outcome)


def insert_outcome(db: sqlite3.Connection, name: str, outcome: dict[str, Any]) -> None:
    """Add the outcome of a version saved without one (:data:`INITIAL`); a second writer's
    is not written (the first one stands, as every version does)."""
    with immediate(db):
        if not db.execute("SELECT 1 FROM version_outcomes WHERE name=?", (name,)).fetchone():
            _insert_outcome(db, name, outcome)


def _insert_outcome(db: sqlite3.Connection, name: str, outcome: dict[str, Any]) -> None:
    values = [json.dumps(outcome[c]) if c in ("counts", "tables")
              else outcome[c] for c in _OUTCOME_COLUMNS]
    db.execute(f"INSERT INTO version_outcomes (name, {', '.join(_OUTCOME_COLUMNS)}) "
               f"VALUES ({', '.join('?' * (len(_OUTCOME_COLUMNS) + 1))})", (name, *values))


def version_rows(db: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every version, oldest first, without its blobs: ``name``, ``created_at``,
    ``author``, ``note``, ``store_revision``, ``state`` (dict), ``counts`` (dict, None
    while its outcome is not resolved), ``train_key``, ``outcome_key``."""
    rows = db.execute(
        "SELECT v.name, v.created_at, v.author, v.note, v.store_revision, v.state, o.counts, "
        "o.train_key, o.outcome_key FROM versions v LEFT JOIN version_outcomes o "
        "ON o.name = v.name ORDER BY v.rowid").fetchall()
    return [{"name": n, "created_at": c, "author": a, "note": note, "store_revision": r,
             "state": json.loads(s), "counts": json.loads(k) if k else None,
             "train_key": tk, "outcome_key": ok}
            for n, c, a, note, r, s, k, tk, ok in rows]


def version_row(db: sqlite3.Connection, name: str) -> dict[str, Any] | None:
    """One version with its outcome (``outcome``: the columns of :data:`_OUTCOME_COLUMNS`,
    counts and tables as dicts, or None while not resolved), or None when there is no
    version ``name``. Read in one transaction."""
    db.execute("BEGIN")
    try:
        head = db.execute("SELECT name, created_at, author, note, store_revision, state FROM "
                          "versions WHERE name=?", (name,)).fetchone()
        body = db.execute(f"SELECT {', '.join(_OUTCOME_COLUMNS)} FROM version_outcomes "  # noqa: S608
                          "WHERE name=?", (name,)).fetchone()
    finally:
        db.execute("COMMIT")
    if head is None:
        return None
    outcome = None if body is None else {
        c: json.loads(v) if c in ("counts", "tables") else v
        for c, v in zip(_OUTCOME_COLUMNS, body, strict=True)}
    return {"name": head[0], "created_at": head[1], "author": head[2], "note": head[3],
            "store_revision": head[4], "state": json.loads(head[5]), "outcome": outcome}
