"""token add, list, revoke: the people who may use ``curator serve``, and their roles
(worker/people.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from worker.cli.arguments import Add
from worker.cli.text_tables import format_rows

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn.
from worker.people import ROLES, add_token, records, revoke_token, tokens_path
from worker.settings import load_settings


def _root(a: argparse.Namespace) -> Path:
    from worker.run_catalog import check_runs_root

    return check_runs_root(a.runs_root or load_settings().runs_root)


def cmd_token(a: argparse.Namespace) -> None:
    root = _root(a)
    if a.action == "add":
        token = add_token(root, a.name or "", a.role)
        print(f"token for {a.name} ({a.role}): {token}")
        print("it is shown once; open the app with ?token=… (kept hashed in "
              f"{tokens_path(root)})")
    elif a.action == "revoke":
        n = revoke_token(root, a.name or "")
        print(f"revoked {n} token(s) of {a.name}: they stop working at the next request")
    else:
        rows = [{"name": r.name, "role": r.role, "created": r.created_at,
                 "revoked": r.revoked_at or ""} for r in records(root)]
        print(format_rows(rows, ("name", "role", "created", "revoked")) if rows
              else "no tokens: the app needs none (or only CURATOR_AUTH_TOKEN)")


def register(add: Add) -> None:
    """token: the people who may use the app, and their roles."""
    sp = add("token", cmd_token, "the people who may use the app: add NAME --role R, list, "
                                 "revoke NAME")
    sp.add_argument("action", choices=("add", "list", "revoke"))
    sp.add_argument("name", nargs="?", help="the person (signs their decisions)")
    sp.add_argument("--role", choices=ROLES, default="reviewer",
                    help="viewer reads; reviewer also decides and exports; admin also "
                         "retrains, starts runs and cancels jobs (default reviewer)")
    sp.add_argument("--runs-root", type=Path,
                    help="the runs root the tokens open (default CURATOR_RUNS_ROOT or runs)")
