"""``curator history`` and ``run.history()``: who decided what and when, for the run and
for one sample, the same rows from both; the decisions made in a shell are signed with the
OS user's name, and ``run.findings()`` names each decided sample's last author. Each bad
input is one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tsne_curator as tc
from tests.refusals import one_line
from worker.pipeline.storage.author import os_user


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "worker.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_history_lists_signed_decisions_for_the_run_and_a_sample(fresh_run):
    run = str(fresh_run.path)
    assert _cli("override", run, "drop", "17", "42").returncode == 0
    assert _cli("relabel", run, "3", "17").returncode == 0
    assert _cli("undo", run).returncode == 0
    out = _cli("history", run, "--json")
    rows = json.loads(out.stdout)
    me = os_user()
    assert [(r["author"], r["changes"], r["state"].split(" by ")[0]) for r in rows[:2]] == \
        [(me, 1, "undone"), (me, 2, "stands")]
    assert rows[0]["state"].startswith(f"undone by {me} at ")
    assert rows[-1]["state"] == "pipeline"
    api = tc.Run(fresh_run.path)
    assert api.history().to_dict("records") == rows
    one = json.loads(_cli("history", run, "--sample", "17", "--json").stdout)
    assert [(r["what"], r["before"], r["after"], r["author"]) for r in one] == \
        [("decision", "", "drop", me), ("label", "", "3", me)]
    assert api.history(17).to_dict("records") == one
    text = _cli("history", run, "--sample", "17").stdout
    assert text.splitlines()[0].split() == ["id", "at", "author", "what", "before", "after",
                                            "state", "description"]
    found = api.findings()
    decided = found[found["index"] == 17].iloc[0]
    assert decided["decided_by"] == me and decided["decided_at"] == one[0]["at"]
    assert set(found[found["index"] == 5]["decided_by"]) <= {""}


@pytest.mark.parametrize("args, message", [
    (["--sample", "999999"], "no sample 999999"),
    (["--sample", "-1"], "--sample"),
    (["--limit", "0"], "--limit"),
])
def test_a_bad_history_request_is_one_line(fresh_run, args, message):
    r = _cli("history", str(fresh_run.path), *args)
    assert r.returncode == 2 and message in one_line(r.stderr)


def test_the_api_refuses_a_bad_history_request_in_one_line(fresh_run):
    api = tc.Run(fresh_run.path)
    for call, match in ((lambda: api.history(10**9), "no sample"),
                        (lambda: api.history(True), "whole number"),
                        (lambda: api.history(limit=0), "--limit")):
        with pytest.raises(tc.InputError, match=match) as e:
            call()
        assert "\n" not in str(e.value)
