"""Export names (worker/pipeline/export.py ``check_export_name``): any text either names a
folder inside the run's exports or is one InputError (Hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.pipeline.errors import InputError
from worker.pipeline.export import check_export_name
from worker.pipeline.storage.rundir import RunDir

TEXT = st.text(max_size=40) | st.sampled_from(
    ["..", "../x", "/etc", "a/../../b", ".hidden", "x\x00y", "folder:", "folder:/",
     "cifar10:..", "digits:", "digits", "folder:~", " ", "a/b", "C:\\x"])


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=TEXT)
def test_export_names_never_leave_the_exports_folder(tmp_path, name):
    run = RunDir(tmp_path / "run")
    try:
        dest = check_export_name(run, name)
    except InputError as exc:
        assert "\n" not in str(exc)
    else:
        assert dest.parent == run.exports.resolve() and not dest.name.startswith(".")
