"""Versions: a run's curation frozen under a name, and read back.

:func:`save_version` resolves the store as it is now (the same resolution as
:func:`~worker.pipeline.curation.snapshot.current_snapshot`) and writes, in one
transaction of the run's curation store (storage/version_store.py), the raw state (per-class
parameters, cuts, overrides and relabels with their authors, the rule) and the resolved
outcome of every sample (:class:`Outcome`): kept or not, the label to train with, the
decision (dropped, proposed, kept), the reason, the finding kinds that mark it and who
decided it. The resolved part is what makes a version reproducible: an export or an
experiment of a version reads it, never the map or the findings, which a later run of the
pipeline may change. SQLite refuses any change to a saved version.

:func:`list_versions`, :func:`read_version`, :func:`live_version` (the live curation in
the same form, for a diff with ``current``) and :func:`matching_version` (the version equal
to an outcome) read them. No Dash, Celery or Redis here: the CLI, the API and the app call
these functions.

A store made before versions existed holds version ``initial`` (its decisions when it was
upgraded, authored ``unknown``) with its raw state only: its outcome is resolved from that
state, with the run's map and findings as they are then, and stored (once, never changed
again) the first time this module reads it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from worker.pipeline.curation.snapshot import CurationSnapshot, StoredCuration, current_snapshot
from worker.pipeline.errors import InputError
from worker.pipeline.findings import (
    DROPPED,
    KEPT,
    PROPOSED,
    marks,
    sample_decisions,
)
from worker.pipeline.map.clustering import DEFAULT_RULE
from worker.pipeline.storage.author import current_author
from worker.pipeline.storage.curation_store import connect, open_store
from worker.pipeline.storage.rundir import RunDir, now_iso
from worker.pipeline.storage.sample_table import SampleTable
from worker.pipeline.storage.version_store import (
    BLOBS,
    OUTCOME_FORMAT,
    StaleState,
    insert_outcome,
    insert_version,
    read_state,
    version_row,
    version_rows,
)

# The names versions (and exports, experiments and trainings) may have.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# The live curation's name in a diff; never a version's.
CURRENT = "current"
DEFAULT_MIN_FREE_MB = 64  # worker/settings_model.py min_free_mb (CURATOR_MIN_FREE_MB)
MAX_NOTE = 2000
# How often a save reads the store again when a decision landed while it resolved.
ATTEMPTS = 5
DECISION_WORDS = (DROPPED, PROPOSED, KEPT)
# Each blob's dtype (little-endian, OUTCOME_FORMAT 1).
DTYPES = {"kept": "|u1", "label": "<i4", "decision": "|u1", "reason": "<u2",
          "findings": "<u8", "decided_by": "<u4"}
LIST_COLUMNS = ("name", "created_at", "author", "note", "store_revision", "n_samples",
                "n_kept", "dropped", "relabelled", "decisions", "findings")


@dataclass(frozen=True)
class Outcome:
    """What the curation does to each sample, all arrays shape (N,).

    Attributes
    ----------
    kept : bool, trained on and exported
    labels : int32, the class code to train with (a reviewer's relabel, else the given)
    decision : str, ``dropped``, ``proposed`` (kept; a finding lists it and nobody
        decided) or ``kept``
    reason : str, why (``noise``, ``cluster``, ``relabel``, ``override_keep``,
        ``override_drop``, or the kind whose default drops it)
    findings : uint64, bit k set where kind ``kinds[k]`` marks the sample
    kinds : list of str, the finding kinds the bits stand for, in registry order
    decided_by : str, who made the last decision standing on the sample ("" for nobody)
    """

    kept: np.ndarray
    labels: np.ndarray
    decision: np.ndarray
    reason: np.ndarray
    findings: np.ndarray
    kinds: list[str]
    decided_by: np.ndarray

    def marked(self) -> dict[str, np.ndarray]:
        """Which samples each kind marks, bool (N,) by kind name."""
        return {k: (self.findings >> np.uint64(j) & np.uint64(1)).astype(bool)
                for j, k in enumerate(self.kinds)}

    def finding_names(self) -> list[str]:
        """Per sample, the kinds that mark it, comma-separated ('' for none), length N."""
        names: list[str] = []
        for bits in self.findings.tolist():
            names.append(",".join(k for j, k in enumerate(self.kinds) if bits >> j & 1))
        return names


@dataclass(frozen=True)
class FrozenVersion:
    """A version: its record and its frozen :class:`Outcome`.

    Attributes
    ----------
    name, created_at (UTC, ISO 8601), author, note : str
    store_revision : int, the store's revision it was taken at
    state : dict, the raw store state (storage/version_store.py ``read_state``)
    counts : dict, ``n_samples``, ``n_kept``, ``dropped``, ``relabelled``, ``decisions``
        (per decision word), ``findings`` (samples each kind marks)
    outcome : Outcome
    train_key, outcome_key : str, digests of the kept set with its labels, and of the
        whole outcome
    """

    name: str
    created_at: str
    author: str
    note: str
    store_revision: int
    state: dict
    counts: dict
    outcome: Outcome
    train_key: str
    outcome_key: str

    def record(self) -> dict[str, Any]:
        """Everything but the per-sample arrays, JSON-ready (an export's ``params.json``)."""
        return {"name": self.name, "created_at": self.created_at, "author": self.author,
                "note": self.note, "store_revision": self.store_revision,
                "state": self.state, "counts": self.counts, "train_key": self.train_key,
                "outcome_key": self.outcome_key}


def check_version_name(name: object) -> str:
    """``name`` when it may name a version: the export names' rule, and not ``current``.

    Raises
    ------
    InputError
        Any other name, in one line.
    """
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name) or ".." in name:
        raise InputError(f"invalid version name {name!r}: use letters, digits, '.', '_' and "
                         "'-' (at most 100, starting with a letter or digit)")
    if name == CURRENT:
        raise InputError(f"{CURRENT!r} stands for the live curation in a diff: pick another "
                         "version name")
    return name


# -- resolving -------------------------------------------------------------------------
def _stored(run: RunDir, state: dict, n_classes: int) -> StoredCuration:
    """The raw state as the snapshot's :class:`StoredCuration` (its rule, when the state
    has none, is the default of the code resolving it)."""
    params = {int(c): (float(e), int(m)) for c, (e, m) in state["params"].items()}
    if any(c not in params for c in range(n_classes)):
        raise InputError(f"{run.path} has no clustering yet: run 'curator cluster {run.path}'")
    return StoredCuration(params, {int(s): v[0] for s, v in state["overrides"].items()},
                          state.get("rule") or DEFAULT_RULE, int(state["revision"]),
                          {int(s): int(v[0]) for s, v in state["relabels"].items()},
                          {int(c): int(k) for c, k in state["cuts"].items()})


def resolve(run: RunDir, state: dict) -> CurationSnapshot:
    """The samples' fates under the raw ``state``, as
    :func:`~worker.pipeline.curation.snapshot.current_snapshot` resolves the store's
    (the same steps, fed with a state read once, so that the state and its outcome belong
    together)."""
    n_classes = len(run.read_meta().get("classes") or run.read_samples().classes)
    return current_snapshot(run, stored=_stored(run, state, n_classes))


def decided_by(state: dict) -> dict[int, str]:
    """Sample → the author of the newer of its override and relabel rows (the storage
    decision log's ``last_decisions``, read from a raw state)."""
    newest: dict[int, tuple[str, str]] = {}
    for table in ("overrides", "relabels"):
        for s, (_, author, at) in state[table].items():
            if int(s) not in newest or at > newest[int(s)][0]:
                newest[int(s)] = (at, author)
    return {s: author for s, (_, author) in newest.items()}


def outcome_of(snap: CurationSnapshot, authors: dict[int, str]) -> Outcome:
    """The :class:`Outcome` of a snapshot; ``authors``: sample → who decided it last."""
    n = len(snap.samples)
    marked = marks(snap.findings, snap.view())
    bits = np.zeros(n, np.uint64)
    for j, m in enumerate(marked.values()):
        bits[np.asarray(m, bool)] |= np.uint64(1 << j)
    who = np.full(n, "", dtype=object)
    for s, author in authors.items():
        if 0 <= s < n:
            who[s] = author
    return Outcome(np.asarray(snap.decisions.kept, bool).copy(),
                   snap.labels.astype(np.int32),
                   sample_decisions(snap.decisions.kept, snap.decisions.reason, marked),
                   np.asarray(snap.decisions.reason).astype(str), bits, list(marked),
                   who.astype(str))


def counts_of(outcome: Outcome, given: np.ndarray) -> dict[str, Any]:
    """``n_samples``, ``n_kept``, ``dropped``, ``relabelled`` (a label to train with other
    than the given ``given``, int (N,)), and the samples per decision word and per finding
    kind."""
    words = outcome.decision
    return {"n_samples": len(words), "n_kept": int(outcome.kept.sum()),
            "dropped": int((~outcome.kept).sum()),
            "relabelled": int((outcome.labels != given).sum()),
            "decisions": {w: int((words == w).sum()) for w in DECISION_WORDS},
            "findings": {k: int(m.sum()) for k, m in outcome.marked().items()}}


def train_key(kept: np.ndarray, labels: np.ndarray) -> str:
    """A digest of what a curated subset trains on: the kept set (bool (N,)) and the
    labels (int (N,)) of the kept samples."""
    h = hashlib.sha256(np.asarray(kept, np.uint8).tobytes())
    h.update(np.where(kept, labels, -1).astype("<i4").tobytes())
    return h.hexdigest()[:32]


# -- encoding ------------------------------------------------------------------------------
def _codes(values: np.ndarray, table: list[str]) -> np.ndarray:
    index = {v: k for k, v in enumerate(table)}
    return np.array([index[v] for v in values.tolist()], dtype=np.int64)


def encode(outcome: Outcome, given: np.ndarray) -> dict[str, Any]:
    """The outcome as version_store's columns: compressed blobs, tables, counts, keys."""
    tables = {"decision": list(DECISION_WORDS), "reason": sorted(set(outcome.reason.tolist())),
              "findings": list(outcome.kinds),
              "decided_by": ["", *sorted(set(outcome.decided_by.tolist()) - {""})],
              "dtypes": DTYPES}
    arrays = {"kept": outcome.kept, "label": outcome.labels,
              "decision": _codes(outcome.decision, tables["decision"]),
              "reason": _codes(outcome.reason, tables["reason"]),
              "findings": outcome.findings,
              "decided_by": _codes(outcome.decided_by, tables["decided_by"])}
    raw = {c: np.ascontiguousarray(arrays[c], dtype=DTYPES[c]).tobytes() for c in BLOBS}
    digest = hashlib.sha256(json.dumps(tables, sort_keys=True).encode())
    for c in BLOBS:
        digest.update(raw[c])
    return {"format": OUTCOME_FORMAT, "n_samples": len(outcome.kept),
            "counts": counts_of(outcome, given), "tables": tables,
            "train_key": train_key(outcome.kept, outcome.labels),
            "outcome_key": digest.hexdigest()[:32],
            **{c: zlib.compress(raw[c], 6) for c in BLOBS}}


def decode(stored: dict[str, Any]) -> Outcome:
    """The :class:`Outcome` of version_store's columns (:func:`encode`'s)."""
    if stored["format"] != OUTCOME_FORMAT:
        raise InputError(f"a version's outcome is in format {stored['format']}, this code "
                         f"reads {OUTCOME_FORMAT}: upgrade tsne-curator")
    tables = stored["tables"]
    arr = {c: np.frombuffer(zlib.decompress(stored[c]), dtype=tables["dtypes"][c])
           for c in BLOBS}

    def words(column: str) -> np.ndarray:
        return np.asarray(tables[column], dtype=object)[arr[column].astype(np.int64)] \
            .astype(str) if len(arr[column]) else np.zeros(0, str)

    return Outcome(arr["kept"].astype(bool), arr["label"].astype(np.int32),
                   words("decision"), words("reason"), arr["findings"].astype(np.uint64),
                   list(tables["findings"]), words("decided_by"))


# -- saving and reading ------------------------------------------------------------------
def _current_state(run: RunDir) -> dict:
    """The store's raw state, read in one transaction, with the rule it resolves with (a
    store that never set one: the default, named, so the state says what it means)."""
    with connect(open_store(run).path) as db:
        db.execute("BEGIN")
        try:
            state = read_state(db)
        finally:
            db.execute("COMMIT")
    return {**state, "rule": state["rule"] or DEFAULT_RULE}


def check_space(run: RunDir, size: int, min_free_mb: float) -> None:
    """Refuse to write ``size`` bytes into the run's store unless its filesystem keeps
    ``min_free_mb`` MB free after them (a full disk fails SQLite's writes halfway through
    a reviewer's work; the check comes before anything is written).

    Raises
    ------
    InputError
        ``"... MB free on ..., need ...: free space and run again"``, in one line.
    """
    free = shutil.disk_usage(run.path).free
    need = size + float(min_free_mb) * 2**20
    if free < need:
        raise InputError(f"{free / 2**20:.0f} MB free on {run.path}, need {need / 2**20:.0f} "
                         f"MB (the version's {size / 2**20:.1f} MB and a margin of "
                         f"{float(min_free_mb):.0f} MB, CURATOR_MIN_FREE_MB): free space and "
                         "run again")


def _size(encoded: dict[str, Any], row: dict[str, Any]) -> int:
    """About how many bytes a version takes in the store."""
    return sum(len(encoded[c]) for c in BLOBS) + len(json.dumps(row["state"])) + \
        len(json.dumps(encoded["counts"])) + len(json.dumps(encoded["tables"])) + 4096


def save_version(run: RunDir, name: str, note: str = "",
                 min_free_mb: float = DEFAULT_MIN_FREE_MB) -> dict[str, Any]:
    """Freeze the run's curation as it is now under ``name``, signed by
    :func:`~worker.pipeline.storage.author.current_author` (``curator version``).

    Parameters
    ----------
    name : str, unique in the run (:func:`check_version_name`)
    note : str, why it was saved (at most 2,000 characters)
    min_free_mb : float, the free space the run's filesystem must keep after it

    Returns
    -------
    dict, the version's row of :func:`list_versions`.

    Raises
    ------
    InputError
        A bad or existing name, a bad note, a run without a clustering, or too little free
        space; nothing is written.
    """
    check_version_name(name)
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise InputError(f"a version's note is text of at most {MAX_NOTE} characters")
    run.require()
    for _ in range(ATTEMPTS):
        state = _current_state(run)
        _refuse_existing(run, name)
        snap = resolve(run, state)
        encoded = encode(outcome_of(snap, decided_by(state)), snap.samples.labels)
        row = {"name": name, "created_at": now_iso(), "author": current_author(),
               "note": note, "state": state}
        check_space(run, _size(encoded, row), min_free_mb)
        try:
            with connect(open_store(run).path) as db:
                insert_version(db, row, encoded, state["revision"])
        except StaleState:
            continue  # a decision landed while it resolved: resolve the new state
        return _listed({**row, "store_revision": state["revision"],
                        "counts": encoded["counts"]})
    raise InputError(f"the curation of {run.path} changed {ATTEMPTS} times while version "
                     f"{name!r} was saved: save it again when the reviewers pause")


def _refuse_existing(run: RunDir, name: str) -> None:
    with connect(open_store(run).path) as db:
        taken = [r["name"] for r in version_rows(db)]
    if name in taken:
        raise InputError(f"version {name!r} exists: versions never change; pick another "
                         f"name (this run has {', '.join(taken)})")


def _listed(row: dict[str, Any]) -> dict[str, Any]:
    """A version's row as :func:`list_versions` gives it."""
    counts = row["counts"] or {}
    return {"name": row["name"], "created_at": row["created_at"], "author": row["author"],
            "note": row["note"], "store_revision": row["store_revision"],
            "n_samples": counts.get("n_samples"), "n_kept": counts.get("n_kept"),
            "dropped": counts.get("dropped"), "relabelled": counts.get("relabelled"),
            "decisions": counts.get("decisions", {}), "findings": counts.get("findings", {})}


def _fill(run: RunDir, row: dict[str, Any]) -> None:
    """Resolve and store the outcome of a version saved with its raw state only (a store's
    ``initial``), once (module docstring)."""
    snap = resolve(run, row["state"])
    encoded = encode(outcome_of(snap, decided_by(row["state"])), snap.samples.labels)
    check_space(run, _size(encoded, row), DEFAULT_MIN_FREE_MB)
    with connect(open_store(run).path) as db:
        insert_outcome(db, row["name"], encoded)


def _rows(run: RunDir) -> list[dict[str, Any]]:
    """Every version's row (version_store ``version_rows``), each one resolved."""
    with connect(open_store(run).path) as db:
        rows = version_rows(db)
    missing = [r for r in rows if r["counts"] is None]
    for row in missing:
        _fill(run, row)
    if missing:
        with connect(open_store(run).path) as db:
            rows = version_rows(db)
    return rows


def list_versions(run: RunDir) -> list[dict[str, Any]]:
    """The run's versions, oldest first (``curator versions``), each with
    :data:`LIST_COLUMNS`: ``name``, ``created_at`` (UTC, ISO 8601), ``author``, ``note``,
    ``store_revision``, ``n_samples``, ``n_kept``, ``dropped``, ``relabelled``,
    ``decisions`` (samples per word: dropped, proposed, kept) and ``findings`` (samples
    each finding kind marks)."""
    run.require()
    return [_listed(r) for r in _rows(run)]


class UnknownVersion(InputError):
    """A version name the run does not have (its one line names those it has)."""


def unknown_version(run: RunDir, name: str) -> UnknownVersion:
    """The one line for a version ``name`` the run does not have, naming those it has."""
    with connect(open_store(run).path) as db:
        names = [r["name"] for r in version_rows(db)]
    have = f"this run's versions are {', '.join(names)}" if names else \
        f"this run has no versions yet: save one with 'curator version {run.path} NAME'"
    return UnknownVersion(f"no version {name!r}: {have}")


def read_version(run: RunDir, name: str) -> FrozenVersion:
    """Version ``name`` with its frozen outcome.

    Raises
    ------
    InputError
        No such version (the line names those there are).
    """
    run.require()
    with connect(open_store(run).path) as db:
        row = version_row(db, str(name))
    if row is None:
        raise unknown_version(run, str(name))
    if row["outcome"] is None:
        _fill(run, row)
        with connect(open_store(run).path) as db:
            row = version_row(db, str(name))
    stored = row["outcome"]
    return FrozenVersion(row["name"], row["created_at"], row["author"], row["note"],
                         int(row["store_revision"]), row["state"], stored["counts"],
                         decode(stored), stored["train_key"], stored["outcome_key"])


def live_version(run: RunDir) -> FrozenVersion:
    """The live curation in a version's form, named :data:`CURRENT`, saved nowhere."""
    run.require()
    state = _current_state(run)
    snap = resolve(run, state)
    outcome = outcome_of(snap, decided_by(state))
    encoded = encode(outcome, snap.samples.labels)
    return FrozenVersion(CURRENT, now_iso(), current_author(), "", int(state["revision"]),
                         state, encoded["counts"], outcome, encoded["train_key"],
                         encoded["outcome_key"])


def version_or_current(run: RunDir, name: str) -> FrozenVersion:
    """:func:`live_version` for ``current``, else :func:`read_version`.

    Raises
    ------
    InputError
        No such version: the line names those there are, and ``current``.
    """
    if name == CURRENT:
        return live_version(run)
    try:
        return read_version(run, name)
    except UnknownVersion as exc:
        raise InputError(f"{exc} (or {CURRENT!r}, the live curation)") from None


def matching_version(run: RunDir, outcome_key: str | None = None,
                     train_key: str | None = None) -> str | None:
    """The newest version whose whole outcome (``outcome_key``) or whose kept set and
    labels (``train_key``, :func:`train_key`) equal the given digest, or None."""
    found = None
    for row in _rows(run):
        if (outcome_key is not None and row["outcome_key"] == outcome_key) or \
                (train_key is not None and row["train_key"] == train_key):
            found = row["name"]
    return found


def snapshot_outcome_key(run: RunDir, snap: CurationSnapshot) -> str | None:
    """The ``outcome_key`` of a snapshot the caller already holds (an export's), with the
    authors the store's decision rows record; None when the store changed since the
    snapshot was read (its authors may no longer be the snapshot's)."""
    state = _current_state(run)
    if int(state["revision"]) != snap.stored.revision:
        return None
    return encode(outcome_of(snap, decided_by(state)), snap.samples.labels)["outcome_key"]


def version_samples(run: RunDir, version: FrozenVersion) -> tuple[SampleTable, np.ndarray]:
    """The run's samples and the version's labels to train with (int64 (N,)), checked to
    be of the same run.

    Raises
    ------
    InputError
        The version has another number of samples than the run (a run made again).
    """
    samples = run.read_samples()
    if len(samples) != len(version.outcome.kept):
        raise InputError(f"version {version.name!r} holds {len(version.outcome.kept)} "
                         f"samples, the run {len(samples)}: it belongs to another making "
                         "of this run")
    return samples, version.outcome.labels.astype(np.int64)

