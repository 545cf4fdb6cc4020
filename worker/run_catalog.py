"""Runs under a runs root: listed and resolved in one place.

The Runs page, the Jobs page, ``curator jobs``/``cancel`` and the stale-job check all list
runs through :func:`list_runs`, and every run id goes through :func:`resolve_run`, so they
agree (nested run ids included). A run that cannot be read (a damaged or missing store, a
bad ``run.json``, a link that leaves the runs root) is one entry with a one-line reason;
it never stops the others from being listed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.pipeline.errors import InputError
from worker.pipeline.storage.curation_store import connect
from worker.pipeline.storage.rundir import RunDir, step_record

STORE = "curation.sqlite"
MAX_DEPTH = 4  # how deep run folders may be nested under the root


def check_runs_root(runs_root: Path) -> Path:
    """``runs_root`` as a folder of runs: an existing folder, or one made now (with its
    parents). ``curator serve``, ``tc.serve`` and ``curator worker`` call it before they
    print or start anything.

    Raises
    ------
    InputError
        A file, or a place this user cannot make a folder, in one line.
    """
    root = Path(runs_root)
    fix = "give a folder of runs with --runs-root or CURATOR_RUNS_ROOT"
    if root.exists() and not root.is_dir():
        raise InputError(f"runs root {root} is a file: {fix}")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, no permission, a read-only disk
        raise InputError(f"runs root {root} cannot be made a folder ({exc.strerror}): "
                         f"{fix}") from None
    return root


def resolve_run(runs_root: Path, run_id: str) -> RunDir:
    """The run folder for ``run_id`` (a path relative to the runs root), never outside it."""
    root = Path(runs_root).resolve()
    if not isinstance(run_id, str) or not run_id or "\x00" in run_id or len(run_id) > 1024 \
            or any(len(part.encode("utf-8", "surrogatepass")) > 255
                   for part in run_id.split("/")):
        raise InputError(f"invalid run id {run_id[:80]!r}: give a folder inside the runs "
                         f"root {root}" if isinstance(run_id, str) else
                         f"invalid run id {run_id!r}: give a folder inside the runs root")
    try:
        path = (root / run_id).resolve()
    except (OSError, RuntimeError, ValueError):  # a name the file system refuses, a link loop
        raise InputError(f"invalid run id {run_id[:80]!r}: give a folder inside the runs "
                         f"root {root}") from None
    if Path(run_id).is_absolute() or not path.is_relative_to(root) or path == root:
        raise InputError(f"invalid run id {run_id!r}: give a folder inside the runs root {root}")
    return RunDir(path)


def run_id_for(runs_root: Path, path: Path) -> str:
    """The run id of ``path``; it must lie inside the runs root that workers share."""
    root, target = Path(runs_root).resolve(), Path(path).resolve()
    if not target.is_relative_to(root) or target == root:
        raise InputError(f"{path} is outside the runs root {root}; with a broker, runs must "
                         "live under CURATOR_RUNS_ROOT so every worker can reach them")
    return target.relative_to(root).as_posix()


@dataclass(frozen=True)
class RunEntry:
    """One run folder: its id, its ``run.json`` (empty before ingest), and why it cannot
    be used, if it cannot."""

    id: str
    path: Path
    meta: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def store(self) -> Path:
        return self.path / STORE


def _check(run_id: str, path: Path) -> RunEntry:
    meta: dict[str, Any] = {}
    if (path / "run.json").is_file():
        try:
            meta = json.loads((path / "run.json").read_text())
            if not isinstance(meta, dict):
                raise ValueError("not an object")
        except (OSError, ValueError, UnicodeDecodeError):
            return RunEntry(run_id, path, {}, "run.json cannot be read: restore it or "
                                              "re-create the run")
    store = path / STORE
    if not store.is_file():
        if step_record(meta, "cluster"):
            return RunEntry(run_id, path, meta, f"{STORE} is missing: its curation is lost; "
                                                "run 'curator cluster' to start a new one")
        return RunEntry(run_id, path, meta)
    try:
        with connect(store) as db:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except InputError as exc:
        return RunEntry(run_id, path, meta, str(exc).replace(str(store), STORE))
    return RunEntry(run_id, path, meta)


def list_runs(runs_root: Path) -> list[RunEntry]:
    """Every run under ``runs_root`` (folders holding ``run.json`` or a job store, nested
    up to ``MAX_DEPTH``), newest first. Hidden folders and a run's own subfolders are not
    searched; a link that leaves the root is listed as broken, one inside it is skipped
    (the run is listed where it really is)."""
    root = Path(runs_root).resolve()
    if not root.is_dir():
        return []
    found: list[RunEntry] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        depth = len(here.relative_to(root).parts)
        if here != root and ("run.json" in filenames or STORE in filenames):
            found.append(_check(here.relative_to(root).as_posix(), here))
            dirnames[:] = []  # a run's subfolders (cache, exports, train) are not runs
            continue
        keep = []
        for name in sorted(dirnames):
            sub = here / name
            if name.startswith("."):
                continue
            if sub.is_symlink():
                target = sub.resolve()
                if not target.is_relative_to(root):
                    found.append(RunEntry(sub.relative_to(root).as_posix(), sub, {},
                                          "links outside the runs root: not opened"))
                continue
            if depth + 1 <= MAX_DEPTH:
                keep.append(name)
        dirnames[:] = keep

    def mtime(e: RunEntry) -> float:
        try:
            return e.path.lstat().st_mtime
        except OSError:
            return 0.0

    return sorted(found, key=mtime, reverse=True)
