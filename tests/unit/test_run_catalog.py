"""Run ids (worker/run_catalog.py ``resolve_run``): any text either names a run inside the
runs root or is one InputError (Hypothesis)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.pipeline.errors import InputError
from worker.run_catalog import resolve_run

TEXT = st.text(max_size=40) | st.sampled_from(
    ["..", "../x", "/etc", "a/../../b", ".hidden", "x\x00y", "folder:", "folder:/",
     "cifar10:..", "digits:", "digits", "folder:~", " ", "a/b", "C:\\x"])


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run_id=TEXT)
def test_run_ids_never_leave_the_runs_root(tmp_path, run_id):
    root = (tmp_path / "runs").resolve()
    try:
        run = resolve_run(root, run_id)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert Path(run.path).resolve().is_relative_to(root) and run.path != root
