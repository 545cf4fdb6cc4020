"""One SQLite write transaction that holds the lock from its first statement, and the
columns a later release added, put into an older store inside it."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator


@contextlib.contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Run the block in one ``BEGIN IMMEDIATE`` transaction on ``db`` (a connection opened
    with ``isolation_level=None``, as ``curation_store.connect`` opens them).

    The write lock is taken at ``BEGIN``, so a read-then-write inside the block (is the
    version there? is the column there? then add it) cannot interleave with another
    process doing the same. Any error rolls the whole block back.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def add_missing_columns(db: sqlite3.Connection,
                        columns: Iterable[tuple[str, str, str]]) -> None:
    """Add each ``(table, column, declaration)`` of ``columns`` that ``db`` lacks.

    Call it inside :func:`immediate`: two processes opening an older store at once would
    otherwise both see a column missing and both add it ("duplicate column name").
    """
    for table, column, declaration in columns:
        if not any(r[1] == column for r in db.execute(f"PRAGMA table_info({table})")):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
