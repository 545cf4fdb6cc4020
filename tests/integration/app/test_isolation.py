"""One bad run never breaks the others, through the real ``curator serve`` and the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request

import pytest

from bench.browser import Server
from tests.integration.conftest import CURATOR


@pytest.fixture(scope="module")
def messy_root(digits_run, tmp_path_factory):
    """good, nested/good2, a damaged store, a bad run.json, a deleted store, a link out."""
    base = tmp_path_factory.mktemp("messy")
    root = base / "runs"
    for name in ("good", "nested/good2", "corrupt", "badjson", "nostore"):
        shutil.copytree(digits_run.path, root / name)
    (root / "corrupt" / "curation.sqlite").write_bytes(b"this is not a database" * 100)
    for extra in ("-wal", "-shm"):
        (root / "corrupt" / f"curation.sqlite{extra}").unlink(missing_ok=True)
    (root / "badjson" / "run.json").write_text("{ not json")
    (root / "nostore" / "curation.sqlite").unlink()
    outside = base / "outside"
    shutil.copytree(digits_run.path, outside)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    return root


def _get(url: str, host: str | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_listing_keeps_broken_runs_as_rows(messy_root):
    from worker.run_catalog import list_runs

    entries = {e.id: e for e in list_runs(messy_root)}
    assert set(entries) == {"good", "nested/good2", "corrupt", "badjson", "nostore", "escape"}
    assert entries["good"].error is None and entries["nested/good2"].error is None
    assert "cannot be read" in entries["corrupt"].error
    assert "run.json cannot be read" in entries["badjson"].error
    assert "is missing" in entries["nostore"].error
    assert "outside the runs root" in entries["escape"].error


def test_the_server_lists_every_run_and_serves_the_good_ones(messy_root):
    server = Server(messy_root)
    try:
        status, _ = _get(server.url + "/")
        assert status == 200
        body = {"output": "runs-table.children", "outputs": {"id": "runs-table",
                                                             "property": "children"},
                "inputs": [{"id": "runs-poll", "property": "n_intervals", "value": 1}],
                "changedPropIds": ["runs-poll.n_intervals"], "state": []}
        req = urllib.request.Request(server.url + "/_dash-update-component",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            table = json.dumps(json.loads(r.read()))  # unescaped text of the rows
        for name in ("good", "nested/good2", "corrupt", "badjson", "nostore", "escape"):
            assert name in table, name
        assert table.count("cannot be read") >= 4
        jobs = dict(body, output="jobs-table.children",
                    outputs={"id": "jobs-table", "property": "children"},
                    inputs=[{"id": "jobs-poll", "property": "n_intervals", "value": 1}],
                    changedPropIds=["jobs-poll.n_intervals"])
        req = urllib.request.Request(server.url + "/_dash-update-component",
                                     data=json.dumps(jobs).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 200 and "outside" not in r.read().decode()
        assert _get(server.url + "/thumb/good/3.png")[0] == 200
        assert _get(server.url + "/thumb/nested/good2/3.png")[0] == 200
        assert _get(server.url + "/thumb/escape/3.png")[0] == 404
        assert _get(server.url + "/curate/corrupt")[0] == 200  # the page shell; no 500
        assert _get(server.url + "/healthz", host="evil.example")[0] == 403
    finally:
        server.stop()


def test_cli_on_a_damaged_run_is_one_line(messy_root):
    for args in (["evaluate", str(messy_root / "corrupt")],
                 ["override", str(messy_root / "corrupt"), "drop", "3"],
                 ["jobs", str(messy_root / "corrupt")]):
        r = subprocess.run([CURATOR, *args], capture_output=True, text=True, timeout=120)
        assert "Traceback" not in r.stderr, (args, r.stderr)
        assert r.returncode == 2 and "cannot be read" in r.stderr, (args, r.stderr)
