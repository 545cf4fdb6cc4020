"""The duplicate kind on a digits run with injected exact copies: every copy found with one
kept copy per group and no group of one, the injected truth recorded and scored, and a
relabel or a keep override deciding a copy."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.export import export
from worker.pipeline.findings import (
    load_findings,
)
from worker.pipeline.findings.detectors.duplicate import star_groups
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.sources.inject import read_truth
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.rundir import RunDir

# The kinds tested on runs built here read the features' PCA space and the neighbours
# the embed step stores, not the t-SNE map: a short t-SNE halves these runs' time.
SHORT_MAP = EmbeddingOptions(n_iter=50, exaggeration_iter=25)


def _manifest(dest: Path) -> list[dict]:
    with open(dest / "manifest.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_no_group_has_a_single_member(dup_run):
    chain = star_groups(np.arange(4), np.array([[0, 1], [1, 2], [2, 3]]), 4)
    assert chain[3] == -1 or (chain == chain[3]).sum() >= 2, chain.tolist()
    group = load_findings(dup_run, len(dup_run.read_samples()))["duplicate"].facts["group"]
    assert (np.bincount(group[group >= 0]) >= 2).all()


# --------------------------------------------------------------------------- duplicates
@pytest.fixture(scope="module")
def dup_run(tmp_path_factory) -> RunDir:
    """Digits with 10% label noise and 5% exact copies (real images, the real chain)."""
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    run = RunDir(tmp_path_factory.mktemp("dup") / "dup")
    run_pipeline(run, DatasetOptions(parse_spec("digits"), inject_noise=0.1, seed=0,
                                     inject_duplicates=0.05, duplicate_strength="exact"),
                 FeatureOptions(), SHORT_MAP)
    return run


def _families(run: RunDir) -> list[tuple[int, int]]:
    return [(r["index"], r["source"]) for r in read_truth(run.path) if r["kind"] == "duplicate"]


def test_injected_copies_are_recorded_as_truth(dup_run):
    samples = dup_run.read_samples()
    rows = read_truth(dup_run.path)
    n0 = 1797
    assert len(samples) == n0 + round(0.05 * n0) == n0 + len(rows)
    assert [r["index"] for r in rows] == list(range(n0, len(samples)))
    assert {(r["kind"], r["how"]) for r in rows} == {("duplicate", "exact")}
    assert all(samples.paths[r["index"]] == r["path"] and r["path"].startswith("injected/")
               for r in rows)
    sources = [r["source"] for r in rows]
    assert len(set(sources)) == len(sources) and max(sources) < n0
    hashes = np.load(dup_run.path / "pixel_hash.npy")
    for i, s in _families(dup_run):
        # A copy carries its source's given and true label, and its very pixels.
        assert samples.labels[i] == samples.labels[s]
        assert samples.true_labels[i] == samples.true_labels[s]
        assert hashes[i] == hashes[s]


def test_every_exact_copy_is_found_with_one_kept_copy_per_group(dup_run):
    """Whatever the near-copy cut: an injected copy and its source are one group, at
    most one of them is kept, and a family alone in its group keeps one member and
    marks the other as its copy."""
    table = load_findings(dup_run, len(dup_run.read_samples()))["duplicate"]
    group, rep, size = table.facts["group"], table.facts["representative"], \
        table.facts["group_size"]
    issue, related = table.issue, table.related
    for i, s in _families(dup_run):
        assert group[i] == group[s] >= 0 and rep[i] == rep[s]
        fam_marked = [m for m in (i, s) if issue[m]]
        assert fam_marked, (i, s)  # the copy is found
        for m in fam_marked:
            # an exact copy ranks first
            assert related[m] == rep[m] != m and table.score[m] == table.score.max()
        if size[i] == 2:  # alone together: one marked, pointing at the other
            assert len(fam_marked) == 1 and {int(related[fam_marked[0]]), fam_marked[0]} == {i, s}
            assert table.facts["exact"][fam_marked[0]]
    # One kept representative per group, every other member marked and pointing at it.
    decisions = current_snapshot(dup_run).decisions
    for k in range(int(group.max()) + 1):
        members = np.flatnonzero(group == k)
        unmarked = members[~issue[members]]
        assert len(unmarked) == 1, (k, members)
        assert (rep[members] == unmarked[0]).all()
        assert (related[members[issue[members]]] == unmarked[0]).all()
        assert decisions.reason[unmarked[0]] != "duplicate"
    assert (related[issue] >= 0).all() and (related[~issue] == -1).all()
    # Duplicate is the first kind whose default drops: every copy it marks is dropped for it.
    assert not decisions.kept[issue].any()
    assert set(decisions.reason[issue].tolist()) == {"duplicate"}
    info = table.info
    assert info["exact_copies"] >= sum(1 for i, _ in _families(dup_run) if size[i] == 2)


def test_evaluate_scores_the_duplicate_kind_against_the_injected_truth(dup_run):
    """``curator evaluate``'s duplicate scores are those of the table: a family is found
    when its two members share a group and one of them is marked (the kept copy may be
    a third, natural near-copy)."""
    from worker.pipeline.evaluation.run_report import evaluate

    families = _families(dup_run)
    table = load_findings(dup_run, 1797 + len(families))["duplicate"]
    group = table.facts["group"]
    found = sum(bool(group[i] >= 0 and group[i] == group[s]
                     and (table.issue[i] or table.issue[s])) for i, s in families)
    alone = sum(int(table.facts["group_size"][i] == 2) for i, _ in families)
    scores = evaluate(dup_run, with_cleanlab=False)["findings"]["duplicate"]
    assert scores["truth"] == len(families) and scores["marked"] == int(table.issue.sum())
    assert scores["recall"] == round(found / len(families), 4)
    assert scores["recall_by_strength"] == {"exact": scores["recall"]}
    assert found >= alone >= 0.9 * len(families)


def test_a_relabel_keeps_a_copy_dropped_and_a_keep_override_keeps_it(dup_run, tmp_path):
    run = RunDir(tmp_path / "dup")
    shutil.copytree(dup_run.path, run.path)
    table = load_findings(run, len(run.read_samples()))["duplicate"]
    samples = run.read_samples()
    copy = int(np.flatnonzero(table.issue & table.facts["exact"])[0])
    other = (int(samples.labels[copy]) + 1) % len(samples.classes)
    open_store(run).set_relabels([copy], other)
    row = _manifest(export(run, "csv", "relabelled"))[copy]
    # A relabelled copy is still a copy: it trains with nothing, its class is recorded.
    assert (row["kept"], row["reason"], row["label"]) == ("0", "duplicate",
                                                          samples.classes[other])
    open_store(run).set_overrides([copy], "keep")
    row = _manifest(export(run, "csv", "kept"))[copy]
    assert (row["kept"], row["reason"]) == ("1", "override_keep")
    assert "duplicate" in row["findings"].split(",")
    assert row["duplicate_of"] == str(int(table.related[copy]))
    assert row["duplicate_group"] == str(int(table.facts["group"][copy]))
