"""The job store's own schema: an older store gains the later columns exactly once, even
when several processes (the app, the CLI, workers) open it at the same moment."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from worker.pipeline.storage.job_store import ADDED_COLUMNS, JobStore

# The jobs table as the first release wrote it: none of ADDED_COLUMNS.
FIRST_SCHEMA = """
CREATE TABLE jobs (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, params TEXT NOT NULL,
    status TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0,
    message TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, started_at TEXT,
    finished_at TEXT, heartbeat_at TEXT, worker TEXT, error TEXT, result TEXT,
    attempts INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0);
INSERT INTO jobs (id, kind, params, status, created_at)
    VALUES ('old', 'cluster', '{}', 'succeeded', '2025-01-01T00:00:00');
"""


def _old_store(path: Path) -> None:
    """A store as the first release left it: WAL journal (its JobStore set it), the jobs
    table without the later columns."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(FIRST_SCHEMA)
    db.close()


def _open(path: str, barrier, errors) -> None:  # noqa: ANN001 (multiprocessing proxies)
    barrier.wait()
    try:
        JobStore(path)
    except Exception as exc:  # reported to the test, which names it
        errors.put(f"{type(exc).__name__}: {exc}")


def test_an_older_store_opened_by_several_processes_at_once_gains_each_column_once(
        tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    for round_ in range(4):
        path = tmp_path / f"curation-{round_}.sqlite"
        _old_store(path)
        barrier, errors = context.Barrier(4), context.Queue()
        workers = [context.Process(target=_open, args=(str(path), barrier, errors))
                   for _ in range(4)]
        for process in workers:
            process.start()
        for process in workers:
            process.join(60)
        failures = []
        while not errors.empty():
            failures.append(errors.get())
        assert not failures, failures
        assert all(p.exitcode == 0 for p in workers)
        columns = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(jobs)")]
        assert all(columns.count(name) == 1 for _, name, _ in ADDED_COLUMNS), columns
        old = JobStore(path).get("old")
        assert old is not None and old["status"] == "succeeded" and old["by_token"] == 0
