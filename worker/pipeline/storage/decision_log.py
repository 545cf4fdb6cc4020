"""The curation store's signed decisions, read: a run's history with who made each change
and when, one sample's decisions, and each decided sample's last author and time.

``curator history``, ``run.history()``, the review list and ``run.findings()`` read these
(worker/pipeline/storage/curation_store.py writes them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from worker.pipeline.errors import InputError
from worker.pipeline.storage.curation_store import PER_SAMPLE, CurationStore, connect, open_store
from worker.pipeline.storage.rundir import RunDir

# A change's words in a sample's history, by table: (before, after) → what happened.
WORDS = {"overrides": "decision", "relabels": "label"}


@dataclass(frozen=True)
class Decided:
    """The last decision a sample's row holds: who set it and when (ISO 8601, UTC)."""

    author: str
    at: str


def last_decisions(store: CurationStore) -> dict[int, Decided]:
    """Each decided sample (an override or a relabel stands) → the newer of its rows'
    authors and times."""
    out: dict[int, Decided] = {}
    with connect(store.path) as db:
        for table in PER_SAMPLE:
            for sample, at, author in db.execute(
                    f"SELECT sample, updated_at, author FROM {table}"):  # noqa: S608
                if sample not in out or at > out[sample].at:
                    out[sample] = Decided(author, at)
    return out


def last_decision(store: CurationStore, sample: int) -> Decided | None:
    """:func:`last_decisions` of one sample (two point reads: a hover asks for it)."""
    found = None
    with connect(store.path) as db:
        for table in PER_SAMPLE:
            row = db.execute(f"SELECT updated_at, author FROM {table} WHERE sample=?",  # noqa: S608
                             (int(sample),)).fetchone()
            if row and (found is None or row[0] > found.at):
                found = Decided(row[1], row[0])
    return found


def sample_history(store: CurationStore, sample: int) -> list[dict]:
    """Every decision that changed ``sample``, oldest first: ``id``, ``at``, ``author``,
    ``description`` (the action's words), ``what`` ("decision" or "label"), ``before``,
    ``after`` (None: no override or relabel), ``undone``, ``undone_by``, ``undone_at``.
    A decision that a later one on the same sample replaced is listed too: the later one
    stands, and says who made it."""
    rows = []
    with connect(store.path) as db:
        for hid, description, changes, created, author, undone, by, at in db.execute(
                "SELECT id, description, changes, created_at, author, undone, undone_by, "
                "undone_at FROM history WHERE pipeline=0 ORDER BY id"):
            for table, key, before, after in json.loads(changes):
                if table in PER_SAMPLE and key == sample:
                    rows.append({"id": hid, "at": created, "author": author,
                                 "description": description, "what": WORDS[table],
                                 "before": before, "after": after, "undone": bool(undone),
                                 "undone_by": by, "undone_at": at})
    return rows


def overridden(store: CurationStore, author: str, limit: int = 20) -> list[dict]:
    """``author``'s decisions that another person replaced (a later decision on the same
    sample that stands) or took back (an undo: the undo stack is the run's, not each
    person's), newest first: ``sample``, ``what`` ("decision" or "label"), ``mine`` and
    ``theirs`` (the values; None: none), ``by`` and ``at`` (who and when), ``undone``
    (True: taken back by ``by``). At most ``limit`` rows (the Curate page tells the
    earlier author at their next visit; ``curator history --sample`` lists every decision).

    A decision replaced or undone by its own author, or replaced only by a change that was
    undone since, is not listed; nor is one the author decided again afterwards."""
    mine: dict[tuple[str, int], object] = {}  # (table, sample) → the author's last value
    out: dict[tuple[str, int], dict] = {}
    with connect(store.path) as db:
        for hid, changes, created, who in db.execute(
                "SELECT id, changes, created_at, author FROM history WHERE pipeline=0 AND "
                "undone=0 ORDER BY id"):
            for table, key, _before, after in json.loads(changes):
                if table not in PER_SAMPLE:
                    continue
                at = (table, key)
                if who == author:
                    mine[at] = after
                    out.pop(at, None)
                elif at in mine and after != mine[at]:
                    out[at] = {"sample": int(key), "what": WORDS[table], "mine": mine[at],
                               "theirs": after, "by": who, "at": created, "id": hid,
                               "undone": False}
                else:  # the author's value set again by another, or a sample not theirs
                    out.pop(at, None)
        for hid, changes, by, when in db.execute(
                "SELECT id, changes, undone_by, undone_at FROM history WHERE pipeline=0 AND "
                "undone>0 AND author=? AND undone_by!=? ORDER BY id", (author, author)):
            for table, key, before, after in json.loads(changes):
                if table in PER_SAMPLE and (table, key) not in mine:
                    out.setdefault((table, key), {
                        "sample": int(key), "what": WORDS[table], "mine": after,
                        "theirs": before, "by": by, "at": when, "id": hid, "undone": True})
    newest = sorted(out.values(), key=lambda r: (r["at"], r["id"]), reverse=True)[:limit]
    return [{k: v for k, v in r.items() if k != "id"} for r in newest]


RUN_COLUMNS = ("id", "at", "author", "description", "changes", "state")
SAMPLE_COLUMNS = ("id", "at", "author", "what", "before", "after", "state", "description")


def _state(row: dict) -> str:
    """"stands", "undone by NAME at TIME", or "pipeline" (its own steps are never undone)."""
    if row.get("pipeline"):
        return "pipeline"
    return f"undone by {row['undone_by']} at {row['undone_at']}" if row["undone"] \
        else "stands"


def history_rows(run: RunDir, sample: int | None = None, limit: int = 50) -> list[dict]:
    """What ``curator history`` prints and ``run.history()`` returns.

    Without ``sample``: the run's last ``limit`` changes, newest first
    (:data:`RUN_COLUMNS`; ``changes`` how many values each changed). With it: every
    decision on that sample, oldest first (:data:`SAMPLE_COLUMNS`; ``before`` and
    ``after`` in words: "keep", "drop", a class name, or "" for none).

    Raises
    ------
    InputError
        ``sample`` is not a sample of the run.
    """
    store = open_store(run)
    if sample is None:
        return [{"id": r["id"], "at": r["created_at"], "author": r["author"],
                 "description": r["description"], "changes": r["n_changes"],
                 "state": _state(r)} for r in store.history(limit)]
    samples = run.read_samples()
    if isinstance(sample, bool) or not 0 <= int(sample) < len(samples):
        raise InputError(f"no sample {sample!r}: the run's samples are 0 to "
                         f"{len(samples) - 1}")

    def word(what: str, value: object) -> str:
        if value is None:
            return ""
        return samples.classes[int(value)] if what == "label" else str(value)

    return [{"id": r["id"], "at": r["at"], "author": r["author"], "what": r["what"],
             "before": word(r["what"], r["before"]), "after": word(r["what"], r["after"]),
             "state": _state(r), "description": r["description"]}
            for r in sample_history(store, int(sample))]
