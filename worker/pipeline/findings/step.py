"""The findings step: every stored kind's table, computed when its inputs changed."""

from __future__ import annotations

import hashlib

import numpy as np

from worker.pipeline.findings.base import DROP, FindingTable, View
from worker.pipeline.findings.context import FindingContext
from worker.pipeline.findings.files import load_findings, save_table, table_path
from worker.pipeline.findings.kind_registry import kinds
from worker.pipeline.progress import ProgressFn, report
from worker.pipeline.storage.rundir import RunDir

# Part of every kind's key: change it when a kind's method changes.
FINDINGS_VERSION = "1"


def stored_thresholds(run: RunDir) -> dict[str, float]:
    """The cuts given before (``curator findings --duplicate-threshold``…), by kind."""
    return dict(run.step("findings").get("thresholds", {}))


def _base_key(run: RunDir, labels: np.ndarray) -> hashlib._Hash:
    h = hashlib.sha256(FINDINGS_VERSION.encode())
    h.update(str(run.step("extract").get("cache_key")).encode())
    h.update(str(run.step("embed").get("at")).encode())
    h.update(str(run.step("evidence").get("key")).encode())
    h.update(np.ascontiguousarray(labels, np.int64).tobytes())
    return h


def ensure_findings(run: RunDir, thresholds: dict[str, float] | None = None,
                    redo: bool = False, progress: ProgressFn | None = None
                    ) -> dict[str, FindingTable]:
    """Compute every stored kind whose inputs (features, map, labels, evidence, its cut)
    changed since its table was written, and record what each was computed with.

    ``thresholds``: new cuts by kind name, kept for later runs of the step.

    Returns
    -------
    kind name → its table (every registered kind, :func:`~.files.load_findings`)
    """
    samples = run.read_samples()
    cuts = {**stored_thresholds(run), **(thresholds or {})}
    ctx = FindingContext(run, samples, cuts, progress)
    record = dict(run.step("findings").get("kinds", {}))
    base = _base_key(run, samples.labels)
    todo = [k for k in kinds() if getattr(k, "stored", True)]
    for done, kind in enumerate(todo, 1):
        h = base.copy()
        h.update(f"{kind.name}:v{kind.version}:{kind.key(ctx)}".encode())
        key = h.hexdigest()[:16]
        if not redo and record.get(kind.name, {}).get("key") == key \
                and table_path(run, kind.name).is_file():
            continue
        report(progress, done - 1, len(todo), f"findings: {kind.name}")
        table = kind.compute(ctx)
        save_table(run, kind.name, table)
        record[kind.name] = {"key": key, "count": int(table.issue.sum()),
                             "dropped": int(kind.dropping(table).sum()),
                             "threshold": kind.cut(ctx), "drop_threshold": kind.drop_cut(ctx),
                             **table.info}
    run.mark_step("findings", kinds=record, thresholds=cuts)
    report(progress, len(todo), len(todo), "findings: done")
    return load_findings(run, len(samples))


def default_drops(tables: dict[str, FindingTable], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, the first kind (in registry order) whose default drops it ('' for
    none), and whether that drop outlasts a reviewer's relabel (``cleared_by_relabel``):
    what :func:`~worker.pipeline.map.clustering.decide` applies before the overrides.
    ``label`` is the rule's own and is not among them.

    Returns
    -------
    reason : str (N,), sticky : bool (N,)
    """
    out = np.full(n, "", dtype="<U13")
    sticky = np.zeros(n, bool)
    for kind, table in _stored_last_first(tables, n):
        if kind.decision == DROP:
            marked = kind.dropping(table)
            out[marked] = kind.name
            sticky[marked] = not kind.cleared_by_relabel
    return out, sticky


def _stored_last_first(tables: dict[str, FindingTable], n: int):  # noqa: ANN202 - generator
    """(kind, table) of every stored kind with a table of ``n`` rows, last registered
    first: what a later loop writes, an earlier kind overwrites (the first kind wins)."""
    for kind in reversed(kinds()):
        table = tables.get(kind.name)
        if getattr(kind, "stored", True) and table is not None and len(table) == n:
            yield kind, table


def proposals(tables: dict[str, FindingTable], n: int) -> np.ndarray:
    """Per sample, the first kind (in registry order) that marks it without its default
    dropping it ('' for none): what the map draws as proposed (kept until a person
    decides). ``label`` is the rule's own and is not among them. str (N,)."""
    out = np.full(n, "", dtype="<U13")
    for kind, table in _stored_last_first(tables, n):
        out[np.asarray(kind.current(table), bool) & ~kind.dropping(table)] = kind.name
    return out


def marks(tables: dict[str, FindingTable], view: View) -> dict[str, np.ndarray]:
    """Which samples each kind marks now, bool (N,) by kind name."""
    return {k.name: np.asarray(k.current(tables[k.name], view), bool) for k in kinds()
            if k.name in tables}


# What happens to a sample at the run's current state, in the export's ``decision``
# column, ``curator findings`` and the review list: left out; kept but listed by a finding
# that only proposes it (until a person decides); kept.
DROPPED, PROPOSED, KEPT = "dropped", "proposed", "kept"
# The decisions' reasons that say a person decided the sample.
PERSON_DECIDED = ("override_keep", "override_drop", "relabel")


def sample_decisions(kept: np.ndarray, reason: np.ndarray,
                     marked: dict[str, np.ndarray]) -> np.ndarray:
    """Per sample :data:`DROPPED`, :data:`PROPOSED` or :data:`KEPT`: proposed is a kept
    sample that some kind marks (:func:`marks`) and no person decided (``reason``, from
    :func:`~worker.pipeline.map.clustering.decide`). str (N,)."""
    out = np.where(np.asarray(kept, bool), KEPT, DROPPED).astype("<U8")
    listed = np.zeros(len(out), bool)
    for m in marked.values():
        listed |= np.asarray(m, bool)
    out[(out == KEPT) & listed & ~np.isin(reason, PERSON_DECIDED)] = PROPOSED
    return out


def sample_findings(marked: dict[str, np.ndarray], n: int) -> list[str]:
    """Per sample, the kinds that mark it, comma-separated ('' for none)."""
    out = [""] * n
    for name, m in marked.items():
        for i in np.flatnonzero(m).tolist():
            out[i] = f"{out[i]},{name}" if out[i] else name
    return out
