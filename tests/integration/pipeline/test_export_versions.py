"""Exports of a version (worker/pipeline/export.py ``version=``): the version's frozen
outcome, the same bytes in every export of it, whatever the live curation did since; and a
live export names the version equal to it."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

import tsne_curator as tc
from tests.integration.conftest import curator
from tests.refusals import one_line
from worker.pipeline.curation.versions import read_version, save_version
from worker.pipeline.errors import InputError
from worker.pipeline.export import VERSION_COLUMNS, export
from worker.pipeline.storage.curation_store import open_store


def _files(folder: Path) -> dict[str, bytes | str]:
    """Every file of an export by its relative path: a file's bytes, a link's target."""
    out: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        key = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[key] = os.readlink(path)
        elif path.is_file():
            out[key] = path.read_bytes()
    return out


def test_a_versions_export_is_the_same_bytes_every_time(fresh_run):
    store = open_store(fresh_run)
    store.set_overrides([3, 11], "drop")
    samples = fresh_run.read_samples()
    other = (int(samples.labels[20]) + 1) % len(samples.classes)
    store.set_relabels([20], other)
    save_version(fresh_run, "v1", note="first pass")
    frozen = read_version(fresh_run, "v1")
    first = {fmt: _files(export(fresh_run, fmt, f"a-{fmt}", version="v1"))
             for fmt in ("csv", "indices", "imagefolder")}
    # The live curation moves on: other decisions, other DBSCAN parameters.
    store.set_overrides([3], "keep")
    store.set_overrides([30, 31], "drop")
    eps, ms = store.class_params()[0]
    store.set_class_params({0: (eps / 3, ms)})
    for fmt, files in first.items():
        assert _files(export(fresh_run, fmt, f"b-{fmt}", version="v1")) == files, fmt
    assert set(first["csv"]) == {"manifest.csv", "params.json"}
    info = json.loads(first["csv"]["params.json"])
    assert info == {"format": "csv", "run": fresh_run.run_id, "version": frozen.record()}
    assert info["version"]["note"] == "first pass"
    rows = list(csv.DictReader(first["csv"]["manifest.csv"].decode().splitlines()))
    assert tuple(rows[0]) == VERSION_COLUMNS
    assert [int(r["kept"]) for r in rows] == frozen.outcome.kept.astype(int).tolist()
    assert (rows[3]["kept"], rows[3]["reason"]) == ("0", "override_drop")
    assert (rows[20]["label"], rows[20]["given_label"]) == \
        (samples.classes[other], samples.classes[samples.labels[20]])
    assert rows[20]["decided_by"] == frozen.outcome.decided_by[20] != ""
    kept = [int(i) for i in first["indices"]["kept_indices.txt"].split()]
    assert kept == np.flatnonzero(frozen.outcome.kept).tolist()
    images = [k for k in first["imagefolder"] if k.startswith("images/")]
    assert len(images) == int(frozen.outcome.kept.sum())
    assert first["imagefolder"]["manifest.csv"] == first["csv"]["manifest.csv"]


def test_a_live_export_names_the_version_equal_to_it(fresh_run):
    store = open_store(fresh_run)
    store.set_overrides([7], "drop")
    assert json.loads((export(fresh_run, "csv", "before") / "params.json").read_text())[
        "version"] is None
    save_version(fresh_run, "v1")
    live = json.loads((export(fresh_run, "csv", "equal") / "params.json").read_text())
    assert live["version"] == "v1" and "created_at" in live
    store.set_overrides([7], None)
    assert json.loads((export(fresh_run, "csv", "after") / "params.json").read_text())[
        "version"] is None
    store.set_overrides([7], "drop")  # the same outcome again, the same version
    assert json.loads((export(fresh_run, "csv", "again") / "params.json").read_text())[
        "version"] == "v1"


def test_a_version_export_from_the_cli_and_the_api(fresh_run):
    save_version(fresh_run, "v1")
    r = curator("export", str(fresh_run.path), "--version", "v1", "--dest", "cli")
    assert r.returncode == 0, r.stderr
    manifest, dest = tc.Run(fresh_run.path).export("api", version="v1")
    assert dest == fresh_run.exports / "api"
    assert _files(dest) == _files(fresh_run.exports / "cli")
    assert list(manifest.columns) == list(VERSION_COLUMNS) and manifest["kept"].dtype == bool
    r = curator("export", str(fresh_run.path), "--version", "v9", "--dest", "never")
    assert r.returncode == 2 and "no version 'v9': this run's versions are v1" in \
        one_line(r.stderr)
    with pytest.raises(InputError, match="no version 'v9'"):
        tc.Run(fresh_run.path).export("never", version="v9")
    assert not (fresh_run.exports / "never").exists()
