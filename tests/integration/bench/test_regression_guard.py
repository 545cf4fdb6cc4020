"""The regression guard (bench/regression_guard.py) run as ``make guard`` runs it, on the
digits run: it fails on a figure past its floor."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.conftest import ROOT


def test_the_guard_fails_on_a_figure_past_its_floor(tmp_path, digits_run):
    """End to end through the real probe: the pipeline resumed on a finished run (seconds
    of imports and reading) can never start as fast as a bare interpreter, so that floor
    fails, the generous one beside it holds, and the guard exits 1 naming the one that
    failed."""
    floors = tmp_path / "floors.toml"
    floors.write_text(
        '[figures.pipeline_resume_over_bare]\nprobe = "startup"\nat_most = 1\nset = 2026-11-28\n'
        'seen = "planted"\nwhat = "a floor no start-up can meet"\n'
        '[figures.api_import_over_bare]\nprobe = "startup"\nat_most = 1000\n'
        'set = 2026-11-28\nseen = "planted"\nwhat = "a floor any start-up meets"\n')
    # The demo's run, made already (the probe times its pipeline resumed).
    shutil.copytree(digits_run.path, tmp_path / "work" / "runs" / "demo")
    done = subprocess.run([sys.executable, "-m", "bench.regression_guard", "--only", "startup",
                           "--floors", str(floors), "--work", str(tmp_path / "work"),
                           "--repeat", "1"],
                          capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("pipeline_resume_over_bare") and line.endswith("FAILED")
               for line in lines)
    assert any(line.startswith("api_import_over_bare") and line.endswith("ok") for line in lines)
    assert "past their floors: pipeline_resume_over_bare" in done.stdout
    assert lines[-1] == "guard: 1 passed, 1 failed"
