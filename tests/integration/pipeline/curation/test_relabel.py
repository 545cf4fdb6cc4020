"""Relabel as a first-class override: stored with undo, kept, exported with the corrected
label (the given one kept beside it), trained with, counted in the summary."""

from __future__ import annotations

import csv
import subprocess

import numpy as np

from tests.integration.conftest import CURATOR
from worker.pipeline.curation.snapshot import current_snapshot, summary_rows
from worker.pipeline.export import export
from worker.pipeline.storage.curation_store import open_store
from worker.train.data import holdout_mask, select_subset


def test_a_relabel_reaches_decisions_exports_training_and_the_summary(fresh_run):
    snap = current_snapshot(fresh_run)
    flagged = np.flatnonzero(snap.decisions.flagged & (snap.samples.labels
                                                      != snap.samples.true_labels))
    sample = int(flagged[0])
    given, true = int(snap.samples.labels[sample]), int(snap.samples.true_labels[sample])
    before_key = select_subset(fresh_run, "filtered", 0).key
    store = open_store(fresh_run)
    assert store.set_relabels([sample], true, n_samples=len(snap.samples)) == 1

    snap = current_snapshot(fresh_run)
    assert snap.decisions.kept[sample] and snap.decisions.reason[sample] == "relabel"
    assert snap.labels[sample] == true and snap.samples.labels[sample] == given
    rows = summary_rows(snap.samples, snap.decisions)
    assert rows[given]["relabelled"] == 1 and rows[-1]["relabelled"] == 1

    dest = export(fresh_run, "csv", "relabelled")
    row = list(csv.DictReader(open(dest / "manifest.csv")))[sample]
    names = snap.samples.classes
    assert row["label"] == names[true] and row["given_label"] == names[given]
    assert row["reason"] == "relabel" and row["kept"] == "1"

    filtered = select_subset(fresh_run, "filtered", 0)
    pos = int(np.searchsorted(filtered.indices, sample))
    assert filtered.indices[pos] == sample and filtered.labels[pos] == true
    assert filtered.key != before_key  # another subset: a retrain trains anew
    full = select_subset(fresh_run, "full", 0)  # the controls keep the given labels
    assert full.labels[int(np.searchsorted(full.indices, sample))] == given

    assert store.undo() and store.relabels() == {}
    assert select_subset(fresh_run, "filtered", 0).key == before_key


def test_cli_relabel_and_its_errors(fresh_run):
    def run(*args):
        return subprocess.run([CURATOR, "relabel", str(fresh_run.path), *args],
                              capture_output=True, text=True, timeout=120)

    names = fresh_run.read_samples().classes
    flagged = current_snapshot(fresh_run).decisions.flagged
    r = run(names[3], "5", "6")
    assert r.returncode == 0 and "2 sample(s) changed" in r.stdout
    given = fresh_run.read_samples().labels
    assert f"sample 5: {names[given[5]]} → {names[3]}" in r.stdout  # from → to, per sample
    assert open_store(fresh_run).relabels() == {5: 3, 6: 3}
    # A sample the rule did not flag gets a warning (a wrong index, most likely); a
    # flagged one does not.
    warned = {i for i in (5, 6) if f"warning: sample {i} was not flagged" in r.stderr}
    assert warned == {i for i in (5, 6) if not flagged[i]}
    assert run("clear", "5").returncode == 0 and open_store(fresh_run).relabels() == {6: 3}
    for args, message in ((("zebra", "1"), "no class 'zebra'"),
                          ((names[0], "99999"), "sample index 99999 is out of range")):
        r = run(*args)
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.splitlines()) == 1
    hit = int(np.flatnonzero(flagged)[0])
    r = run(names[(given[hit] + 1) % len(names)], str(hit))
    assert r.returncode == 0 and "warning" not in r.stderr


def test_corrected_takes_back_confident_issues_with_their_suggested_label(fresh_run):
    """``corrected`` = filtered + the rule-dropped label issues whose suggestion differs,
    trained with the suggestion; a reviewer's drop stays out."""
    from worker.pipeline.curation.rule_evidence import load_evidence

    snap = current_snapshot(fresh_run)
    ev = load_evidence(fresh_run)
    given = snap.samples.labels
    rescued = (snap.decisions.reason == "noise") & ev["issue"] & (ev["suggested"] != given)
    assert rescued.sum() > 50  # the demo's 10% noise gives many confident issues
    filtered = select_subset(fresh_run, "filtered", 0)
    corrected = select_subset(fresh_run, "corrected", 0)
    pool = ~holdout_mask(given)  # digits has no test split: a fixed hold-out never trains
    expected = np.flatnonzero((snap.decisions.kept | rescued) & pool)
    np.testing.assert_array_equal(corrected.indices, expected)
    assert set(filtered.indices) < set(corrected.indices)
    labels = dict(zip(corrected.indices.tolist(), corrected.labels.tolist(), strict=True))
    assert all(labels[i] == ev["suggested"][i] for i in np.flatnonzero(rescued & pool))
    # The suggestions are mostly the true labels on the demo: that is what makes it worth it.
    right = ev["suggested"][rescued] == snap.samples.true_labels[rescued]
    assert right.mean() > 0.9

    sample = int(np.flatnonzero(rescued & pool)[0])
    open_store(fresh_run).set_overrides([sample], "drop")
    assert sample not in select_subset(fresh_run, "corrected", 0).indices
