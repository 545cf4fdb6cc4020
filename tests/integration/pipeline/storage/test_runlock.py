"""One writer per run, and where a run may be created: real CLI subprocesses."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import CURATOR, curator
from worker.pipeline.errors import InputError
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.runlock import MARKER, PIPELINE_LOCK, claim_out_dir


def test_out_dir_rules(tmp_path, digits_run):
    claim_out_dir(tmp_path / "new")  # missing: fine
    (tmp_path / "empty").mkdir()
    claim_out_dir(tmp_path / "empty")
    claim_out_dir(digits_run.path)  # an existing run: fine
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        claim_out_dir(tmp_path / "file")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a run"):
        claim_out_dir(tmp_path / "busy")
    with pytest.raises(InputError, match="inside the dataset folder"):
        claim_out_dir(tmp_path / "data" / "runs" / "r1", tmp_path / "data")
    # A first ingest killed mid-write leaves its temp file in a folder we claimed: the
    # retry may go on.
    claim_out_dir(tmp_path / "killed")
    (tmp_path / "killed" / ".thumbnails.npy.host-123.abc.tmp.npy").write_bytes(b"half")
    claim_out_dir(tmp_path / "killed")
    assert (tmp_path / "new" / MARKER).is_file() and (tmp_path / "empty" / MARKER).is_file()


def test_a_users_own_file_is_never_taken_for_a_run(tmp_path):
    """A folder holding only the user's own ``curation.sqlite`` (or a temp-like
    name) is not ours: refused in one line, the file untouched; a file, or a place this
    user cannot write, as --out is one line too."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "curation.sqlite").write_bytes(b"my own database")
    (mine / ".x.tmp").write_bytes(b"mine too")
    for args in (["pipeline", "--dataset", "digits", "--out", str(mine)],
                 ["extract", "--dataset", "digits", "--out", str(mine)]):
        r = curator(*args)
        assert r.returncode == 2 and "is not a run" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert (mine / "curation.sqlite").read_bytes() == b"my own database"
    assert sorted(p.name for p in mine.iterdir()) == [".x.tmp", "curation.sqlite"]
    (tmp_path / "file").write_text("x")
    r = curator("pipeline", "--dataset", "digits", "--out", str(tmp_path / "file" / "run"))
    assert r.returncode == 2 and "cannot be made a folder" in r.stderr, r.stderr
    r = curator("pipeline", "--dataset", "digits", "--out", "/proc/curator-run")
    assert r.returncode == 2 and r.stderr.startswith("error: --out /proc/curator-run"), r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_two_pipelines_on_one_out_the_second_is_refused(tmp_path):
    out = tmp_path / "race"
    first = subprocess.Popen([CURATOR, "pipeline", "--dataset", "digits", "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = out / PIPELINE_LOCK
        deadline = time.monotonic() + 60
        while not (lock.is_file() and lock.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = curator("pipeline", "--dataset", "digits", "--inject-noise", "0.2",
                         "--out", str(out))
        assert second.returncode == 2 and "is busy" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
    finally:
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert RunDir(out).read_meta()["dataset"]["inject_noise"] == 0.0  # the first one's


def test_out_mistakes_via_the_cli(tmp_path, small_folder):
    (tmp_path / "f").write_text("x")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    for out, message in ((tmp_path / "f", "is a file"),
                         (tmp_path / "notes", "not a run"),
                         (small_folder / "runs" / "x", "inside the dataset folder")):
        r = curator("pipeline", "--dataset", f"folder:{small_folder}", "--out", str(out))
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"
    assert not (small_folder / "runs").exists()


def test_a_killed_writer_s_temp_file_is_swept_by_the_next_write(tmp_path):
    import numpy as np

    from worker.pipeline.storage.rundir import atomic_path, save_npy

    # A real process writes a temp file for samples.csv and is killed before the rename.
    target = tmp_path / "arr.npy"
    code = ("import sys, time\nfrom pathlib import Path\n"
            "from worker.pipeline.storage.rundir import atomic_path\n"
            "with atomic_path(Path(sys.argv[1]), '.npy') as tmp:\n"
            "    tmp.write_text('half'); print(tmp, flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(target)],
                            stdout=subprocess.PIPE, text=True)
    leftover = Path(proc.stdout.readline().strip())
    # While the writer lives, its file is not touched.
    with atomic_path(target, ".npy") as tmp:
        np.save(tmp, np.zeros(2))
    assert leftover.is_file()
    proc.kill()
    proc.wait()
    assert leftover.is_file()
    save_npy(target, np.ones(3))
    assert not leftover.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arr.npy"]
    assert np.array_equal(np.load(target), np.ones(3))


def test_an_ingest_that_dies_after_its_thumbnails_leaves_a_run_a_retry_completes(
        tmp_path, small_folder, monkeypatch):
    """A first ingest killed between placing thumbnails.npy and writing the sample table
    leaves a run in the making (run.json without the ingest step), not a folder that
    --out refuses; the retry ingests it."""
    from worker.pipeline.runner import ensure_ingested
    from worker.pipeline.sources import ingest as ingest_mod
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    run = RunDir(tmp_path / "run")
    opts = DatasetOptions(parse_spec(f"folder:{small_folder}"))

    def killed(*_args, **_kwargs):
        raise SystemExit(137)

    with monkeypatch.context() as m:
        m.setattr(ingest_mod, "_write_run", killed)
        with pytest.raises(SystemExit):
            ensure_ingested(run, opts)
    assert run.thumbnails.is_file() and run.exists() and not run.step_done("ingest")
    claim_out_dir(run.path)  # a run in the making, not "holds other files"
    ds = ensure_ingested(run, opts)
    assert run.step_done("ingest") and len(ds.samples) == len(run.read_samples())
