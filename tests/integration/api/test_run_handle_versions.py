"""``run.version``, ``run.versions`` and ``run.diff`` (tsne_curator/run_handle.py): the same
versions and rows as ``curator version``, ``versions`` and ``diff``, as DataFrames with
the documented columns; bad input is one InputError line and writes nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tsne_curator as tc
from tests.integration.conftest import curator
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.curation.version_diff import DIFF_COLUMNS
from worker.pipeline.curation.versions import LIST_COLUMNS
from worker.pipeline.storage.author import os_user


def test_versions_and_a_diff_from_a_notebook(fresh_run, monkeypatch):
    run = tc.Run(fresh_run.path)
    snap = current_snapshot(fresh_run)
    a, b, c = np.flatnonzero(snap.decisions.reason == "cluster")[:3].tolist()
    saved = run.version("start", note="as clustered")
    run.drop([a, b])
    run.relabel([c], snap.samples.classes[(snap.samples.labels[c] + 1) % 10])
    run.version("next")
    listed = run.versions()
    assert list(listed.columns) == list(LIST_COLUMNS)
    assert listed["name"].tolist() == ["start", "next"]
    assert listed.iloc[0].to_dict() == saved and saved["author"] == os_user()
    cli = json.loads(curator("versions", str(fresh_run.path), "--json").stdout)
    assert [dict(r) for r in listed.to_dict("records")] == cli
    diff = run.diff("start", "next")
    assert list(diff.columns) == list(DIFF_COLUMNS) and diff["sample"].dtype == np.int64
    assert diff[["sample", "change"]].values.tolist() == \
        [[a, "dropped"], [b, "dropped"], [c, "relabelled"]]
    cli = json.loads(curator("diff", str(fresh_run.path), "start", "next", "--json").stdout)
    assert diff.to_dict("records") == cli["rows"]
    assert run.diff("next").empty  # b defaults to the live curation
    run.keep([a])
    assert run.diff("next")[["sample", "change"]].values.tolist() == [[a, "kept back"]]
    empty = run.diff("next", "next")
    assert empty.empty and list(empty.columns) == list(DIFF_COLUMNS)
    monkeypatch.setenv("CURATOR_MIN_FREE_MB", str(10**12))
    for call, match in ((lambda: run.version("next"), "version 'next' exists"),
                        (lambda: run.version("huge"), "MB free on"),
                        (lambda: run.diff("start", "nope"), "no version 'nope'")):
        with pytest.raises(tc.InputError, match=match) as e:
            call()
        assert "\n" not in str(e.value)
    assert run.versions()["name"].tolist() == ["start", "next"]
