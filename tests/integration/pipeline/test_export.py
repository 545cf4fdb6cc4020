"""Exports: formats, atomicity, names that try to escape, no silent overwrite."""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest

from worker.pipeline.curation.snapshot import current_decisions
from worker.pipeline.errors import InputError
from worker.pipeline.export import export
from worker.pipeline.storage.curation_store import open_store


def test_csv_manifest_in_sample_order(fresh_run):
    open_store(fresh_run).set_overrides([0], "drop")
    open_store(fresh_run).set_overrides([5], "keep")
    dest = export(fresh_run, "csv", "first")
    rows = list(csv.DictReader(open(dest / "manifest.csv")))
    samples, decisions, _ = current_decisions(fresh_run)
    assert len(rows) == len(samples) == len(np.load(fresh_run.features))
    # The base columns, then each finding kind's, in registry order.
    assert list(rows[0]) == ["index", "path", "label", "given_label", "true_label", "cluster",
                             "kept", "reason", "findings", "decision", "score",
                             "suggested_label",
                             "duplicate_group", "duplicate_of", "leaks_to", "outlier_score",
                             "outlier"]
    assert [r["path"] for r in rows] == samples.paths
    assert rows[0]["reason"] == "override_drop" and rows[0]["kept"] == "0"
    assert rows[5]["reason"] == "override_keep" and rows[5]["kept"] == "1"
    assert {r["reason"] for r in rows} >= {"noise", "cluster"}
    assert all(r["true_label"] != "" for r in rows)
    info = json.loads((dest / "params.json").read_text())
    assert info["overrides"] == {"0": "drop", "5": "keep"}
    assert set(info["params"]) == set(samples.classes)
    assert info["n_kept"] == int(decisions.kept.sum())
    assert not [p for p in fresh_run.exports.iterdir() if p.name.startswith(".")]


def test_indices_and_imagefolder(fresh_run):
    _, decisions, _ = current_decisions(fresh_run)
    dest = export(fresh_run, "indices", "idx")
    kept = [int(x) for x in (dest / "kept_indices.txt").read_text().split()]
    assert kept == np.flatnonzero(decisions.kept).tolist()
    dest = export(fresh_run, "imagefolder", "tree")
    files = sorted((dest / "images").rglob("*.png"))
    assert len(files) == int(decisions.kept.sum())


def test_imagefolder_links_real_files(small_folder, tmp_path):
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(tmp_path / "run")
    run_pipeline(run, DatasetOptions(parse_spec(f"folder:{small_folder}")), FeatureOptions(),
                 EmbeddingOptions())
    dest = export(run, "imagefolder", "tree")
    links = sorted((dest / "images").rglob("*.jpg"))
    assert links and all(p.is_symlink() and p.resolve().is_file() for p in links)
    assert links[0].resolve().is_relative_to(small_folder.resolve())


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", "/etc", ".hidden", "x" * 200, ""])
def test_names_that_escape_are_refused(fresh_run, name):
    with pytest.raises(InputError, match="invalid export name"):
        export(fresh_run, "csv", name)
    assert not (fresh_run.path / "evil").exists()


def test_existing_export_is_never_overwritten(fresh_run):
    dest = export(fresh_run, "csv", "same")
    before = (dest / "manifest.csv").read_bytes()
    open_store(fresh_run).set_overrides(range(50), "drop")
    with pytest.raises(InputError, match="already exists"):
        export(fresh_run, "csv", "same")
    assert (dest / "manifest.csv").read_bytes() == before


def test_unknown_format(fresh_run):
    with pytest.raises(InputError, match="unknown export format"):
        export(fresh_run, "parquet", "x")
    assert not os.path.exists(fresh_run.exports / "x")


def test_leftovers_of_a_killed_export_are_cleaned_and_exports_are_not_private(fresh_run):
    import stat

    leftover = fresh_run.exports / ".v0.abc123.tmp"
    leftover.mkdir(parents=True)
    (leftover / "manifest.csv").write_text("half")
    dest = export(fresh_run, "csv", "v1")
    assert not leftover.exists()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o777 & ~umask


def test_params_json_comes_from_the_manifest_s_snapshot(fresh_run):
    """params.json's revision, rule and overrides are those the manifest was built from."""
    open_store(fresh_run).set_overrides([3, 4], "drop")
    dest = export(fresh_run, "csv", "snap")
    info = json.loads((dest / "params.json").read_text())
    store = open_store(fresh_run)
    assert info["store_revision"] == store.revision() and info["overrides"] == {
        "3": "drop", "4": "drop"}
    with open(dest / "manifest.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert info["n_kept"] == sum(r["kept"] == "1" for r in rows)
    assert {r["index"] for r in rows if r["reason"] == "override_drop"} == {"3", "4"}


def test_saved_clusters_are_reused_only_for_the_file_and_params_they_were_made_with(
        fresh_run):
    """current_snapshot takes clusters.npy's labels for classes whose parameters are those
    recorded with it; a clusters.npy that run.json does not describe is not trusted."""
    import os

    from worker.pipeline.curation.snapshot import current_snapshot, read_curation, recorded_clusters
    from worker.pipeline.map.clustering import cluster_all

    samples = fresh_run.read_samples()
    recorded = recorded_clusters(fresh_run, samples)
    assert recorded is not None
    params = read_curation(fresh_run, len(samples.classes)).params
    fresh = cluster_all(fresh_run.load_embedding(), samples.labels, params)
    assert (recorded[0] == fresh).all() and recorded[1] == params
    assert (current_snapshot(fresh_run).decisions.clusters == fresh).all()
    path = fresh_run.path / "clusters.npy"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # rewritten, run.json not
    assert recorded_clusters(fresh_run, samples) is None


def test_cli_export_is_a_job_in_the_run_s_store(fresh_run):
    """``curator export`` from a shell shows on the Jobs page like an export from the app:
    one record, with its result, or with the one-line error the shell printed."""
    from tests.integration.conftest import curator
    from worker.pipeline.storage.job_store import JobStore

    r = curator("export", str(fresh_run.path), "--format", "indices", "--dest", "v1")
    assert r.returncode == 0 and r.stdout.strip() == f"export: {fresh_run.path / 'exports/v1'}"
    r = curator("export", str(fresh_run.path), "--format", "indices", "--dest", "v1")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    error = r.stderr.strip().removeprefix("error: ")
    jobs = JobStore(fresh_run.store).list()
    assert [(j["kind"], j["status"], j["result"], j["error"]) for j in jobs] == [
        ("export", "failed", None, error),
        ("export", "succeeded", {"export": "exports/v1"}, None)]
    assert error == f"export 'v1' already exists in {fresh_run.path / 'exports'}; pick " \
                    "another --dest"
