"""People and their roles: the access tokens of a runs root.

``curator token add NAME --role viewer|reviewer|admin`` makes a token, prints it once and
keeps only its SHA-256 in ``<runs root>/.curator-tokens.json`` (mode 0600), so the file
lets no one in. ``curator serve`` reads the file on each request (cached by its stamp), so
a token revoked with ``curator token revoke NAME`` stops working at the next request.

What each role may do is :data:`ALLOWED`: a viewer reads; a reviewer also decides (keep,
drop, relabel, re-cluster, undo), saves versions and exports; an admin also trains, starts runs and
cancels jobs. ``CURATOR_AUTH_TOKEN`` keeps working as one admin, named ``admin``. A server
with neither that token nor a token file is one person's: its OS user, as admin. Once a
token has been made, one is needed, even after the last is revoked.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from cachetools import LRUCache, cached
from cachetools.keys import hashkey

from worker.pipeline.errors import InputError

TOKENS_FILE = ".curator-tokens.json"
ROLES = ("viewer", "reviewer", "admin")
# Each action a role check guards → the least role that may do it.
ALLOWED = {"read": "viewer", "decide": "reviewer", "export": "reviewer",
           "version": "reviewer", "train": "admin", "run": "admin", "cancel": "admin"}
# The action each job kind needs (worker/jobs/registry.py); any other kind trains.
JOB_ACTIONS = {"export": "export", "pipeline": "run"}
# What a refused action is called in the one line that refuses it.
ACTION_WORDS = {"decide": "keep, drop, relabel or re-cluster", "export": "export",
                "version": "save versions",
                "train": "retrain", "run": "start a run", "cancel": "cancel jobs"}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
# Names that already mean something in a signed history: the CURATOR_AUTH_TOKEN admin, the
# pipeline's own steps, decisions from before signing.
RESERVED = ("admin", "pipeline", "unknown")


@dataclass(frozen=True)
class Person:
    """Who a request is: the name their decisions are signed with, and their role."""

    name: str
    role: str

    def may(self, action: str) -> bool:
        """Whether the role allows ``action`` (a key of :data:`ALLOWED`)."""
        return ROLES.index(self.role) >= ROLES.index(ALLOWED[action])

    def require(self, action: str) -> None:
        """Refuse ``action`` in one line when the role does not allow it."""
        if not self.may(action):
            raise InputError(f"{self.name} is a {self.role} here and cannot "
                             f"{ACTION_WORDS[action]}: ask an admin for a token with the "
                             f"{ALLOWED[action]} role")


@dataclass(frozen=True)
class TokenRecord:
    """One token as kept: never the token itself."""

    name: str
    role: str
    sha256: str
    created_at: str
    revoked_at: str | None = None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def tokens_path(runs_root: Path) -> Path:
    return Path(runs_root) / TOKENS_FILE


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


@cached(LRUCache(maxsize=8), key=lambda path, stamp: hashkey(str(path), stamp),
        lock=threading.Lock())
def _read(path: Path, stamp: tuple[int, int] | None) -> tuple[TokenRecord, ...]:
    if stamp is None:
        return ()
    try:
        rows = json.loads(path.read_text())
        return tuple(TokenRecord(**r) for r in rows)
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"{path} is damaged ({type(exc).__name__}): stop the server, then "
                         "restore it, or remove it and add the tokens again") from None


def records(runs_root: Path) -> tuple[TokenRecord, ...]:
    """Every token of the runs root, revoked ones included, oldest first."""
    path = tokens_path(runs_root)
    return _read(path, _stamp(path))


@contextlib.contextmanager
def _locked(runs_root: Path) -> Iterator[None]:
    """Hold the token file's lock: two `curator token` commands at once would each write
    the file from what they read, and the later could bring back a revoked token."""
    lock = Path(runs_root) / (TOKENS_FILE + ".lock")
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _now() -> str:
    # Deferred: storage.rundir loads numpy, and `curator --help` imports this module.
    from worker.pipeline.storage.rundir import now_iso

    return now_iso()


def _write(runs_root: Path, rows: tuple[TokenRecord, ...]) -> None:
    from worker.pipeline.storage.rundir import atomic_path  # deferred, as in _now

    path = tokens_path(runs_root)
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps([asdict(r) for r in rows], indent=1))
        os.chmod(tmp, 0o600)


def add_token(runs_root: Path, name: str, role: str) -> str:
    """A new token for ``name`` with ``role``; returns the token (shown once, kept hashed).

    Raises
    ------
    InputError
        A name that is not 1–64 letters, digits or ``._@-``; an unknown role; a name that
        already has a token that is not revoked.
    """
    if not NAME.fullmatch(name or ""):
        raise InputError(f"name {name!r}: use 1 to 64 letters, digits or ._@- (it signs "
                         "that person's decisions)")
    if name.lower() in RESERVED:
        raise InputError(f"name {name!r} is taken: {', '.join(RESERVED)} already sign the "
                         "history (CURATOR_AUTH_TOKEN's holder, the pipeline, decisions from "
                         "before signing)")
    if role not in ROLES:
        raise InputError(f"no role {role!r}: use viewer, reviewer or admin")
    token = secrets.token_urlsafe(24)
    with _locked(runs_root):
        rows = records(runs_root)
        if any(r.name == name and r.revoked_at is None for r in rows):
            raise InputError(f"{name} already has a token: revoke it first ('curator token "
                             f"revoke {name}')")
        _write(runs_root, (*rows, TokenRecord(name, role, _digest(token), _now())))
    return token


def revoke_token(runs_root: Path, name: str) -> int:
    """Revoke every live token of ``name``; returns how many. An unknown name is an
    InputError naming the people who have tokens."""
    with _locked(runs_root):
        rows = records(runs_root)
        live = [r for r in rows if r.name == name and r.revoked_at is None]
        if not live:
            names = sorted({r.name for r in rows if r.revoked_at is None})
            raise InputError(f"no live token for {name!r}: "
                             + (f"those with one are {', '.join(names)}" if names
                                else "there are none ('curator token add NAME --role ROLE')"))
        when = _now()
        _write(runs_root, tuple(TokenRecord(r.name, r.role, r.sha256, r.created_at, when)
                                if r in live else r for r in rows))
    return len(live)


def person_for(runs_root: Path, given: str, admin_token: str) -> Person | None:
    """Who the token ``given`` is: the admin of ``admin_token`` (CURATOR_AUTH_TOKEN), a
    live token of the runs root, or None for no one. Compared in constant time."""
    if admin_token and given and hmac.compare_digest(
            given.encode("utf-8", "surrogateescape"), admin_token.encode()):
        return Person("admin", "admin")
    if not given:
        return None
    digest = _digest(given)
    for r in records(runs_root):
        if r.revoked_at is None and hmac.compare_digest(digest, r.sha256):
            return Person(r.name, r.role)
    return None


def job_action(kind: str) -> str:
    """The action (a key of :data:`ALLOWED`) a job of ``kind`` needs."""
    return JOB_ACTIONS.get(kind, "train")


def check_submitter(runs_root: Path, name: str, kind: str) -> None:
    """Refuse, in one line, a ``kind`` job that a token's person ``name`` queued and may not
    run now: their token was revoked since, or their role no longer allows it. A worker
    asks before it runs a job whose record says it came through a token
    (worker/jobs/execution.py ``run_job``), so a job queued before a revocation or a role
    change, or recorded through the dispatcher without the server's own check, is held
    to the rule the server applies to its routes. The reserved names (the
    ``CURATOR_AUTH_TOKEN`` admin) are always allowed."""
    if name in RESERVED:
        return
    live = [r for r in records(runs_root) if r.name == name and r.revoked_at is None]
    if not live:
        raise InputError(f"{name}'s token was revoked after this {kind} job was queued: it "
                         "was not run")
    Person(name, live[-1].role).require(job_action(kind))


def tokens_required(runs_root: Path, admin_token: str) -> bool:
    """Whether a request needs a token: CURATOR_AUTH_TOKEN is set, or the runs root has
    ever had a token (revoking the last one must not open the server to everyone; removing
    the file does)."""
    return bool(admin_token) or bool(records(runs_root))
