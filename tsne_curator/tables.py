"""A run's findings, summary and export manifest as pandas DataFrames.

Findings and the summary are read from one snapshot of the run
(:func:`~worker.pipeline.curation.snapshot.current_snapshot`, the read model ``curator
findings``, ``curator export`` and the app read), with each finding kind's own marks,
columns and why-lines (worker/pipeline/findings). Versions and their diffs are
worker/pipeline/curation/versions.py's and version_diff.py's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from worker.pipeline.curation.snapshot import CurationSnapshot, current_snapshot, summary_rows
from worker.pipeline.curation.version_diff import DIFF_COLUMNS, diff_versions
from worker.pipeline.curation.versions import LIST_COLUMNS, list_versions
from worker.pipeline.findings import get_kind, kinds, marks, sample_decisions
from worker.pipeline.findings.testsplit import read_test_paths
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.decision_log import Decided, last_decisions
from worker.pipeline.storage.rundir import RunDir

FINDING_COLUMNS = ("index", "path", "label", "kind", "score", "suggested_label", "related",
                   "decision", "reason", "why", "decided_by", "decided_at")
# Manifest columns read as text whatever they hold (class names may be numbers).
TEXT_COLUMNS = {"path", "label", "given_label", "true_label", "reason", "findings",
                "suggested_label", "decision", "decided_by"}


def findings_frame(run: RunDir, kind: str | None = None) -> pd.DataFrame:
    """Every sample a finding kind marks now (one row per sample and kind, each kind's
    rows by score, highest first, kinds in registry order), then, without ``kind``, every
    sample a reviewer decided that no kind marks (``kind`` "").

    Returns
    -------
    DataFrame with columns

    - ``index`` (int): the sample's index (row of ``features.npy``, ``samples.csv``);
    - ``path``, ``label``: its path and given class;
    - ``kind``: the finding kind (``label``, ``duplicate``, ``leak``, ``outlier``);
    - ``score`` (float): the kind's score, higher = more likely an issue (NaN for "");
    - ``suggested_label``: the class the label evidence suggests, for samples the label
      rule flags ("" otherwise);
    - ``related`` (int): the related sample (a duplicate's kept copy; for a leak, the
      test image's index in the test split), -1 for none;
    - ``decision``: ``dropped``, ``proposed`` (kept, but a finding lists it below its
      kind's drop cut and nobody decided) or ``kept``: the sample's fate now, as the
      export's ``decision`` column;
    - ``reason``: why (``noise``, ``cluster``, ``relabel``, ``override_keep``,
      ``override_drop``, or the kind whose default drops it);
    - ``why``: the kind's one-line reason;
    - ``decided_by``, ``decided_at``: who made the last decision standing on it (an
      override or a relabel) and when (UTC, ISO 8601); "" where nobody decided.
    """
    chosen = [get_kind(kind)] if kind is not None else kinds()  # an unknown kind: InputError
    signed = last_decisions(open_store(run))
    snap = current_snapshot(run)
    view = snap.view(read_test_paths(run))
    marked = marks(snap.findings, view)
    words = sample_decisions(snap.decisions.kept, snap.decisions.reason, marked)
    n = len(snap.samples)
    suggested = [""] * n
    for k in kinds():
        if "suggested_label" in k.columns:
            suggested = k.column_values(snap.findings[k.name], view)["suggested_label"]
    parts = []
    for k in chosen:
        table = snap.findings[k.name]
        idx = np.flatnonzero(marked[k.name])
        idx = idx[np.argsort(-table.score[idx], kind="stable")]
        found = Found(k.name, idx, table.score[idx], table.related[idx],
                      [k.why(table, int(i), view) for i in idx.tolist()])
        parts.append(_rows(snap, found, suggested, words, signed))
    if kind is None:
        listed = np.zeros(n, bool)
        for m in marked.values():
            listed |= m
        decided = sorted({i for i in (*snap.stored.overrides, *snap.stored.relabels)
                          if 0 <= i < n and not listed[i]})
        idx = np.asarray(decided, np.int64)
        found = Found("", idx, np.full(len(idx), np.nan), np.full(len(idx), -1, np.int64),
                      [""] * len(idx))
        parts.append(_rows(snap, found, suggested, words, signed))
    return pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)


@dataclass(frozen=True)
class Found:
    """What one finding kind says of the samples it lists, one entry per sample.

    Attributes
    ----------
    kind : the kind's name ("" for samples only a reviewer decided)
    idx : np.ndarray, shape (m,), the samples' indices
    score : np.ndarray, shape (m,), the kind's scores (NaN for none)
    related : np.ndarray, shape (m,), the related samples (-1 for none)
    why : list of m why-lines
    """

    kind: str
    idx: np.ndarray
    score: np.ndarray
    related: np.ndarray
    why: list[str]


def _rows(snap: CurationSnapshot, found: Found, suggested: list[str],
          words: np.ndarray, signed: dict[int, Decided]) -> pd.DataFrame:
    """The findings table's rows of ``found``; ``suggested`` and ``words``: every sample's
    suggested label and decision (each shape (N,)); ``signed``: the decided samples' last
    author and time."""
    s, d, idx = snap.samples, snap.decisions, found.idx
    none = Decided("", "")
    return pd.DataFrame({
        "index": idx.astype(np.int64),
        "path": [s.paths[i] for i in idx.tolist()],
        "label": [s.classes[int(c)] for c in s.labels[idx].tolist()],
        "kind": [found.kind] * len(idx),
        "score": np.asarray(found.score, np.float64),
        "suggested_label": [suggested[i] for i in idx.tolist()],
        "related": np.asarray(found.related, np.int64),
        "decision": words[idx].tolist(),
        "reason": d.reason[idx].tolist(),
        "why": found.why,
        "decided_by": [signed.get(i, none).author for i in idx.tolist()],
        "decided_at": [signed.get(i, none).at for i in idx.tolist()],
    })


def summary_frame(run: RunDir) -> pd.DataFrame:
    """:func:`~worker.pipeline.curation.snapshot.summary_rows` at the run's current state
    (with a count per finding kind, as the Curate page's summary), one row per class and
    a last ``total`` row."""
    snap = current_snapshot(run)
    return pd.DataFrame(summary_rows(snap.samples, snap.decisions, snap.findings))


def manifest_frame(export: Path) -> pd.DataFrame:
    """An export's manifest: ``manifest.csv`` with ``index``, ``cluster`` as int and
    ``kept`` as bool, class names and paths as text, other columns as numbers where every
    value is one (empty: NaN); for an ``indices`` export, the kept indices as ``index``."""
    manifest = export / "manifest.csv"
    if not manifest.is_file():
        kept = np.loadtxt(export / "kept_indices.txt", dtype=np.int64, ndmin=1)
        return pd.DataFrame({"index": kept})
    df = pd.read_csv(manifest, dtype=str, keep_default_na=False)
    for column in df.columns:
        if column in ("index", "cluster"):
            df[column] = df[column].astype(np.int64)
        elif column == "kept":
            df[column] = df[column] == "1"
        elif column not in TEXT_COLUMNS:
            try:
                df[column] = pd.to_numeric(df[column].replace("", np.nan))
            except (ValueError, TypeError):
                pass  # text, as written
    return df


def versions_frame(run: RunDir) -> pd.DataFrame:
    """The run's versions, oldest first (``curator versions``), one row each: ``name``,
    ``created_at`` (UTC, ISO 8601), ``author``, ``note``, ``store_revision`` (int),
    ``n_samples``, ``n_kept``, ``dropped``, ``relabelled`` (int), ``decisions`` (dict:
    samples per decision word) and ``findings`` (dict: samples each finding kind marks)."""
    return pd.DataFrame(list_versions(run), columns=list(LIST_COLUMNS))


def diff_frame(run: RunDir, a: str, b: str) -> pd.DataFrame:
    """The samples whose fate differs from version ``a`` to version ``b`` (``current``:
    the live curation), one row per change (``curator diff``): ``sample`` (int), ``path``,
    ``change`` (``dropped``: kept in a, dropped in b; ``kept back``: the reverse;
    ``relabelled``: another label to train with), ``from`` and ``to`` (class names, for
    relabelled rows; "" otherwise), ``kinds`` (the finding kinds that mark the sample,
    comma-separated: b's, or a's for kept back), ``reason`` (the same side's), and
    ``decided_by`` (who decided it in b; "" where no person did)."""
    df = pd.DataFrame(diff_versions(run, a, b), columns=list(DIFF_COLUMNS))
    return df.astype({"sample": np.int64})
