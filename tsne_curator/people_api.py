"""The people who may use ``curator serve`` on a runs root, from Python (``curator token``):
their tokens listed, added and revoked, as the command does (worker/people.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from worker import people
from worker.run_catalog import check_runs_root

TOKEN_COLUMNS = ("name", "role", "created", "revoked")


def _root(runs_root: str | os.PathLike) -> Path:
    return check_runs_root(Path(runs_root))


def tokens(runs_root: str | os.PathLike) -> pd.DataFrame:
    """Every token of ``runs_root``, revoked ones included, oldest first (``curator token
    list``): one row each with :data:`TOKEN_COLUMNS` (``revoked``: "" while live). The
    tokens themselves are never kept, only their hashes."""
    rows = [{"name": r.name, "role": r.role, "created": r.created_at,
             "revoked": r.revoked_at or ""} for r in people.records(_root(runs_root))]
    return pd.DataFrame(rows, columns=list(TOKEN_COLUMNS))


def add_token(runs_root: str | os.PathLike, name: str, role: str = "reviewer") -> str:
    """A new token for ``name`` with ``role`` (viewer, reviewer or admin; ``curator token
    add``), returned once: only its hash is kept. Once a runs root has a token, its server
    needs one for every request. A bad name, an unknown role or a name that has a live
    token already is one :class:`~worker.pipeline.errors.InputError` line."""
    return people.add_token(_root(runs_root), name, role)


def revoke_token(runs_root: str | os.PathLike, name: str) -> int:
    """Revoke every live token of ``name`` (``curator token revoke``); they stop working at
    the next request. Returns how many; an unknown name is one InputError line."""
    return people.revoke_token(_root(runs_root), name)
