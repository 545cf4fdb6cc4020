"""The curation store: one SQLite file per run (WAL), the durable record of review work.

It holds per-class DBSCAN parameters, keep/drop overrides, relabels (a reviewer's
corrected label for a sample), an undo/redo history and run settings. Every change runs
in a ``BEGIN IMMEDIATE`` transaction that reads the previous values and writes the new
ones together, so two processes editing the same run serialise instead of overwriting
each other, and each change can be undone exactly.

History semantics: each user action is one row of ``history`` holding its changes as
``(table, key, before, after)``. Undo reverts the newest applied action; redo re-applies
the most recently undone one; a new action puts everything that was undone out of redo's
reach (``undone`` 2: kept in the log, with who undid it and when, never applied again).

The pipeline's own steps (the cluster step's parameters for classes that have none on
this map: a new run's, or every class's after a new embedding) are rows too, marked
``pipeline``, so the history shows them, but undo and redo pass them by: they take back
decisions only, never the clustering a run needs (undoing it left classes without
parameters, and the run's summary failed). Every door (the Curate page's Undo, ``curator
undo``, ``Run.undo``) goes through :meth:`CurationStore.undo`, so they agree. A decision's
change that a later pipeline step replaced (an eps measured on the previous map) is left
as the pipeline set it, and a class's parameters are never taken away (a class without
them has no clustering); a decision with nothing left to take back is passed by, and
when no decision is left, undo writes nothing at all.

Every decision is signed: its history row and the sample's row record who made it
(:func:`~worker.pipeline.storage.author.current_author`: the OS user, or the server's
request's person) and when, and an undo records who took it back and when
(storage/decision_log.py reads them).

A store made before the ``pipeline`` column or the authors is brought up to date when it
is opened (:meth:`CurationStore._mark_pipeline_rows`, once: ``PRAGMA user_version``); its
earlier decisions are authored "unknown". The store also holds the run's versions, which
never change (storage/version_store.py); one made before them gets version ``initial``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.pipeline.errors import InputError
from worker.pipeline.number_params import check
from worker.pipeline.storage.author import current_author
from worker.pipeline.storage.rundir import RunDir, no_permission, now_iso
from worker.pipeline.storage.transaction import add_missing_columns, immediate
from worker.pipeline.storage.version_store import VERSIONS_SCHEMA, add_initial_version

DECISIONS = ("keep", "drop")
# The per-sample tables a reviewer writes, and the column each holds.
PER_SAMPLE = {"overrides": "decision", "relabels": "label"}

def damaged(path: Path, exc: sqlite3.DatabaseError) -> InputError | None:
    """An :class:`InputError` for a store file that is not a usable database, or None for
    transient errors (a locked or busy database), which callers may retry."""
    text = str(exc).lower()
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return None
    if isinstance(exc, sqlite3.OperationalError) and (
            "readonly" in text or "unable to open" in text or "permission" in text):
        # A file or folder this user may not write (SQLite's WAL needs both): a permission
        # to grant, not a damaged store to replace, which would throw the curation away.
        return no_permission(path, write=os.access(path, os.R_OK))
    if "disk is full" in text:  # SQLITE_FULL: the write was rolled back; nothing to restore
        return InputError(f"the disk holding {path} is full ({text.splitlines()[0][:80]}): "
                          "free space and run again")
    return InputError(f"{path} cannot be read ({text.splitlines()[0][:80]}): restore it from a "
                      "backup, or move it away and run 'curator cluster' on the run again")


@contextlib.contextmanager
def connect(path: Path, row_factory: Any = None) -> Iterator[sqlite3.Connection]:
    """One short-lived connection per operation (safe across threads, processes and
    forks); a damaged file becomes one clear :class:`InputError`."""
    try:
        db = sqlite3.connect(path, timeout=30, isolation_level=None)
    except sqlite3.DatabaseError as exc:
        raise (damaged(path, exc) or exc) from None
    db.row_factory = row_factory
    try:
        db.execute("PRAGMA busy_timeout=30000")
        yield db
    except sqlite3.DatabaseError as exc:
        error = damaged(path, exc)
        if error is None:
            raise
        raise error from None
    finally:
        db.close()


SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS class_params (
    label INTEGER PRIMARY KEY, eps REAL NOT NULL, min_samples INTEGER NOT NULL,
    updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS class_cuts (
    label INTEGER PRIMARY KEY, flagged INTEGER NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS overrides (
    sample INTEGER PRIMARY KEY,
    decision TEXT NOT NULL CHECK (decision IN ('keep', 'drop')),
    updated_at TEXT NOT NULL, author TEXT NOT NULL DEFAULT 'unknown');
CREATE TABLE IF NOT EXISTS relabels (
    sample INTEGER PRIMARY KEY, label INTEGER NOT NULL, updated_at TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT 'unknown');
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, description TEXT NOT NULL, changes TEXT NOT NULL,
    undone INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
    pipeline INTEGER NOT NULL DEFAULT 0, author TEXT NOT NULL DEFAULT 'unknown',
    undone_by TEXT, undone_at TEXT);
"""
# Columns added since the first stores: (table, column, its declaration). A store that
# lacks one gets it when it is opened (_migrate); what it held before is authored
# "unknown" (storage/author.py UNKNOWN).
ADDED_COLUMNS = (("history", "pipeline", "INTEGER NOT NULL DEFAULT 0"),
                 ("history", "author", "TEXT NOT NULL DEFAULT 'unknown'"),
                 ("history", "undone_by", "TEXT"), ("history", "undone_at", "TEXT"),
                 ("overrides", "author", "TEXT NOT NULL DEFAULT 'unknown'"),
                 ("relabels", "author", "TEXT NOT NULL DEFAULT 'unknown'"))
# What the cluster step called its parameters before the history marked the pipeline's own
# rows: a store made then has its rows marked when it is opened (_mark_pipeline_rows).
PIPELINE_DESCRIPTION = "automatic parameters"
# PRAGMA user_version of a store whose history marks the pipeline's rows, signs every
# decision and holds versions as this code does; an older store is brought up to date once,
# when it is opened (3: its decisions saved as version "initial").
HISTORY_VERSION = 3
# True of every run, including one that never had a decision, and one whose decisions a
# pipeline step replaced since.
NOTHING_TO_UNDO = ("nothing to undo: no decision is left to take back (the pipeline's own "
                   "steps, such as its clustering, are never undone)")
NOTHING_TO_REDO = ("nothing to redo: no undone decision is left to apply again (a new "
                   "decision clears them)")


@dataclass(frozen=True)
class StoreSnapshot:
    """Everything in the store at one revision (read in one transaction).

    Attributes
    ----------
    params : class code → (eps, min_samples)
    overrides : sample → "keep" | "drop"
    relabels : sample → corrected class code
    settings : key → value
    revision : int
    cuts : class code → how many of its highest scores a reviewer has flagged (absent:
        the rule decides)
    """

    params: dict[int, tuple[float, int]]
    overrides: dict[int, str]
    relabels: dict[int, int]
    settings: dict[str, str]
    revision: int
    cuts: dict[int, int] = field(default_factory=dict)


def _checked(samples: Iterable[int], n_samples: int | None) -> list[int]:
    """Sorted unique sample indices, each below ``n_samples`` when it is given."""
    samples = sorted({int(s) for s in samples})
    top = n_samples if n_samples is not None else 2**63
    bad = [s for s in samples if not 0 <= s < top]
    if bad:
        where = f"this run has {n_samples} samples (0 to {n_samples - 1})" \
            if n_samples is not None else "indices must be non-negative"
        raise InputError(f"sample index {bad[0]} is out of range: {where}")
    return samples


class CurationStore:
    """Read and change one run's curation state.

    Parameters
    ----------
    path : Path
        The run's ``curation.sqlite``; created on first use.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA + VERSIONS_SCHEMA)
            db.execute("INSERT OR IGNORE INTO settings VALUES ('revision', '0')")
            self._mark_pipeline_rows(db)

    @classmethod
    def _mark_pipeline_rows(cls, db: sqlite3.Connection) -> None:
        """Bring a store made before the history marked the pipeline's rows up to date, in
        one transaction (two processes may open the store at once):

        - the ``pipeline`` column, added;
        - the cluster step's rows marked: those described ``PIPELINE_DESCRIPTION``, and
          any that gave a class its first parameters (a change whose ``before`` is None:
          the first clustering of a run made with ``--eps``, ``--min-samples`` or
          ``--auto`` was recorded as "cluster: set parameters"), for undoing them took
          every class's parameters away;
        - such a row that was undone applied again (its changes still undone), for redo
          passes pipeline rows by and nothing else would bring the clustering back.
        """
        def current() -> bool:
            return db.execute("PRAGMA user_version").fetchone()[0] >= HISTORY_VERSION

        if current():
            return
        with immediate(db):
            if not current():
                cls._migrate(db)
                add_initial_version(db)  # after _migrate: it reads the authors' columns
                db.execute(f"PRAGMA user_version = {HISTORY_VERSION}")

    @classmethod
    def _migrate(cls, db: sqlite3.Connection) -> None:
        """The changes of :meth:`_mark_pipeline_rows`, inside its transaction."""
        add_missing_columns(db, ADDED_COLUMNS)
        if db.execute("PRAGMA user_version").fetchone()[0] >= 1:
            return  # its pipeline rows were marked when it reached version 1
        first = [hid for hid, description, changes in db.execute(
            "SELECT id, description, changes FROM history WHERE pipeline=0").fetchall()
            if description == PIPELINE_DESCRIPTION or any(
                c[0] == "class_params" and c[2] is None for c in json.loads(changes))]
        db.executemany("UPDATE history SET pipeline=1 WHERE id=?", [(h,) for h in first])
        reapplied = 0
        for hid, changes in db.execute("SELECT id, changes FROM history WHERE pipeline=1 AND "
                                       "undone=1 ORDER BY id").fetchall():
            held = [c for c in json.loads(changes)  # (table, key, before, after)
                    if cls._current(db, c[0], c[1]) == c[2]]
            cls._apply(db, held, after=True)
            db.execute("UPDATE history SET undone=0 WHERE id=?", (hid,))
            reapplied += len(held)
        if reapplied:  # parameters changed: views cached by revision are stale
            db.execute("UPDATE settings SET value = CAST(value AS INTEGER) + 1 "
                       "WHERE key = 'revision'")

    def _connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return connect(self.path)

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as db, immediate(db):
            before = db.total_changes
            yield db
            # The revision counts real changes only, so it stays a faithful cache key.
            if db.total_changes != before:
                db.execute("UPDATE settings SET value = CAST(value AS INTEGER) + 1 "
                           "WHERE key = 'revision'")

    # -- reads ----------------------------------------------------------------
    def revision(self) -> int:
        """A counter that grows with every change (a cache key for derived views)."""
        with self._connect() as db:
            return int(db.execute("SELECT value FROM settings WHERE key='revision'").fetchone()[0])

    def overrides(self) -> dict[int, str]:
        """Sample index → ``"keep"`` or ``"drop"``."""
        with self._connect() as db:
            return dict(db.execute("SELECT sample, decision FROM overrides"))

    def relabels(self) -> dict[int, int]:
        """Sample index → the class code a reviewer gave it."""
        with self._connect() as db:
            return dict(db.execute("SELECT sample, label FROM relabels"))

    def class_params(self) -> dict[int, tuple[float, int]]:
        """Class code → (eps, min_samples), for the classes that have been set."""
        with self._connect() as db:
            return {lab: (eps, ms) for lab, eps, ms in
                    db.execute("SELECT label, eps, min_samples FROM class_params")}

    def cuts(self) -> dict[int, int]:
        """Class code → how many of its highest scores are flagged, for the classes whose
        cut a reviewer set (the others: the rule decides)."""
        with self._connect() as db:
            return dict(db.execute("SELECT label, flagged FROM class_cuts"))

    def setting(self, key: str, default: str | None = None) -> str | None:
        with self._connect() as db:
            row = db.execute("SELECT value FROM settings WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def snapshot(self) -> StoreSnapshot:
        """Params, overrides, relabels, settings and revision, all read in one transaction,
        so they belong together (WAL readers see one committed state for a whole
        transaction)."""
        with self._connect() as db:
            db.execute("BEGIN")
            try:
                params = {lab: (eps, ms) for lab, eps, ms in
                          db.execute("SELECT label, eps, min_samples FROM class_params")}
                overrides = dict(db.execute("SELECT sample, decision FROM overrides"))
                relabels = dict(db.execute("SELECT sample, label FROM relabels"))
                settings = dict(db.execute("SELECT key, value FROM settings"))
                cuts = dict(db.execute("SELECT label, flagged FROM class_cuts"))
            finally:
                db.execute("COMMIT")
        return StoreSnapshot(params, overrides, relabels, settings, int(settings["revision"]),
                             cuts)

    def history(self, limit: int = 50) -> list[dict[str, Any]]:
        """Newest first: id, description, undone, created_at, author, number of changes,
        whether it is the pipeline's own step (never undone), and who undid it when
        (``undone_by``, ``undone_at``; None while it stands)."""
        with self._connect() as db:
            rows = db.execute("SELECT id, description, undone, created_at, changes, pipeline, "
                              "author, undone_by, undone_at FROM history ORDER BY id DESC "
                              "LIMIT ?", (limit,)).fetchall()
        return [{"id": i, "description": d, "undone": bool(u), "created_at": c,
                 "author": a, "n_changes": len(json.loads(ch)), "pipeline": bool(p),
                 "undone_by": ub, "undone_at": ua}
                for i, d, u, c, ch, p, a, ub, ua in rows]

    def can_undo(self) -> bool:
        """Whether :meth:`undo` would take a decision back (the pipeline's steps, and
        decisions a pipeline step replaced since, are not)."""
        with self._connect() as db:
            return self._next(db, undone=0, after=False) is not None

    def can_redo(self) -> bool:
        """Whether :meth:`redo` would apply an undone decision again."""
        with self._connect() as db:
            return self._next(db, undone=1, after=True) is not None

    # -- writes ---------------------------------------------------------------
    def set_setting(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO settings VALUES (?, ?)", (key, value))

    def set_overrides(self, samples: Iterable[int], decision: str | None,
                      description: str = "", n_samples: int | None = None) -> int:
        """Force ``samples`` to ``decision`` ("keep"/"drop"), or clear them with None.

        ``n_samples``, when given, is the run's sample count: indices must be below it.

        Returns
        -------
        int
            How many samples actually changed (0 records no history entry).
        """
        return self.set_sample_values({"overrides": dict.fromkeys(samples, decision)},
                                      description or f"{decision or 'clear'} {{n}} sample(s)",
                                      n_samples=n_samples)

    def set_relabels(self, samples: Iterable[int], label: int | None, description: str = "",
                     n_samples: int | None = None, n_classes: int | None = None) -> int:
        """Give ``samples`` the class code ``label`` (a reviewer's correction), or clear
        their relabel with None. Returns how many samples changed (0 records no history)."""
        return self.set_sample_values({"relabels": dict.fromkeys(samples, label)},
                                      description or "relabel {n} sample(s)",
                                      n_samples=n_samples, n_classes=n_classes)

    def set_sample_values(self, values: dict[str, dict[int, Any]], description: str,
                          n_samples: int | None = None, n_classes: int | None = None) -> int:
        """Per-sample overrides and relabels, each sample its own value, as one undoable
        action (a bulk "accept every suggestion" gives each sample its own class).

        Parameters
        ----------
        values : ``{"overrides": {sample: "keep" | "drop" | None}, "relabels": {sample:
            class code | None}}``, either key optional; None clears the sample's row.
        description : the history entry; may hold ``{n}``, the number of changes.
        n_samples, n_classes : when given, indices and class codes are checked against them.

        Returns
        -------
        int
            How many (table, sample) values actually changed (0 records no history).
        """
        for table, chosen in values.items():
            if table not in PER_SAMPLE:
                raise InputError(f"no per-sample table {table!r}")
            _checked(chosen, n_samples)
            for value in chosen.values():
                if table == "overrides" and value is not None and value not in DECISIONS:
                    raise InputError(f"override must be 'keep', 'drop' or cleared, got {value!r}")
                if table == "relabels" and value is not None \
                        and not 0 <= int(value) < (n_classes or 2**63):
                    raise InputError(f"class code {value} is out of range: this run has "
                                     f"{n_classes} classes")
        with self._write() as db:
            changes = []
            for table, chosen in values.items():
                for s in sorted(chosen):
                    row = db.execute(f"SELECT {PER_SAMPLE[table]} FROM {table} WHERE sample=?",  # noqa: S608
                                     (int(s),)).fetchone()
                    before = row[0] if row else None
                    value = chosen[s]
                    value = None if value is None else (
                        int(value) if table == "relabels" else value)
                    if before != value:
                        changes.append([table, int(s), before, value])
            self._apply(db, changes, after=True)
            self._record(db, changes, description.replace("{n}", str(len(changes))))
        return len(changes)

    def set_class_params(self, params: dict[int, tuple[float, int]],
                         description: str = "", pipeline: bool = False) -> int:
        """Set (eps, min_samples) for the given class codes; returns how many changed.
        ``pipeline``: the cluster step's own parameters, which undo passes by."""
        for eps, ms in params.values():  # map.dbscan.check_params, from below the map
            check("eps", eps)
            check("min_samples", ms)
        with self._write() as db:
            changes = []
            for label, (eps, ms) in sorted(params.items()):
                row = db.execute("SELECT eps, min_samples FROM class_params WHERE label=?",
                                 (int(label),)).fetchone()
                before = list(row) if row else None
                after = [float(eps), int(ms)]
                if before != after:
                    changes.append(["class_params", int(label), before, after])
            self._apply(db, changes, after=True)
            self._record(db, changes, description or f"set parameters of {len(changes)} class(es)",
                         pipeline)
        return len(changes)

    def set_class_cut(self, label: int, flagged: int | None, description: str = "") -> int:
        """Flag the ``flagged`` highest scores of class ``label`` and no others (a
        reviewer's cut along the score ranking), or give the class back to the rule with
        None; one undoable step. Returns how many values changed (0 or 1)."""
        after = None if flagged is None else int(check("cut", flagged))
        with self._write() as db:
            row = db.execute("SELECT flagged FROM class_cuts WHERE label=?",
                             (int(label),)).fetchone()
            before = row[0] if row else None
            changes = [] if before == after else [["class_cuts", int(label), before, after]]
            self._apply(db, changes, after=True)
            self._record(db, changes, description or f"cut class {label} at {after}")
        return len(changes)

    def undo(self) -> str | None:
        """Revert the newest decision (never a pipeline step); returns its description, or
        None when there is none."""
        return self._step(undone=0, after=False)

    def redo(self) -> str | None:
        """Re-apply the most recently undone decision; returns its description, or None."""
        return self._step(undone=1, after=True)

    def undo_or_refuse(self, redo: bool = False) -> str:
        """:meth:`undo` (or :meth:`redo`) for a door where nothing to do is the user's
        mistake to be told of (``curator undo``, ``Run.undo``).

        Raises
        ------
        InputError
            Nothing to undo (or redo), in one line.
        """
        done = self.redo() if redo else self.undo()
        if done is None:
            raise InputError(NOTHING_TO_REDO if redo else NOTHING_TO_UNDO)
        return done

    # -- internals ------------------------------------------------------------
    def _step(self, undone: int, after: bool) -> str | None:
        with self._write() as db:
            found = self._next(db, undone, after)
            if found is None:
                return None  # nothing written: the revision and the history stay
            passed, hid, description, held = found
            # The decisions passed by have nothing left to take back: they go along, so
            # the next step does not meet them again.
            # Who took it back (or applied it again) and when: the decision's own author
            # and time stay.
            by, at = (current_author(), now_iso()) if undone == 0 else (None, None)
            db.executemany("UPDATE history SET undone=?, undone_by=?, undone_at=? WHERE id=?",
                           [(1 - undone, by, at, h) for h in [*passed, hid]])
            self._apply(db, held, after=after)
            return description

    @classmethod
    def _next(cls, db: sqlite3.Connection, undone: int, after: bool
              ) -> tuple[list[int], int, str, list] | None:
        """The decision the next undo (``undone=0, after=False``) or redo (``undone=1,
        after=True``) takes, or None when there is none.

        Returns
        -------
        (passed, id, description, held)
            The ids of the newer (for redo: older) decisions with nothing left to take
            back, passed by; the decision's id and description; and its changes that it
            still decides, ``(table, key, before, after)`` each.
        """
        order = "DESC" if undone == 0 else "ASC"
        passed: list[int] = []
        rows = db.execute(f"SELECT id, description, changes FROM history WHERE undone=? AND "  # noqa: S608
                          f"pipeline=0 ORDER BY id {order}", (undone,))
        try:
            for hid, description, changes in rows:
                # Only what the decision still decides: a value a pipeline step set since
                # (another map's eps) stays as the pipeline set it, and a class keeps its
                # parameters (without them it has no clustering).
                held = [c for c in json.loads(changes)  # (table, key, before, after)
                        if cls._current(db, c[0], c[1]) == (c[2] if after else c[3])
                        and not (c[0] == "class_params" and (c[3] if after else c[2]) is None)]
                if held:
                    return passed, hid, description, held
                passed.append(hid)
        finally:
            rows.close()
        return None

    @staticmethod
    def _current(db: sqlite3.Connection, table: str, key: int) -> Any:
        """The value of ``(table, key)`` now, as a change records it (None when unset)."""
        if table in PER_SAMPLE:
            row = db.execute(f"SELECT {PER_SAMPLE[table]} FROM {table} WHERE sample=?",  # noqa: S608
                             (key,)).fetchone()
            return row[0] if row else None
        if table == "class_cuts":
            row = db.execute("SELECT flagged FROM class_cuts WHERE label=?", (key,)).fetchone()
            return row[0] if row else None
        row = db.execute("SELECT eps, min_samples FROM class_params WHERE label=?",
                         (key,)).fetchone()
        return [float(row[0]), int(row[1])] if row else None

    @staticmethod
    def _apply(db: sqlite3.Connection, changes: list, after: bool) -> None:
        stamp, author = now_iso(), current_author()
        for table, key, before, new in changes:
            value = new if after else before
            if table in PER_SAMPLE:
                if value is None:
                    db.execute(f"DELETE FROM {table} WHERE sample=?", (key,))  # noqa: S608
                else:  # a sample's row says who set it and when (an undo's too)
                    db.execute(f"INSERT OR REPLACE INTO {table} (sample, {PER_SAMPLE[table]}, "  # noqa: S608
                               "updated_at, author) VALUES (?, ?, ?, ?)",
                               (key, value, stamp, author))
            elif table == "class_cuts":
                if value is None:
                    db.execute("DELETE FROM class_cuts WHERE label=?", (key,))
                else:
                    db.execute("INSERT OR REPLACE INTO class_cuts VALUES (?, ?, ?)",
                               (key, value, stamp))
            elif value is None:
                db.execute("DELETE FROM class_params WHERE label=?", (key,))
            else:
                db.execute("INSERT OR REPLACE INTO class_params VALUES (?, ?, ?, ?)",
                           (key, value[0], value[1], stamp))

    @staticmethod
    def _record(db: sqlite3.Connection, changes: list, description: str,
                pipeline: bool = False) -> None:
        if not changes:
            return
        if not pipeline:
            # A new decision puts the undone ones out of redo's reach; they stay in the log
            # (who made and undid them). A pipeline step leaves them: redo applies only
            # what it did not replace.
            db.execute("UPDATE history SET undone=2 WHERE undone=1")
        db.execute("INSERT INTO history (description, changes, created_at, pipeline, author) "
                   "VALUES (?, ?, ?, ?, ?)",
                   (description, json.dumps(changes), now_iso(), int(pipeline),
                    "pipeline" if pipeline else current_author()))


def check_store(run: RunDir) -> None:
    """A clustered run whose store has gone is an error, not a silent fresh store: its
    parameters and overrides would be lost without a word. Anything that would create the
    store file (a job record too) checks this first. A run not made yet passes."""
    if not run.store.is_file() and run.step_done("cluster"):
        raise InputError(f"{run.store} is missing: the run's curation is lost; restore it, or "
                         f"run 'curator cluster {run.path}' to start a new one")


def open_store(run: RunDir, create: bool = False) -> CurationStore:
    """The run's curation store (:func:`check_store`); ``create`` (the cluster step)
    starts a new one."""
    run.require()
    if not create:
        check_store(run)
    return CurationStore(run.store)
