"""Each kind's table in the run directory: ``findings/<kind>.npz``.

Arrays ``issue`` (bool), ``score`` (float32), ``related`` (int64, -1 none), ``drop``
(bool: the marks dropped by default; absent: all of them) and one ``fact_<name>`` per
fact, all shape (N,) (docs/run-directory.md); what each kind was
computed with (its cut, the scale, counts) is in run.json under ``steps.findings``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from worker.pipeline.findings.base import FindingTable
from worker.pipeline.findings.kind_registry import kinds
from worker.pipeline.storage.rundir import RunDir, atomic_path, damaged_file


def table_path(run: RunDir, name: str) -> Path:
    return run.path / "findings" / f"{name}.npz"


def save_table(run: RunDir, name: str, table: FindingTable) -> None:
    arrays = {"issue": table.issue, "score": table.score, "related": table.related,
              **({} if table.drop is None else {"drop": table.drop}),
              **{f"fact_{k}": v for k, v in table.facts.items()}}
    with atomic_path(table_path(run, name), ".npz") as tmp:
        np.savez(tmp, **arrays)


def load_table(run: RunDir, name: str, n: int) -> FindingTable | None:
    """The stored table of kind ``name``, or None when there is none (or it is of
    another sample count: the run was made again)."""
    path = table_path(run, name)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        raise damaged_file(path, "not a findings table",
                           f"move it away and run 'curator findings {run.path} --redo'"
                           ) from None
    if len(arrays.get("issue", ())) != n:
        return None
    info = run.step("findings").get("kinds", {}).get(name, {})
    return FindingTable(arrays["issue"].astype(bool), arrays["score"], arrays["related"],
                        {k[5:]: v for k, v in arrays.items() if k.startswith("fact_")},
                        dict(info),
                        arrays["drop"].astype(bool) if "drop" in arrays else None)


def load_findings(run: RunDir, n: int) -> dict[str, FindingTable]:
    """Every registered kind's table (an empty one where none is stored yet)."""
    out = {}
    for kind in kinds():
        if getattr(kind, "stored", True):
            out[kind.name] = load_table(run, kind.name, n) or FindingTable.empty(n)
        else:
            out[kind.name] = kind.read(run, n)  # type: ignore[attr-defined]
    return out


def files_stamp(run: RunDir) -> tuple[int, ...]:
    """mtimes of the stored tables: part of the app's cache keys."""
    return tuple(table_path(run, k.name).stat().st_mtime_ns
                 if table_path(run, k.name).is_file() else 0 for k in kinds())
