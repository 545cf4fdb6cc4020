"""Versions on a real run (worker/pipeline/curation/versions.py): a saved version holds what
the curation did to every sample, as the live snapshot says, and keeps it when the
curation changes; a store from before versions shows its decisions as ``initial``, resolved
the first time it is read; too little free space refuses a version before anything is
written."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.curation.versions import (
    list_versions,
    live_version,
    matching_version,
    read_version,
    save_version,
    train_key,
)
from worker.pipeline.errors import InputError
from worker.pipeline.findings import marks, sample_decisions, sample_findings
from worker.pipeline.storage.author import acting_as, os_user
from worker.pipeline.storage.curation_store import open_store
from worker.pipeline.storage.decision_log import last_decisions


def _flagged(run) -> list[int]:  # noqa: ANN001 - RunDir
    """Samples the label rule drops on the digits run (kept back by a keep)."""
    return np.flatnonzero(current_snapshot(run).decisions.reason == "noise").tolist()


def test_a_version_freezes_every_samples_fate_and_keeps_it(fresh_run):
    run, store = fresh_run, open_store(fresh_run)
    flagged = _flagged(run)
    with acting_as("ana"):
        store.set_overrides([17, 42], "drop")
    with acting_as("ben"):
        store.set_overrides([flagged[0]], "keep")
        store.set_relabels([5], 3)
    with acting_as("cy"):
        saved = save_version(run, "v1", note="classes 3 and 5 checked")
    snap = current_snapshot(run)
    frozen = read_version(run, "v1")
    out = frozen.outcome
    assert np.array_equal(out.kept, snap.decisions.kept)
    assert np.array_equal(out.labels, snap.labels) and out.labels[5] == 3
    marked = marks(snap.findings, snap.view())
    assert list(out.decision) == list(sample_decisions(snap.decisions.kept,
                                                       snap.decisions.reason, marked))
    assert list(out.reason) == list(snap.decisions.reason)
    assert out.finding_names() == sample_findings(marked, len(snap.samples))
    signed = {s: d.author for s, d in last_decisions(store).items()}
    assert {i: out.decided_by[i] for i in (17, 42, flagged[0], 5)} == signed
    assert set(out.decided_by) == {"", "ana", "ben"}
    assert (frozen.author, frozen.note, frozen.store_revision) == \
        ("cy", "classes 3 and 5 checked", store.revision())
    assert frozen.state["overrides"]["17"][:2] == ["drop", "ana"]
    assert saved == list_versions(run)[0]
    assert (saved["n_samples"], saved["n_kept"], saved["relabelled"]) == \
        (len(snap.samples), int(snap.decisions.kept.sum()), 1)
    assert sum(saved["decisions"].values()) == len(snap.samples)
    # Equal to the live curation until it changes; then the version stays as it was.
    assert live_version(run).outcome_key == frozen.outcome_key
    assert matching_version(run, train_key=train_key(snap.decisions.kept, snap.labels)) == "v1"
    store.set_overrides([17], "keep")
    assert live_version(run).outcome_key != frozen.outcome_key
    again = read_version(run, "v1")
    assert again.outcome_key == frozen.outcome_key and not again.outcome.kept[17]
    assert matching_version(run, outcome_key=live_version(run).outcome_key) is None


def test_a_bad_request_is_one_line_and_writes_nothing(fresh_run):
    save_version(fresh_run, "v1")
    for call, match in ((lambda: save_version(fresh_run, "v1"), "version 'v1' exists"),
                        (lambda: save_version(fresh_run, "../x"), "invalid version name"),
                        (lambda: save_version(fresh_run, "current"), "live curation"),
                        (lambda: save_version(fresh_run, "v2", note=3), "note"),
                        (lambda: read_version(fresh_run, "v9"),
                         "no version 'v9': this run's versions are v1")):
        with pytest.raises(InputError, match=match) as e:
            call()
        assert "\n" not in str(e.value)
    assert [v["name"] for v in list_versions(fresh_run)] == ["v1"]


def test_too_little_free_space_refuses_a_version_before_writing(fresh_run):
    with pytest.raises(InputError, match=r"MB free on .*, need .*: free space and run again"):
        save_version(fresh_run, "big", min_free_mb=10**12)
    assert list_versions(fresh_run) == []


def _as_before_versions(run) -> None:  # noqa: ANN001 - RunDir
    """Take the store back to the code before versions: no versions tables, user_version 2."""
    with sqlite3.connect(run.store) as db:
        for name, in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
            db.execute(f"DROP TRIGGER {name}")
        db.executescript("DROP TABLE version_outcomes; DROP TABLE versions;"
                         "PRAGMA user_version = 2;")


def test_a_run_from_before_versions_shows_its_decisions_as_initial(fresh_run):
    run, store = fresh_run, open_store(fresh_run)
    store.set_overrides([17], "drop")
    store.set_relabels([5], 3)
    _as_before_versions(run)
    live = live_version(run)  # opens the store: upgraded, initial saved unresolved
    with sqlite3.connect(run.store) as db:
        assert db.execute("SELECT name, author FROM versions").fetchall() == \
            [("initial", "unknown")]
        assert db.execute("SELECT COUNT(*) FROM version_outcomes").fetchone() == (0,)
    [listed] = list_versions(run)  # resolved the first time it is read
    initial = read_version(run, "initial")
    assert (listed["name"], listed["author"], listed["relabelled"]) == ("initial", "unknown", 1)
    assert initial.outcome_key == live.outcome_key and not initial.outcome.kept[17]
    assert initial.outcome.decided_by[17] == os_user()  # the decision's own author
    store.set_overrides([17], "keep")
    assert read_version(run, "initial").outcome_key == initial.outcome_key  # stored once
