"""A user's mistake at the command line is one line and exit 2: override indices out of
range, weights for another network, a deleted store, a setting that is not a number, a
bad ``CURATOR_*`` value."""

from __future__ import annotations

import os
import subprocess
import sys


def test_override_indices_must_be_in_range(fresh_run):
    import subprocess

    from tests.integration.conftest import CURATOR

    for bad in ("99999999", str(10**20), "-1"):
        r = subprocess.run([CURATOR, "override", str(fresh_run.path), "drop", "5", bad],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert "out of range" in r.stderr or "invalid" in r.stderr, r.stderr
    from worker.pipeline.storage.curation_store import open_store

    assert open_store(fresh_run).overrides() == {}  # nothing half-applied


def test_wrong_architecture_weights_are_one_short_line(small_folder, tmp_path):
    from tests.integration.conftest import curator, shared_file

    weights = shared_file("weights/resnet56-4bfd9763.th")
    r = curator("pipeline", "--dataset", f"folder:{small_folder}", "--model", "cifar-resnet20",
                "--weights", str(weights), "--out", str(tmp_path / "w"))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")][0]
    assert "does not fit" in line and len(line) < 400


def test_a_deleted_store_is_an_error_not_a_silent_fresh_one(fresh_run):
    from tests.integration.conftest import curator

    fresh_run.store.unlink()
    # Exports and trainings are recorded as jobs in that store: refused before it is made.
    for args in (["evaluate", str(fresh_run.path)], ["export", str(fresh_run.path), "--dest", "x"],
                 ["retrain", str(fresh_run.path), "--epochs", "1"]):
        r = curator(*args)
        assert r.returncode == 2 and "is missing" in r.stderr, r.stderr
    assert not fresh_run.store.exists()
    assert curator("cluster", str(fresh_run.path)).returncode == 0  # starts a new one
    assert fresh_run.store.is_file()


def test_a_non_numeric_setting_is_one_line():
    import os
    import subprocess

    from tests.integration.conftest import CURATOR

    r = subprocess.run([CURATOR, "serve"], env={**os.environ, "CURATOR_PORT": "abc"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == \
        "error: CURATOR_PORT must be a whole number from 1 to 65,535, got abc"


def test_the_cli_says_a_bad_value_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURATOR_")}
    env.update(CURATOR_PORT="abc", CURATOR_RUNS_ROOT=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "worker.cli", "worker"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: CURATOR_PORT must be a whole number from 1 to 65,535, got abc"]
