"""One SQLite write transaction that holds the lock from its first statement."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator


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
