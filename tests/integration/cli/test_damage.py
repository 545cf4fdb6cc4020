"""Damage stays local and is named: a truncated, unreadable or forbidden
run file is one line that names it and what to do, exit 2, in every command; in the app
that run is one broken row, and the other runs list and work."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.integration.conftest import CURATOR, curator

FILES = ("embedding.npy", "run.json", "samples.csv", "thumbnails.npy", "features.npy",
         "score.npy", "neighbours.npy", "curation.sqlite")


# The commands that read a run, each with the files it reads (a command that does not need
# a file is not asked about it).
COMMANDS = {
    "params": ("embedding.npy", "run.json", "samples.csv", "score.npy", "curation.sqlite"),
    "cluster": ("embedding.npy", "run.json", "samples.csv", "neighbours.npy",
                "curation.sqlite"),
    "embed": ("run.json", "features.npy"),
    "evaluate": ("embedding.npy", "run.json", "samples.csv", "curation.sqlite"),
    "export": ("embedding.npy", "run.json", "samples.csv", "curation.sqlite"),
    "relabel": ("run.json", "samples.csv", "curation.sqlite"),
    "retrain": ("embedding.npy", "run.json", "samples.csv", "thumbnails.npy",
                "curation.sqlite"),
}


ARGS = {"embed": ["--perplexity", "20", "--n-iter", "250"], "evaluate": ["--no-cleanlab"],
        "export": ["--dest", "x"], "relabel": ["7", "3"], "retrain": ["--epochs", "1"]}


def truncate(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def one_line_naming(r: subprocess.CompletedProcess, name: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
    assert name in lines[0] and "Traceback" not in r.stderr
    return lines[0]


@pytest.mark.parametrize("name", FILES)
def test_a_truncated_file_is_one_line_in_every_command(fresh_run, name):
    truncate(fresh_run.path / name)
    for command, reads in COMMANDS.items():
        if name not in reads:
            continue
        r = curator(command, str(fresh_run.path), *ARGS.get(command, []))
        line = one_line_naming(r, name)
        assert "damaged" in line or "cannot be read" in line, line


def test_the_named_repair_works(fresh_run):
    """The advice for an array is to move it away and run the step that makes it: done,
    the command that failed works again."""
    truncate(fresh_run.embedding)
    line = one_line_naming(curator("params", str(fresh_run.path)), "embedding.npy")
    assert "curator embed RUN" in line
    fresh_run.embedding.rename(fresh_run.path / "embedding.npy.bad")
    assert curator("embed", str(fresh_run.path)).returncode == 0
    assert curator("params", str(fresh_run.path)).returncode == 0


def _without_dac(*args: str) -> subprocess.CompletedProcess:
    """``curator`` with file permissions enforced: as root without the capabilities that
    bypass them (setpriv), as anyone else as is."""
    import os

    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv (util-linux) cannot drop CAP_DAC_OVERRIDE")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    return subprocess.run([*prefix, CURATOR, *args], capture_output=True, text=True,
                          timeout=300)


def test_permission_errors_are_reported_as_permission_errors(fresh_run):
    """An unreadable run.json and a read-only store are a permission to grant, not a
    damaged file to restore from a backup (which would throw the curation away)."""
    run = fresh_run.path
    (run / "run.json").chmod(0)
    try:
        line = one_line_naming(_without_dac("params", str(run)), "run.json")
        assert "permission denied reading" in line
    finally:
        (run / "run.json").chmod(0o644)
    (run / "curation.sqlite").chmod(0o444)
    run.chmod(0o555)
    try:
        line = one_line_naming(_without_dac("relabel", str(run), "7", "3"), "curation.sqlite")
        assert "permission denied" in line and "backup" not in line, line
    finally:
        run.chmod(0o755)
        (run / "curation.sqlite").chmod(0o644)


def test_out_under_a_folder_this_user_cannot_enter_is_one_line(tmp_path):
    """``--out`` below a parent the user may not search (``/root/x`` as anyone but root)
    and below one it may not write: one line each, exit 2, nothing made."""
    closed, readonly = tmp_path / "closed", tmp_path / "readonly"
    closed.mkdir(mode=0o000)  # not even its owner may search it
    readonly.mkdir(mode=0o555)
    try:
        for parent in (closed, readonly):
            out = parent / "run"
            r = _without_dac("pipeline", "--dataset", "digits", "--out", str(out))
            line = one_line_naming(r, str(out))
            assert r.returncode == 2 and "permission denied" in line, r.stderr
            assert not out.exists()
    finally:
        closed.chmod(0o755)
        readonly.chmod(0o755)


def test_one_damaged_run_is_one_broken_row_and_the_rest_work(fresh_run):
    from app.server import create_app
    from worker.settings import Settings

    root = fresh_run.path.parent
    shutil.copytree(fresh_run.path, root / "broken")
    truncate(root / "broken" / "embedding.npy")
    truncate(root / "broken" / "thumbnails.npy")
    app = create_app(Settings(runs_root=root))
    runs, curate = sys.modules["pages.runs"], sys.modules["pages.curate"]
    client = app.server.test_client()
    with app.server.test_request_context("/"):
        rows = {r["id"]: str(runs._row(r)) for r in runs.run_rows()}
        assert set(rows) == {"digits", "broken"}
        assert "cannot be read" in rows["broken"] and "embedding.npy" in rows["broken"]
        assert "cannot be read" not in rows["digits"] and "/curate/digits" in rows["digits"]
        page = str(curate.layout(run_id="broken"))
        assert "embedding.npy" in page and "damaged" in page
    for url in ("/thumb/broken/3.png", "/background/broken.png"):
        r = client.get(url, headers={"Host": "127.0.0.1"})
        assert r.status_code == 404 and b"is damaged" in r.data, (url, r.status_code)
    assert client.get("/thumb/digits/3.png", headers={"Host": "127.0.0.1"}).status_code == 200
