"""Write the kept subset out: a CSV manifest, an image-folder tree, or an index list.

Every export lands in ``<run>/exports/<name>/`` with ``params.json`` (the per-class
parameters, rule, overrides and store revision that produced it, and the version whose
frozen outcome equals it, if any). It is built in a hidden temporary folder and renamed
into place only when complete, so a killed export leaves nothing half-written, and an
existing export is never overwritten.

An export of a version (``version=``, worker/pipeline/curation/versions.py) writes the
version's frozen outcome, not the live one, and is reproducible byte for byte: its
``params.json`` holds the version's record and no export time or name, and its manifest
the columns the version froze (:data:`VERSION_COLUMNS`), so two exports of one version in
one format are the same files, however the curation or the map changed since.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from worker.pipeline.curation.snapshot import CurationSnapshot, current_snapshot, summary_rows
from worker.pipeline.curation.versions import (
    SAFE_NAME,
    FrozenVersion,
    matching_version,
    read_version,
    snapshot_outcome_key,
    version_samples,
)
from worker.pipeline.errors import InputError
from worker.pipeline.findings import PROPOSED, kinds, marks, sample_decisions, sample_findings
from worker.pipeline.findings.step import stored_thresholds
from worker.pipeline.findings.testsplit import read_test_paths
from worker.pipeline.progress import ProgressFn, report
from worker.pipeline.sources.datasets import Dataset
from worker.pipeline.sources.ingest import open_run_dataset
from worker.pipeline.storage.rundir import RunDir, now_iso
from worker.pipeline.storage.runlock import run_lock

EXPORT_LOCK = ".export.lock"

FORMATS = ("csv", "imagefolder", "indices")
_NAME = SAFE_NAME  # the names versions, experiments and trainings may have too


def check_export_name(run: RunDir, name: str) -> Path:
    """The destination folder for export ``name``, refusing anything that could escape it."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise InputError(f"invalid export name {name!r}: use letters, digits, '.', '_' and '-' "
                         "(no '/', no '..')")
    root = run.exports.resolve()
    dest = (root / name).resolve()
    if dest.parent != root:
        raise InputError(f"export name {name!r} leaves the run's exports folder")
    return dest


# The columns every manifest has; each finding kind adds its own after them, in registry
# order (worker/pipeline/findings: label's score and suggested_label, duplicate_group,
# duplicate_of, leaks_to, outlier_score, outlier).
BASE_COLUMNS = ("index", "path", "label", "given_label", "true_label", "cluster", "kept",
                "reason", "findings", "decision")


def manifest_columns() -> tuple[str, ...]:
    return BASE_COLUMNS + tuple(c for k in kinds() for c in k.columns)


# The manifest of a version's export: the columns the version froze.
VERSION_COLUMNS = ("index", "path", "label", "given_label", "kept", "decision", "reason",
                   "findings", "decided_by")


def _write_manifest(path: Path, snap, labels: np.ndarray, test_paths: list[str]) -> None:
    """One row per sample, in sample order. ``label`` is the label to train with (a
    reviewer's relabel where there is one, else the given label, which ``given_label``
    always holds); ``findings`` names the kinds that mark the sample now; ``kept``
    reflects every kind's default and the reviewers' overrides; ``decision`` says
    dropped, proposed (kept, but a finding lists it and no person decided) or kept.
    Each kind's columns
    follow (label's ``suggested_label`` is filled for flagged samples only)."""
    samples, decisions = snap.samples, snap.decisions
    view = snap.view(test_paths)
    per_kind: dict[str, list[str]] = {}
    for kind in kinds():
        per_kind.update(kind.column_values(snap.findings[kind.name], view))
    marked = marks(snap.findings, view)
    found = sample_findings(marked, len(samples))
    decision = sample_decisions(decisions.kept, decisions.reason, marked)
    names = samples.classes
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        columns = manifest_columns()
        w.writerow(columns)
        extra = [per_kind[c] for c in columns[len(BASE_COLUMNS):]]
        for i in range(len(samples)):
            true = samples.true_labels[i]
            w.writerow([i, samples.paths[i], names[labels[i]], names[samples.labels[i]],
                        names[true] if true >= 0 else "", int(decisions.clusters[i]),
                        int(decisions.kept[i]), decisions.reason[i], found[i],
                        decision[i], *(col[i] for col in extra)])


def _write_imagefolder(root: Path, ds: Dataset, kept: np.ndarray, labels: np.ndarray,
                       progress: ProgressFn | None) -> None:
    """``root/<class>/<index>_<name>`` under each sample's corrected label (``labels``):
    symlinks to image files, PNG copies for arrays."""
    idx = np.flatnonzero(kept)
    for name in ds.samples.classes:
        (root / name).mkdir(parents=True, exist_ok=True)
    for done, i in enumerate(idx, 1):
        cls = ds.samples.classes[labels[i]]
        src = ds.file_path(int(i))
        if src is not None:
            os.symlink(src.resolve(), root / cls / f"{i:06d}_{src.name}")
        else:
            Image.fromarray(ds.pixels(int(i))).save(root / cls / f"{i:06d}.png")
        if done % 500 == 0 or done == len(idx):
            report(progress, done, len(idx), "export: writing images")


def _write_version_manifest(path: Path, run: RunDir, frozen: FrozenVersion) -> None:
    """One row per sample of a version's frozen outcome (:data:`VERSION_COLUMNS`):
    ``label`` the class to train with, ``given_label`` the given one, ``kept`` 1 or 0,
    ``decision``, ``reason``, ``findings`` (the kinds that marked it, comma-separated),
    ``decided_by`` (who made the last decision standing on it; "" for nobody)."""
    samples, labels = version_samples(run, frozen)
    out, names = frozen.outcome, samples.classes
    found = out.finding_names()
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(VERSION_COLUMNS)
        for i in range(len(samples)):
            w.writerow([i, samples.paths[i], names[labels[i]], names[samples.labels[i]],
                        int(out.kept[i]), out.decision[i], out.reason[i], found[i],
                        out.decided_by[i]])


def export(run: RunDir, fmt: str, name: str, ds: Dataset | None = None,
           progress: ProgressFn | None = None, version: str | None = None) -> Path:
    """Export the current kept subset of ``run`` (or version ``version``'s frozen one) as
    ``fmt`` into ``exports/<name>``.

    Parameters
    ----------
    fmt : {"csv", "imagefolder", "indices"}
    ds : Dataset, optional
        Needed for ``imagefolder`` (opened from the run when not given).
    version : str, optional
        A version of the run (``curator version``): its frozen outcome is written, the
        same files every time (module docstring).

    Returns
    -------
    Path
        The finished export folder.

    Raises
    ------
    InputError
        An unknown format or version, a bad or taken name, or images missing for an
        image-folder export.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    dest = check_export_name(run.require(), name)
    if fmt == "imagefolder":
        run.require_images("an image-folder export")
    if dest.exists():
        raise InputError(f"export {name!r} already exists in {run.exports}; pick another --dest")
    frozen = None if version is None else read_version(run, version)
    # Exports take seconds, so a second one waits for the first instead of failing.
    with run_lock(run, "an export", EXPORT_LOCK, wait=math.inf):
        _clean_leftovers(run.exports)
        return _export(run, fmt, name, dest, _Source(ds, progress, frozen))


def _clean_leftovers(exports: Path) -> None:
    """Remove temporary folders of exports that were killed. Exports hold EXPORT_LOCK, so
    no other export is writing one now."""
    if exports.is_dir():
        for tmp in exports.glob(".*.tmp"):
            shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class _Source:
    """What an export reads besides the run: the dataset (image folders), the progress
    callback, and the version whose frozen outcome it writes (None: the live one)."""

    ds: Dataset | None
    progress: ProgressFn | None
    frozen: FrozenVersion | None


def _export(run: RunDir, fmt: str, name: str, dest: Path, src: _Source) -> Path:
    run.exports.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=run.exports))
    # mkdtemp makes the folder private (0700); an export is meant to be shared like any
    # folder the user makes, so give it the mode the umask allows.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        info = _write_live(run, fmt, name, tmp, src) if src.frozen is None \
            else _write_version(run, fmt, tmp, src)
        (tmp / "params.json").write_text(json.dumps(info, indent=2) + "\n")
        try:
            # rename() onto an existing folder fails, so two exports racing for one name
            # cannot overwrite each other.
            os.rename(tmp, dest)
        except OSError:
            raise InputError(f"export {name!r} already exists; pick another --dest") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    report(src.progress, 1, 1, f"export: {dest}")
    return dest


def _write_subset(run: RunDir, fmt: str, tmp: Path, src: _Source, kept: np.ndarray,
                  labels: np.ndarray) -> None:
    """The kept indices (``indices``) or the image tree (``imagefolder``) of ``kept``
    (bool (N,)) under ``labels`` (class codes (N,)); a manifest is the caller's."""
    if fmt == "indices":
        (tmp / "kept_indices.txt").write_text("".join(f"{i}\n" for i in np.flatnonzero(kept)))
    elif fmt == "imagefolder":
        ds = src.ds if src.ds is not None else open_run_dataset(run)
        _write_imagefolder(tmp / "images", ds, kept, labels, src.progress)


def _write_version(run: RunDir, fmt: str, tmp: Path, src: _Source) -> dict:
    """A version's files in ``tmp``; returns its ``params.json``: the format, the run and
    the version's record, nothing that changes from one export to the next."""
    frozen = src.frozen
    _, labels = version_samples(run, frozen)
    _write_subset(run, fmt, tmp, src, frozen.outcome.kept, labels)
    if fmt != "indices":
        _write_version_manifest(tmp / "manifest.csv", run, frozen)
    return {"format": fmt, "run": run.run_id, "version": frozen.record()}


def _write_live(run: RunDir, fmt: str, name: str, tmp: Path, src: _Source) -> dict:
    """The live curation's files in ``tmp``, from one snapshot; returns its
    ``params.json``."""
    snap = current_snapshot(run)
    labels = snap.labels
    _write_subset(run, fmt, tmp, src, snap.decisions.kept, labels)
    if fmt != "indices":
        _write_manifest(tmp / "manifest.csv", snap, labels, read_test_paths(run))
    return _live_info(run, fmt, name, snap)


def _live_info(run: RunDir, fmt: str, name: str, snap: CurationSnapshot) -> dict:
    """A live export's ``params.json``: what produced it, its counts, and the version
    whose frozen outcome equals it (None when none does)."""
    samples, decisions, stored = snap.samples, snap.decisions, snap.stored
    marked = marks(snap.findings, snap.view())
    key = snapshot_outcome_key(run, snap)
    return {
        "format": fmt, "name": name, "created_at": now_iso(), "run": run.run_id,
        "rule": stored.rule, "store_revision": stored.revision,
        "version": key and matching_version(run, outcome_key=key),
        "params": {samples.classes[c]: {"eps": e, "min_samples": m}
                   for c, (e, m) in sorted(stored.params.items())},
        # Classes whose cut a reviewer moved along the score ranking (absent: the rule's).
        "cuts": {samples.classes[c]: k for c, k in sorted(stored.cuts.items())},
        "overrides": {str(k): v for k, v in sorted(stored.overrides.items())},
        "relabels": {str(k): samples.classes[v] for k, v in sorted(stored.relabels.items())},
        "n_samples": len(samples), "n_kept": int(decisions.kept.sum()),
        "summary": summary_rows(samples, decisions),
        # How many samples each finding kind marks, and the cuts they were found with.
        "findings": {k: int(m.sum()) for k, m in marked.items()},
        # Kept samples a finding lists that no person decided (kept until one does).
        "n_proposed": int((sample_decisions(decisions.kept, decisions.reason, marked)
                           == PROPOSED).sum()),
        "finding_thresholds": stored_thresholds(run),
    }
