"""Pruning on the digits run: the subsets a training would take, the retrain preview
counting them as the training does, and the CLI refusing a bad subset in one line."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from tests.integration.conftest import CURATOR
from worker.train.data import pruned_sizes, select_subset, training_pool


def test_the_cli_refuses_a_bad_subset_in_one_line(fresh_run):
    for argv in (["retrain", str(fresh_run.path), "--subset", "pruned@2"],
                 ["experiment", str(fresh_run.path), "--subsets", "full,pruned@x"]):
        r = subprocess.run([CURATOR, *argv], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "between 0 and 1" in r.stderr
        assert "Traceback" not in r.stderr


# -- the subsets a training takes ------------------------------------------------------------
def test_pruned_and_random_subsets_on_the_digits_run(fresh_run):
    filtered = select_subset(fresh_run, "filtered", 0)
    full = select_subset(fresh_run, "full", 0)
    samples = fresh_run.read_samples()
    for f in (0.7, 0.3):
        pruned = select_subset(fresh_run, f"pruned@{f}", 0)
        random = select_subset(fresh_run, f"random@{f}", 0)
        assert set(pruned.indices.tolist()) < set(filtered.indices.tolist())
        assert set(random.indices.tolist()) <= set(full.indices.tolist())
        assert np.array_equal(np.bincount(samples.labels[pruned.indices], minlength=10),
                              np.bincount(samples.labels[random.indices], minlength=10))
        assert len(pruned.indices) == pytest.approx(f * len(filtered.indices), abs=10)
        # The Summary tab's count is the training's size, without scoring.
        kept = np.isin(np.arange(len(samples)), filtered.indices)
        assert set(training_pool(fresh_run, samples.labels).tolist()) == \
            set(full.indices.tolist())
        sizes = pruned_sizes(fresh_run, samples.labels, kept, samples.labels, (f,))
        assert sizes[f] == len(pruned.indices)
        # Seeded: the same seed, the same subset (and the same training key).
        assert select_subset(fresh_run, f"pruned@{f}", 0).key == pruned.key
        assert select_subset(fresh_run, f"random@{f}", 1).key != random.key
    easy = select_subset(fresh_run, "pruned-easy@0.3", 0).indices
    hard = select_subset(fresh_run, "pruned-hard@0.3", 0).indices
    assert not set(easy.tolist()) & set(hard.tolist())


def test_the_retrain_preview_counts_pruned_as_the_training_does_after_a_relabel(fresh_run):
    """A relabel moves a sample to another class: pruned@F's class quotas follow it in
    the Retrain panel's preview (plan_for with the relabelled labels) as in the job."""
    from worker.pipeline.curation.snapshot import current_snapshot
    from worker.pipeline.storage.curation_store import open_store
    from worker.train.config import TrainConfig
    from worker.train.launch import plan_for

    snap = current_snapshot(fresh_run)
    kept = np.flatnonzero(snap.decisions.kept & (snap.samples.labels == 0))
    open_store(fresh_run).set_relabels(kept[:7].tolist(), 1, "relabel 7 to 1",
                                       n_samples=len(snap.samples), n_classes=10)
    snap = current_snapshot(fresh_run)
    for f in (0.7, 0.3):
        cfg = TrainConfig(subset=f"pruned@{f}", model="cifar-resnet20", seed=0)
        plan = plan_for(fresh_run, cfg, snap.samples.labels, snap.decisions.kept, snap.labels)
        assert plan.train_size == len(select_subset(fresh_run, f"pruned@{f}", 0).indices)
