"""The regression guard (bench/regression_guard.py): its floors file and its verdicts."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from bench.regression_guard import FLOORS, PROBES, Floor, judge, read_floors

ROOT = Path(__file__).resolve().parents[2]


def test_every_guarded_figure_has_its_probe_floor_date_and_reading():
    floors = read_floors(FLOORS)
    assert len({f.name for f in floors}) == len(floors) >= 15
    assert {f.probe for f in floors} == set(PROBES)  # every probe guards something
    for f in floors:
        assert f.set <= date.today() and f.what and f.seen, f.name


def test_a_figure_past_its_floor_fails_and_one_at_it_holds():
    most = Floor("ratio", "ui", 0.5, True, date(2026, 11, 28), "0.3", "a ratio")
    least = Floor("f1", "stress", 0.9, False, date(2026, 11, 28), "0.95", "an F1")
    verdicts = judge([most, least], {"ratio": 0.5, "f1": 0.89})
    assert [ok for _, _, ok in verdicts] == [True, False]
    assert not most.holds(0.51) and least.holds(0.9)
    # Not measured, or measured as NaN: never a pass.
    assert not most.holds(None) and not least.holds(math.nan)
    assert judge([most], {})[0][1:] == (None, False)


@pytest.mark.parametrize("body, says", [
    ('probe = "ui"\nat_most = 1\nat_least = 0\nset = 2026-11-28', "one of at_most or at_least"),
    ('probe = "ui"\nat_most = 1', "the date its floor was set"),
    ('probe = "ui"\nat_most = 1\nset = "yesterday"', "the date its floor was set"),
    ('probe = "gpu"\nat_most = 1\nset = 2026-11-28', "names probe 'gpu'"),
])
def test_a_floor_that_cannot_be_judged_is_refused(tmp_path, body, says):
    path = tmp_path / "floors.toml"
    path.write_text(f"[figures.x]\n{body}\n")
    with pytest.raises(ValueError, match=says):
        read_floors(path)


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
