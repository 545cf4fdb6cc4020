"""The findings registry (worker/pipeline/findings) on real runs: a toy kind registered in
the test reaches every consumer with no other edit; exact copies injected into digits are
all found with one kept copy per group; outliers injected among real CIFAR-10 photos rank
by score; the grouping functions' invariants (Hypothesis); and the bad inputs of
``curator findings`` and ``curator pipeline``'s injection flags, each one line and exit 2.
"""

from __future__ import annotations

import contextlib
import csv
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared_file
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.export import export, manifest_columns
from worker.pipeline.findings import (
    DROP,
    REGISTRY,
    REVIEW,
    FindingKind,
    FindingTable,
    ensure_findings,
    get_kind,
    kinds,
    load_findings,
    register,
    unregister,
)
from worker.pipeline.findings.detectors.duplicate import exact_units, star_groups
from worker.pipeline.findings.files import table_path
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.sources.inject import read_truth
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.rundir import RunDir

TOY_EVERY = 7  # the toy kind marks every 7th sample


# The kinds tested on runs built here read the features' PCA space and the neighbours
# the embed step stores, not the t-SNE map: a short t-SNE halves these runs' time.
SHORT_MAP = EmbeddingOptions(n_iter=50, exaggeration_iter=25)


def _manifest(dest: Path) -> list[dict]:
    with open(dest / "manifest.csv", newline="") as fh:
        return list(csv.DictReader(fh))


# --------------------------------------------------------------------------- toy kind
def _toy_kind(name: str, decision: str) -> type[FindingKind]:
    """A finding kind defined in the test: marks every 7th sample with a score."""

    class Toy(FindingKind):
        title = "toy finding"
        columns = ("toy_score",)
        advice = "a kind registered by a test"
        calls = 0

        def compute(self, ctx) -> FindingTable:  # noqa: ANN001 - a FindingContext
            type(self).calls += 1
            n = len(ctx.samples)
            idx = np.arange(n)
            issue = idx % TOY_EVERY == 0
            score = np.where(issue, 0.5 + (idx % 5) / 10.0, 0.0).astype(np.float32)
            return FindingTable(issue, score, np.full(n, -1, np.int64),
                                {"residue": (idx % TOY_EVERY).astype(np.int64)},
                                {"every": TOY_EVERY})

        def column_values(self, table: FindingTable, view) -> dict[str, list[str]]:  # noqa: ANN001
            return {"toy_score": [f"{s:.2f}" if m else "" for s, m in
                                  zip(table.score.tolist(), table.issue.tolist(), strict=True)]}

        def why(self, table: FindingTable, i: int, view) -> str:  # noqa: ANN001
            return f"toy: sample {i} is a multiple of {TOY_EVERY}"

    Toy.name, Toy.decision = name, decision
    return Toy


@contextlib.contextmanager
def registered(cls: type[FindingKind]) -> Iterator[FindingKind]:
    register(cls)
    try:
        yield cls
    finally:
        unregister(cls.name)


def _first_drop_kind(tables: dict[str, FindingTable], i: int, skip: str = "") -> str | None:
    """The first kind but ``skip``, in registry order, whose default drops sample i (label
    is the rule's own and not among them): the reason decide() gives before overrides."""
    for k in kinds():
        if k.name != skip and k.decision == DROP and getattr(k, "stored", True) \
                and k.dropping(tables[k.name])[i]:
            return k.name
    return None


@pytest.fixture(params=[DROP, REVIEW])
def toy_run(fresh_run, request) -> Iterator[dict]:
    """A private digits run after registering a toy kind (default drop or review) and
    running the findings step: what every consumer is checked against. The kind is
    unregistered at teardown whatever happens."""
    before = current_snapshot(fresh_run).decisions
    n = len(before.kept)
    assert "toy_score" not in manifest_columns()
    others = {k.name: table_path(fresh_run, k.name).stat().st_mtime_ns
              for k in kinds() if getattr(k, "stored", True)}
    with registered(_toy_kind("toy", request.param)) as toy:
        tables = ensure_findings(fresh_run)
        # Only the new kind was computed; the stored ones were reused as they were.
        assert toy.calls == 1 and table_path(fresh_run, "toy").is_file()
        assert {k: table_path(fresh_run, k).stat().st_mtime_ns for k in others} == others
        ensure_findings(fresh_run)
        assert toy.calls == 1  # unchanged inputs: not computed again
        yield {"run": fresh_run, "decision": request.param, "before": before, "tables": tables,
               "marked": np.arange(n) % TOY_EVERY == 0}
    assert "toy_score" not in manifest_columns() and "toy" not in load_findings(fresh_run, n)


def test_a_toy_kind_reaches_the_export(toy_run):
    """The issue's acceptance test, (a): one class and one ``register`` call, and the csv
    manifest has its column, names it in ``findings`` exactly for the samples it marks,
    and drops them (decision drop) unless a reviewer keeps one."""
    run, decision, before, tables, marked = (toy_run[k] for k in (
        "run", "decision", "before", "tables", "marked"))
    assert (tables["toy"].issue == marked).all()
    # A keep override on one toy sample no earlier kind drops.
    overridden = next(i for i in np.flatnonzero(marked).tolist()
                      if _first_drop_kind(tables, i, skip="toy") is None)
    open_store(run).set_overrides([overridden], "keep")
    dest = export(run, "csv", "toy")
    rows = _manifest(dest)
    assert list(rows[0])[-1] == "toy_score" and list(rows[0]) == list(manifest_columns())
    for i, r in enumerate(rows):
        found = r["findings"].split(",") if r["findings"] else []
        assert ("toy" in found) == marked[i], (i, r["findings"])
        if marked[i]:
            assert found[-1] == "toy"  # registry order: the toy kind comes last
            assert r["toy_score"] == f"{tables['toy'].score[i]:.2f}"
        else:
            assert r["toy_score"] == ""
        if i == overridden:
            assert (r["kept"], r["reason"]) == ("1", "override_keep")
        elif marked[i] and decision == DROP:
            assert r["kept"] == "0"
            assert r["reason"] == _first_drop_kind(tables, i), (i, r)
        else:  # a review-only kind, or a sample it does not mark: as before
            assert (r["kept"], r["reason"]) == (str(int(before.kept[i])),
                                                str(before.reason[i])), (i, r)
    assert (sum(r["reason"] == "toy" for r in rows) > 0) == (decision == DROP)
    info = json.loads((dest / "params.json").read_text())
    assert info["findings"]["toy"] == int(marked.sum())


def test_a_toy_kind_reaches_the_review_list(toy_run):
    """(b): the review list lists every sample the kind marks, its ``finding`` column
    naming it, and the focused row's why carries the kind's own why-line."""
    from app.curate import logic as curate_logic
    from app.curate import review_queue as review
    from app.run_data import current_state, run_data

    run, marked = toy_run["run"], toy_run["marked"]
    data = run_data(run.path.parent, run.path.name)
    state = current_state(data)
    queue = {r["sample"]: r for r in review.queue_rows(data, state, run.path.name)}
    assert set(np.flatnonzero(marked).tolist()) <= set(queue)
    for i, r in queue.items():
        assert ("toy" in r["finding"].split(",")) == marked[i], (i, r)
    sample = int(np.flatnonzero(marked)[1])
    assert f"toy: sample {sample} is a multiple of {TOY_EVERY}" in \
        curate_logic.why(data, state, sample)


def test_a_toy_kind_reaches_the_findings_report_and_evaluate(toy_run):
    """(c): ``curator findings``' report has the kind with its count and its top items by
    score with their why-lines; ``curator evaluate`` counts it."""
    from worker.pipeline.curation.findings_report import findings_report, format_findings
    from worker.pipeline.evaluation.run_report import evaluate

    run, decision, marked = toy_run["run"], toy_run["decision"], toy_run["marked"]
    report = findings_report(run)
    entry = report["kinds"][-1]
    assert entry["name"] == "toy"
    assert (entry["count"], entry["decision"], entry["title"]) == (
        int(marked.sum()), decision, "toy finding")
    assert entry["info"]["every"] == TOY_EVERY and entry["info"]["count"] == marked.sum()
    scores = [t["score"] for t in entry["top"]]
    assert len(scores) == 10 and scores == sorted(scores, reverse=True)
    assert all(marked[t["sample"]] and t["why"] == f"toy: sample {t['sample']} is a "
               f"multiple of {TOY_EVERY}" for t in entry["top"])
    only = findings_report(run, "toy", top=3)["kinds"]
    assert [k["name"] for k in only] == ["toy"] and len(only[0]["top"]) == 3
    text = format_findings(report)
    # A drop kind without a drop cut drops every mark; a review kind proposes them all.
    n = int(marked.sum())
    d, p = (n, 0) if decision == DROP else (0, n)
    assert (entry["dropped"] >= d) and (entry["proposed"] <= p)
    assert f"toy (toy finding): {n} marked: {entry['dropped']} dropped, " \
           f"{entry['proposed']} proposed" in text
    assert evaluate(run, with_cleanlab=False)["findings"]["toy"]["marked"] == int(marked.sum())


def test_registering_a_name_twice_is_refused():
    with registered(_toy_kind("toy", DROP)), pytest.raises(ValueError, match="already"):
        register(_toy_kind("toy", REVIEW))


def test_a_name_that_is_no_short_word_is_refused():
    """A kind's name is a decision reason, stored in fixed-width strings, and a column
    value: 'near_duplicate' (14 characters, cleanlab's name) would be cut, so registering
    it is refused, as is a name with capitals or spaces."""
    for name in ("near_duplicate", "Toy", "two words", "9lives"):
        with pytest.raises(ValueError, match="at most 13 lower-case"):
            register(_toy_kind(name, DROP))
        assert name not in REGISTRY


def test_a_table_stored_by_an_earlier_method_is_computed_again(fresh_run):
    """An outlier table as the first version of the kind wrote it (facts ratio and
    percentile) under that version's key (each kind's ``version`` is part of the key):
    the findings step computes it again, and its why-lines read the new facts."""
    from worker.pipeline.curation.findings_report import findings_report
    from worker.pipeline.findings.files import save_table

    n = len(fresh_run.read_samples())
    score = np.linspace(0.5, 3.0, n, dtype=np.float32)
    save_table(fresh_run, "outlier", FindingTable(
        score >= 2.0, score, np.full(n, -1, np.int64),
        {"ratio": score, "percentile": np.arange(n, dtype=np.float32) / n}))
    with fresh_run.update_meta() as meta:  # the key version 1 recorded: another one
        meta["steps"]["findings"]["kinds"]["outlier"]["key"] = "written-by-v1"
    tables = ensure_findings(fresh_run)
    assert "nearest_class" in tables["outlier"].facts
    assert findings_report(fresh_run, "outlier")["kinds"][0]["top"]


# --------------------------------------------------------------------------- grouping
hashes_st = st.lists(st.integers(0, 6), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(hashes=hashes_st)
def test_exact_units_are_the_lowest_index_of_equal_hashes(hashes):
    h = np.asarray(hashes, np.uint64)
    unit = exact_units(h, len(h))
    assert unit.dtype == np.int64
    for i, v in enumerate(hashes):
        assert unit[i] == hashes.index(v)
    assert (exact_units(None, len(h)) == np.arange(len(h))).all()


@st.composite
def grouping_inputs(draw) -> tuple[np.ndarray, np.ndarray, int]:
    n = draw(st.integers(1, 30))
    h = np.asarray(draw(st.lists(st.integers(0, n + 5), min_size=n, max_size=n)), np.uint64)
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    pairs = draw(st.lists(pair, max_size=40)) if n > 1 else []
    return exact_units(h, n), np.asarray(pairs, np.int64).reshape(-1, 2), n


@settings(max_examples=300, deadline=None)
@given(inputs=grouping_inputs())
def test_star_groups_never_chain(inputs):
    units, pairs, n = inputs
    group = star_groups(units, pairs, n)
    assert group.shape == (n,) and group.dtype == np.int64
    ids = group[group >= 0]
    g = int(ids.max()) + 1 if len(ids) else 0
    assert set(ids.tolist()) == set(range(g))  # numbered 0..G-1
    # Near pairs between units (exact copies are one unit), in both directions.
    near = {(int(units[a]), int(units[b])) for a, b in pairs.tolist() if units[a] != units[b]}
    near |= {(b, a) for a, b in near}
    sizes = np.bincount(units, minlength=n)
    # Every pair has an end in a group: an end left out was a partner of a sample another
    # star took, and it is not alike that star's centre (so it is the one copy kept).
    for a, b in pairs.tolist():
        assert group[a] >= 0 or group[b] >= 0
    assert (np.bincount(group[group >= 0]) >= 2).all()  # no group of one
    for i in range(n):
        assert group[i] == group[units[i]]  # a sample follows its exact unit
        touched = sizes[units[i]] > 1 or any(u == units[i] for u, _ in near)
        assert group[i] < 0 or touched  # nothing else is grouped
        if sizes[units[i]] > 1:
            assert group[i] >= 0  # exact copies always are
    for k in range(g):
        members = {int(u) for u in units[group == k]}
        # A star: one unit (the centre) is a near partner of every other unit of it.
        assert any(all(u == c or (u, c) in near for u in members) for c in members), \
            (k, members, near)


def test_star_groups_split_a_chain_at_its_centre():
    """A≈B≈C with A and C not alike: B (most partners) is the centre of all three. With
    A≈B≈C≈D, D is not alike B: it never joins B's star (single linkage would)."""
    units = np.arange(4)
    assert star_groups(units, np.array([[0, 1], [1, 2]]), 4).tolist() == [0, 0, 0, -1]
    chain = star_groups(units, np.array([[0, 1], [1, 2], [2, 3]]), 4)
    assert chain[0] == chain[1] == chain[2] >= 0 and chain[3] != chain[0]
    # Exact copies with no near partner are a group of their own; the rest stay out.
    assert star_groups(np.array([0, 1, 0, 3]), np.empty((0, 2), np.int64), 4).tolist() == \
        [0, -1, 0, -1]


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


def test_a_family_grouped_with_a_kept_near_copy_is_found():
    """Samples 0 (source) and 3 (its injected exact copy) are both dropped as copies of
    sample 1, a near copy kept in their group: the injected copy was removed, so the
    family is found (recall 1.0)."""
    from worker.pipeline.findings.detectors.duplicate import duplicate_scores

    marked = np.array([True, False, False, True])
    related = np.array([1, -1, -1, 1])
    group = np.array([0, 0, -1, 0])
    truth = [{"index": 3, "source": 0, "kind": "duplicate", "how": "exact"}]
    scores = duplicate_scores(marked, related, truth, group)
    assert scores["recall"] == 1.0 and scores["precision"] == 1.0
    # Without the groups only the kept copy can tell: the family looks missed.
    assert duplicate_scores(marked, related, truth)["recall"] == 0.0


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


# --------------------------------------------------------------------------- outliers
@pytest.fixture(scope="module")
def outlier_run(cifar_mini, tmp_path_factory) -> RunDir:
    """400 real CIFAR-10 photos (40 per class) and 20 injected outliers, through the
    CIFAR ResNet-20. Its weights (akamaster's) were trained on CIFAR-10's train split
    with its true labels: the features know these very classes."""
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    weights = shared_file("weights/resnet20-12fca82f.th")
    base = tmp_path_factory.mktemp("outliers")
    root = base / "imgs"
    for cls in sorted(p.name for p in (cifar_mini / "train").iterdir()):
        (root / cls).mkdir(parents=True)
        for f in sorted((cifar_mini / "train" / cls).glob("*.jpg"))[:40]:
            (root / cls / f.name).write_bytes(f.read_bytes())
    run = RunDir(base / "run")
    run_pipeline(run, DatasetOptions(parse_spec(f"folder:{root}"), inject_outliers=20, seed=0),
                 FeatureOptions(model="cifar-resnet20", weights=weights), SHORT_MAP)
    return run


def _outlier_truth(run: RunDir) -> tuple[np.ndarray, list[dict]]:
    rows = [r for r in read_truth(run.path) if r["kind"] == "outlier"]
    truth = np.zeros(len(run.read_samples()), bool)
    truth[[r["index"] for r in rows]] = True
    return truth, rows


def test_outlier_table_is_its_score_against_its_cut(outlier_run):
    samples = outlier_run.read_samples()
    truth, rows = _outlier_truth(outlier_run)
    assert len(rows) == 20 and truth[400:].all() and not truth[:400].any()
    assert (samples.true_labels[truth] == -1).all()  # an outlier has no true class
    assert {r["how"] for r in rows} == {"digits", "photo", "noise", "blank"}
    table = load_findings(outlier_run, len(samples))["outlier"]
    assert (table.issue == (table.score >= table.info["threshold"])).all()
    # The percentile is the score's rank: the highest score is the farthest point.
    order = np.argsort(table.score, kind="stable")
    assert (np.diff(table.facts["percentile"][order]) > 0).all()


def test_injected_outliers_rank_high_by_score(outlier_run):
    from worker.pipeline.evaluation.run_report import evaluate

    table = load_findings(outlier_run, len(outlier_run.read_samples()))["outlier"]
    truth, _ = _outlier_truth(outlier_run)
    scores = evaluate(outlier_run, with_cleanlab=False)["findings"]["outlier"]
    assert scores["truth"] == 20 and scores["marked"] == int(table.issue.sum())
    assert np.median(table.facts["percentile"][truth]) > 0.8
    assert scores["auroc"] > 0.8
    # queue2x: the share of them among the first 40 samples by score (an oracle count).
    first = np.argsort(-table.score, kind="stable")[:40]
    assert scores["queue2x"] == truth[first].sum() / 20


def test_images_of_another_domain_rank_among_the_farthest(outlier_run):
    """Digits are no photograph of any CIFAR class: whatever the cut, their score puts
    them above 90% of the dataset. (Uniform noise need not: a network trained on CIFAR's
    labels, as these ResNet-20 weights were, maps noise into a class's region, where no
    distance can tell it apart; with ImageNet features it ranks above 97%.)"""
    table = load_findings(outlier_run, len(outlier_run.read_samples()))["outlier"]
    _, rows = _outlier_truth(outlier_run)
    digits = [r["index"] for r in rows if r["how"] == "digits"]
    assert digits and np.median(table.facts["percentile"][digits]) > 0.9, \
        table.facts["percentile"][digits]


def test_a_relabelled_outlier_is_kept_and_a_dropped_one_is_dropped(outlier_run, tmp_path):
    """A relabel says the image belongs to a class: the outlier's default drop yields."""
    run = RunDir(tmp_path / "run")
    shutil.copytree(outlier_run.path, run.path)
    tables = load_findings(run, len(run.read_samples()))
    dropping = get_kind("outlier").dropping(tables["outlier"])
    marked = np.flatnonzero(dropping)
    decisions = current_snapshot(run).decisions
    assert len(marked) and not decisions.kept[marked].any()
    # Below the drop cut an outlier is proposed: kept unless another finding drops it.
    proposed = np.flatnonzero(tables["outlier"].issue & ~dropping)
    assert all(decisions.kept[i] or decisions.reason[i] != "outlier" for i in proposed)
    # Outliers no earlier kind (a duplicate: blank squares can be copies) drops.
    alone = [int(i) for i in marked if _first_drop_kind(tables, int(i)) == "outlier"]
    assert len(alone) >= 2
    first, second = alone[:2]
    assert decisions.reason[first] == decisions.reason[second] == "outlier"
    open_store(run).set_relabels([first], 0)
    decisions = current_snapshot(run).decisions
    assert decisions.kept[first] and decisions.reason[first] == "relabel"
    assert not decisions.kept[second] and decisions.reason[second] == "outlier"


# --------------------------------------------------------------------------- bad input
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worker.cli", *args], capture_output=True,
                          text=True, timeout=300)


def _one_error_line(r: subprocess.CompletedProcess, message: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], r.stderr


@pytest.mark.parametrize("args, message", [
    (["--duplicate-threshold", "-1"], "--duplicate-threshold: must be a number > 0"),
    (["--duplicate-threshold", "abc"], "--duplicate-threshold: must be a number > 0"),
    (["--outlier-threshold", "0"], "--outlier-threshold: must be a number > 0"),
    (["--leak-threshold", "nan"], "--leak-threshold: must be a number > 0"),
    (["--top", "-2"], "--top: must be a whole number"),
    (["--kind", "nope"], "no finding kind 'nope': use one of"),
])
def test_findings_bad_input_is_one_line(fresh_run, args, message):
    findings = fresh_run.path / "findings"
    before = {p.name: p.stat().st_mtime_ns for p in findings.iterdir()}
    meta = fresh_run.run_json.read_bytes()
    _one_error_line(_cli("findings", str(fresh_run.path), *args), message)
    # Refused before any work: no table and no record was written again.
    assert {p.name: p.stat().st_mtime_ns for p in findings.iterdir()} == before
    assert fresh_run.run_json.read_bytes() == meta


def test_findings_of_a_folder_that_is_not_a_run(tmp_path):
    _one_error_line(_cli("findings", str(tmp_path / "none")), "is not a run")


@pytest.fixture
def byo_features(tmp_path) -> tuple[Path, Path]:
    """A tiny features: dataset (20 × 4 float32, two classes) with its labels CSV."""
    x = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    np.save(tmp_path / "emb.npy", x)
    (tmp_path / "emb.csv").write_text("label\n" + "".join(f"{'ab'[i % 2]}\n" for i in range(20)))
    return tmp_path / "emb.npy", tmp_path / "emb.csv"


@pytest.mark.parametrize("flag, value", [("--inject-duplicates", "0.1"),
                                         ("--inject-outliers", "3"), ("--inject-leaks", "3")])
def test_injection_into_features_is_refused(byo_features, tmp_path, flag, value):
    feats, labels = byo_features
    out = tmp_path / "run"
    r = _cli("pipeline", "--dataset", f"features:{feats}", "--labels", str(labels),
             flag, value, "--out", str(out))
    _one_error_line(r, "--inject-duplicates, --inject-outliers and --inject-leaks need images")
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--inject-duplicates", "1.5"], "--inject-duplicates: must be a number"),
    (["--inject-duplicates", "x"], "--inject-duplicates: must be a number"),
    (["--inject-outliers", "-1"], "--inject-outliers: must be a whole number"),
    (["--inject-outliers", "2.5"], "--inject-outliers: must be a whole number"),
    (["--duplicate-strength", "huge"], "--duplicate-strength: invalid choice: 'huge'"),
    (["--outlier-sources", "moon"], "--outlier-sources: invalid choice: 'moon'"),
    (["--duplicate-threshold", "0"], "--duplicate-threshold: must be a number > 0"),
    (["--duplicate-drop-threshold", "1.5"], "--duplicate-drop-threshold: must be a number"),
    (["--outlier-drop-threshold", "x"], "--outlier-drop-threshold: must be a number"),
])
def test_pipeline_injection_flags_bad_input_is_one_line(tmp_path, args, message):
    out = tmp_path / "run"
    _one_error_line(_cli("pipeline", "--dataset", "digits", *args, "--out", str(out)), message)
    assert not out.exists()


# --------------------------------------------------------------------------- clean output
def test_findings_listing_has_no_progress_bars_off_a_terminal(fresh_run):
    """Piped, ``curator findings --redo`` prints the listing and nothing
    else, on either stream; on a terminal its bars go to stderr, never into stdout."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    r = _cli("findings", str(fresh_run.path), "--redo")
    assert r.returncode == 0, r.stderr
    assert "%|" not in r.stdout + r.stderr and "findings:" not in r.stderr, r.stderr
    assert r.stdout.strip()
    primary, secondary = pty.openpty()
    # A new terminal is 0 columns wide, and tqdm fits its bar to that: give it 80.
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        p = subprocess.run([sys.executable, "-m", "worker.cli", "findings",
                            str(fresh_run.path), "--redo"], stdout=subprocess.PIPE,
                           stderr=secondary, text=True, timeout=300)
        os.close(secondary)
        secondary = -1
        err = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(primary)
        if secondary >= 0:
            os.close(secondary)
    assert p.returncode == 0
    assert "%|" not in p.stdout and p.stdout == r.stdout
    assert b"%|" in err, err[-500:]
