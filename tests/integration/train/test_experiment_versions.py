"""Experiments name their version (worker/train/experiment.py): ``--version`` trains the
curated subsets on the version's frozen kept set and labels, whatever the live curation
says; without it, the experiment records the version equal to what it trained on, or
none. One-epoch ResNet-20 trainings on the digits run, through ``curator experiment``'s
job and ``run.experiment``."""

from __future__ import annotations

import csv
import json
import subprocess

import numpy as np
import pytest

import tsne_curator as tc
from tests.integration.conftest import CURATOR
from tests.refusals import one_line
from worker.pipeline.curation.versions import read_version, save_version
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.job_store import JobStore
from worker.train.data import training_pool

pytestmark = pytest.mark.slow

SMALL = "cifar-resnet20"  # the smallest network: the subsets are what this is about


def _experiment(run, name: str, *more: str) -> subprocess.CompletedProcess:  # noqa: ANN001
    return subprocess.run([CURATOR, "experiment", str(run.path), "--subsets", "filtered",
                           "--batch-sizes", "64", "--seeds", "1", "--epochs", "1", "--model",
                           SMALL, "--name", name, *more], capture_output=True, text=True,
                          timeout=900)


def _column(folder, table: str) -> set[str]:  # noqa: ANN001 - Path
    with open(folder / table, newline="") as fh:
        return {row["version"] for row in csv.DictReader(fh)}


def test_an_experiment_trains_on_its_version_and_names_it(fresh_run):
    store = open_store(fresh_run)
    store.set_overrides([3, 11], "drop")
    save_version(fresh_run, "v1")
    frozen = read_version(fresh_run, "v1")
    store.set_overrides([3, 11], "keep")  # the live curation moves on
    store.set_overrides([40, 41, 42], "drop")
    r = _experiment(fresh_run, "on-v1", "--version", "v1")
    assert r.returncode == 0, r.stderr
    out = fresh_run.path / "experiments" / "on-v1"
    assert _column(out, "results.csv") == _column(out, "summary.csv") == {"v1"}
    assert json.loads((out / "curation.json").read_text())["version"] == "v1"
    [row] = list(csv.DictReader(open(out / "results.csv")))
    train = fresh_run.path / row["train_dir"]
    pool = training_pool(fresh_run, fresh_run.read_samples().labels)
    subset = np.load(train / "subset.npy")
    assert subset.tolist() == pool[frozen.outcome.kept[pool]].tolist()
    assert np.load(train / "subset_labels.npy").tolist() == frozen.outcome.labels[subset].tolist()
    assert json.loads((train / "config.json").read_text())["version"] == "v1"
    # The API's experiment on the same version reuses that very training.
    summary, _ = tc.Run(fresh_run.path).experiment(
        subsets="filtered", batch_sizes="64", seeds=1, epochs=1, model=SMALL, name="api",
        version="v1")
    assert summary["version"].tolist() == ["v1"]
    # Without --version: the version equal to the live curation, then none.
    save_version(fresh_run, "v2")
    r = _experiment(fresh_run, "live")
    assert r.returncode == 0, r.stderr
    assert _column(fresh_run.path / "experiments" / "live", "summary.csv") == {"v2"}
    store.set_overrides([50], "drop")
    r = _experiment(fresh_run, "unsaved")
    assert r.returncode == 0, r.stderr
    out = fresh_run.path / "experiments" / "unsaved"
    assert _column(out, "summary.csv") == {""}
    assert json.loads((out / "curation.json").read_text())["version"] is None


def test_an_unknown_version_is_refused_before_a_job_is_recorded(fresh_run):
    save_version(fresh_run, "v1")
    r = _experiment(fresh_run, "never", "--version", "v9")
    assert r.returncode == 2 and "no version 'v9': this run's versions are v1" in \
        one_line(r.stderr)
    assert not (fresh_run.path / "experiments" / "never").exists()
    assert JobStore(fresh_run.store).list() == []
