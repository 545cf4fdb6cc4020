"""The findings registry on a copy of the digits run: a toy kind registered in the test
reaches the export, the review list, ``curator findings`` and evaluate with no other
edit, and a table stored by an earlier method is computed again."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.unit.pipeline.findings.test_kind_registry import TOY_EVERY, _toy_kind, registered
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.export import export, manifest_columns
from worker.pipeline.findings import (
    DROP,
    REVIEW,
    FindingTable,
    ensure_findings,
    kinds,
    load_findings,
)
from worker.pipeline.findings.files import table_path
from worker.pipeline.storage.curation_store import open_store


def _manifest(dest: Path) -> list[dict]:
    with open(dest / "manifest.csv", newline="") as fh:
        return list(csv.DictReader(fh))


# --------------------------------------------------------------------------- toy kind
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
    """A new kind is one class and one ``register`` call, and the csv
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
    from app.curate import page_actions as curate_actions
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
        curate_actions.why(data, state, sample)


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
