"""``curator version``, ``versions`` and ``diff`` as a user runs them, each decision and
version signed by the person whose shell made it (the OS user: ``LOGNAME``); bad input is
one line and exit 2; and a ``curator version`` killed (SIGKILL) while it writes leaves the
store whole, every committed version and decision readable and no half version."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np

from tests.refusals import one_line
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.curation.versions import list_versions, read_version
from worker.pipeline.storage.curation_store import CurationStore


def _cli(*args: str, user: str = "ana", **env: str) -> subprocess.CompletedProcess:
    """``curator ARGS`` in a subprocess, as ``user`` (getpass reads LOGNAME first)."""
    return subprocess.run([sys.executable, "-m", "worker.cli", *args], capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "LOGNAME": user, "USER": user, **env})


def _ok(*args: str, user: str = "ana") -> str:
    r = _cli(*args, user=user)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_versions_and_their_diff_name_each_change_and_its_author(fresh_run):
    run = str(fresh_run.path)
    snap = current_snapshot(fresh_run)
    flagged = np.flatnonzero(snap.decisions.reason == "noise").tolist()
    # samples the curation keeps as they are (none of class "3": they are relabelled to it)
    drop, calm, late = [i for i in range(len(snap.samples)) if snap.decisions.reason[i] ==
                        "cluster" and snap.samples.classes[snap.samples.labels[i]] != "3"][:3]
    assert "version v0 saved" in _ok("version", run, "v0", "--note", "as clustered")
    _ok("override", run, "drop", str(drop))
    _ok("override", run, "keep", str(flagged[0]), user="ben")
    _ok("relabel", run, "3", str(calm), user="ben")
    _ok("version", run, "v1", user="ben")
    listed = json.loads(_ok("versions", run, "--json"))
    assert [(v["name"], v["author"], v["note"]) for v in listed] == \
        [("v0", "ana", "as clustered"), ("v1", "ben", "")]
    assert listed[1]["n_kept"] == listed[0]["n_kept"] and listed[1]["relabelled"] == 1
    diff = json.loads(_ok("diff", run, "v0", "v1", "--json"))
    rows = {(r["sample"], r["change"]): r for r in diff["rows"]}
    assert set(rows) == {(drop, "dropped"), (flagged[0], "kept back"), (calm, "relabelled")}
    assert (rows[drop, "dropped"]["reason"], rows[drop, "dropped"]["decided_by"]) == \
        ("override_drop", "ana")
    kept_back = rows[flagged[0], "kept back"]  # explained by A: the rule's flag
    assert (kept_back["reason"], kept_back["decided_by"]) == ("noise", "ben")
    assert "label" in kept_back["kinds"].split(",")
    relabel = rows[calm, "relabelled"]
    assert (relabel["from"], relabel["to"], relabel["decided_by"]) == \
        (snap.samples.classes[snap.samples.labels[calm]], "3", "ben")
    assert {(s["change"], s["decided_by"], s["samples"]) for s in diff["summary"]} == \
        {("dropped", "ana", 1), ("kept back", "ben", 1), ("relabelled", "ben", 1)}
    text = _ok("diff", run, "v0", "v1").splitlines()
    assert text[0] == "v0 → v1: 3 change(s)"
    assert text[1].split() == ["change", "kind", "decided_by", "samples"]
    # ``current``: the live curation, as a side of its own
    _ok("override", run, "drop", str(late), user="cy")
    live = json.loads(_ok("diff", run, "v1", "current", "--json"))
    assert [(r["sample"], r["change"], r["decided_by"]) for r in live["rows"]] == \
        [(late, "dropped", "cy")]
    assert json.loads(_ok("diff", run, "current", "v1", "--json", "--limit", "1"))["rows"][0][
        "change"] == "kept back"
    assert "no sample changed" in _ok("diff", run, "v1", "v1")


def test_a_bad_version_request_is_one_line_and_exit_2(fresh_run):
    run = str(fresh_run.path)
    _ok("version", run, "v0")
    for args, env, message in (
            (("diff", run, "v0", "v9"), {}, "no version 'v9': this run's versions are v0"),
            (("version", run, "v0"), {}, "version 'v0' exists"),
            (("version", run, "a/b"), {}, "invalid version name"),
            (("version", run, "current"), {}, "live curation"),
            (("diff", run, "v0", "current", "--limit", "0"), {}, "--limit"),
            (("version", run, "v1"), {"CURATOR_MIN_FREE_MB": str(10**12)},
             "MB free on"),
            (("version", run, "v1"), {"CURATOR_MIN_FREE_MB": "lots"},
             "CURATOR_MIN_FREE_MB must be a whole number")):
        r = _cli(*args, **env)
        assert r.returncode == 2 and message in one_line(r.stderr), (args, r.stderr)
    assert "free space and run again" in _cli("version", run, "v1",
                                              CURATOR_MIN_FREE_MB=str(10**12)).stderr
    assert [v["name"] for v in list_versions(fresh_run)] == ["v0"]


# Decisions and versions, one after the other, as fast as the command allows.
LOOP = """
import sys
from worker.cli import main
for i in range(10_000):
    main(["override", sys.argv[1], "drop", str(i)])
    main(["version", sys.argv[1], f"v{i}", "--note", f"after dropping {i}"])
"""


def _versions_committed(store) -> int:  # noqa: ANN001 - Path
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=30)
    try:
        return db.execute("SELECT COUNT(*) FROM version_outcomes").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        db.close()


def test_a_version_killed_while_it_writes_leaves_the_store_whole(fresh_run):
    CurationStore(fresh_run.store)  # the versions tables exist before the loop reads them
    proc = subprocess.Popen([sys.executable, "-c", LOOP, str(fresh_run.path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while _versions_committed(fresh_run.store) < 3 and time.monotonic() < deadline \
            and proc.poll() is None:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = CurationStore(fresh_run.store)  # opens
    with sqlite3.connect(fresh_run.store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        half = db.execute("SELECT COUNT(*) FROM versions v LEFT JOIN version_outcomes o "
                          "ON o.name = v.name WHERE o.name IS NULL").fetchone()[0]
    assert half == 0  # no version without its outcome
    names = [v["name"] for v in list_versions(fresh_run)]
    assert len(names) >= 3 and names == [f"v{i}" for i in range(len(names))]
    dropped = store.overrides()
    assert set(dropped) == set(range(len(dropped))) and len(dropped) >= len(names)
    for i, name in enumerate(names):
        v = read_version(fresh_run, name)
        assert v.note == f"after dropping {i}" and not v.outcome.kept[:i + 1].any()
        assert set(v.state["overrides"]) == {str(j) for j in range(i + 1)}
    # and the store goes on: the next version and a diff against it
    assert _cli("version", str(fresh_run.path), "after").returncode == 0
    r = _cli("diff", str(fresh_run.path), names[-1], "after", "--json")
    assert r.returncode == 0, r.stderr
