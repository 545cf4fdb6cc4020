"""Job records, kept in the run's SQLite store beside the curation state.

Redis only carries the queue and wakes workers; the durable record of every job (status,
progress, error, result) is here, so restarting Redis loses no history, and the app, the
CLI and any worker host read the same truth from the shared runs root.

Statuses: ``queued`` → ``running`` → ``succeeded`` | ``failed`` | ``cancelled``.
A cancel request sets ``cancel_requested``; the running step sees it at its next progress
call and stops.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from worker.pipeline.storage.author import by_token, current_author
from worker.pipeline.storage.curation_store import connect
from worker.pipeline.storage.rundir import now_iso
from worker.pipeline.storage.transaction import add_missing_columns, immediate

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINAL = ("succeeded", "failed", "cancelled")

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, params TEXT NOT NULL,
    status TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0,
    message TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, started_at TEXT,
    finished_at TEXT, heartbeat_at TEXT, worker TEXT, error TEXT, result TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0,
    phase_started_at TEXT);
"""
# Columns added after the first release, for stores created before them.
# submitted_by: who queued the job (storage/author.py); by_token: 1 when that is an access
# token's person, whose role the worker checks again before it runs the job.
ADDED_COLUMNS = (("jobs", "phase_started_at", "TEXT"), ("jobs", "submitted_by", "TEXT"),
                 ("jobs", "by_token", "INTEGER NOT NULL DEFAULT 0"))


class JobStore:
    """Job records of one run (``curation.sqlite``, table ``jobs``)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            # Under the write lock: two processes opening an older store at once (a worker
            # and the app) would otherwise both see a column missing and both add it.
            with immediate(db):
                db.execute(SCHEMA)
                add_missing_columns(db, ADDED_COLUMNS)

    def _connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return connect(self.path, sqlite3.Row)

    def create(self, kind: str, params: dict[str, Any], job_id: str | None = None) -> str:
        """Record a new queued job, signed by who queues it (storage/author.py), and
        return its id."""
        job_id = job_id or uuid.uuid4().hex[:12]
        with self._connect() as db:
            db.execute("INSERT INTO jobs (id, kind, params, status, created_at, submitted_by, "
                       "by_token) VALUES (?, ?, ?, 'queued', ?, ?, ?)",
                       (job_id, kind, json.dumps(params, sort_keys=True), now_iso(),
                        current_author(), int(by_token())))
        return job_id

    def get(self, job_id: str) -> dict[str, Any] | None:
        with self._connect() as db:
            row = db.execute("SELECT * FROM jobs WHERE id=?", (job_id,)).fetchone()
        return _as_dict(row) if row else None

    def list(self) -> list[dict[str, Any]]:
        """All jobs, newest first."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM jobs ORDER BY created_at DESC, rowid DESC")
            return [_as_dict(r) for r in rows]

    def start(self, job_id: str, worker: str) -> int | None:
        """Mark running (again, after a re-delivery) and return this attempt's number, the
        token its progress and finish must carry; None if cancelled before it began."""
        with self._connect() as db, immediate(db):
            row = db.execute("SELECT status, cancel_requested, attempts FROM jobs WHERE id=?",
                             (job_id,)).fetchone()
            if row is None or row["cancel_requested"] or row["status"] == "cancelled":
                db.execute("UPDATE jobs SET status='cancelled', finished_at=? WHERE id=?",
                           (now_iso(), job_id))
                return None
            db.execute("UPDATE jobs SET status='running', started_at=?, heartbeat_at=?, "
                       "worker=?, error=NULL, attempts=attempts+1, phase_started_at=NULL "
                       "WHERE id=?",
                       (now_iso(), now_iso(), worker, job_id))
        return int(row["attempts"]) + 1

    def progress(self, job_id: str, done: int, total: int, message: str,
                 attempt: int | None = None) -> str | None:
        """Store progress and a heartbeat. Returns ``"cancel"`` when a cancel was
        requested, ``"superseded"`` when ``attempt`` is no longer the job's running attempt
        (it was re-queued as lost, and perhaps started again elsewhere: the caller must
        stop and write nothing more), else None. Without ``attempt`` it is not checked.

        A job may count several phases (ingest, then extraction): a new total, or a count
        that goes back, starts a new phase, and ``phase_started_at`` (what an ETA is
        measured from) restarts with it."""
        now = now_iso()
        fence, args = _fence(attempt)
        with self._connect() as db:
            # SET expressions see the row's old values: compare before overwriting.
            cur = db.execute(
                "UPDATE jobs SET phase_started_at=CASE WHEN phase_started_at IS NULL "
                "OR total<>? OR done>? THEN ? ELSE phase_started_at END, "
                "done=?, total=?, message=?, heartbeat_at=? WHERE id=?" + fence,
                (int(total), int(done), now, int(done), int(total), message[:500], now,
                 job_id, *args))
            if cur.rowcount == 0 and attempt is not None:
                return "superseded"
            row = db.execute("SELECT cancel_requested FROM jobs WHERE id=?", (job_id,)).fetchone()
        return "cancel" if row and row["cancel_requested"] else None

    def finish(self, job_id: str, status: str, error: str | None = None,
               result: dict[str, Any] | None = None, attempt: int | None = None) -> bool:
        """Record the job's end. With ``attempt``, only while that attempt is the job's
        running one (a lost worker's late answer changes nothing); returns whether the
        record changed."""
        if status not in FINAL:
            raise ValueError(f"not a final status: {status}")
        fence, args = _fence(attempt)
        with self._connect() as db:
            cur = db.execute(
                "UPDATE jobs SET status=?, error=?, result=?, finished_at=? WHERE id=?" + fence,
                (status, error, json.dumps(result) if result is not None else None, now_iso(),
                 job_id, *args))
            return cur.rowcount == 1

    def requeue(self, job_id: str, heartbeat_at: str | None) -> bool:
        """Put a job whose worker died back to ``queued`` (it keeps its attempt count).

        Only if it is still ``running`` with the heartbeat the caller saw as stale, so of
        several workers that notice the same dead job, exactly one re-queues it (True).
        """
        with self._connect() as db:
            cur = db.execute("UPDATE jobs SET status='queued', message='re-queued: worker lost' "
                             "WHERE id=? AND status='running' AND heartbeat_at IS ?",
                             (job_id, heartbeat_at))
            return cur.rowcount == 1

    def fail_stale(self, before: str) -> list[str]:
        """Mark ``failed`` every running job whose last heartbeat is older than ``before``
        (an ISO time): without a broker nobody else can re-run it, its process is gone.
        Returns their ids."""
        with self._connect() as db, immediate(db):
            ids = [r["id"] for r in db.execute(
                "SELECT id FROM jobs WHERE status='running' AND "
                "COALESCE(heartbeat_at, started_at) < ?", (before,))]
            for job_id in ids:
                db.execute("UPDATE jobs SET status='failed', finished_at=?, error=? WHERE id=?",
                           (now_iso(), "its process stopped (no heartbeat): run it again",
                            job_id))
        return ids

    def request_cancel(self, job_id: str, stale_before: str | None = None) -> str | None:
        """Ask a job to stop; a queued one, or a running one whose last heartbeat is older
        than ``stale_before`` (its worker is gone), is cancelled at once. Returns the new
        status."""
        with self._connect() as db, immediate(db):
            row = db.execute("SELECT status, COALESCE(heartbeat_at, started_at) AS beat "
                             "FROM jobs WHERE id=?", (job_id,)).fetchone()
            if row is None:
                return None
            status = row["status"]
            dead = status == "running" and stale_before is not None and row["beat"] is not None \
                and row["beat"] < stale_before
            if status not in FINAL:
                db.execute("UPDATE jobs SET cancel_requested=1 WHERE id=?", (job_id,))
                if status == "queued" or dead:
                    db.execute("UPDATE jobs SET status='cancelled', finished_at=? WHERE id=?",
                               (now_iso(), job_id))
                    status = "cancelled"
        return status


def _fence(attempt: int | None) -> tuple[str, tuple]:
    """The WHERE clause (and its argument) that limits a write to the running ``attempt``
    (none: no limit)."""
    return ("", ()) if attempt is None else (" AND status='running' AND attempts=?",
                                             (int(attempt),))


def _as_dict(row: sqlite3.Row) -> dict[str, Any]:
    d = dict(row)
    d["params"] = json.loads(d["params"])
    d["result"] = json.loads(d["result"]) if d["result"] else None
    d["cancel_requested"] = bool(d["cancel_requested"])
    return d
