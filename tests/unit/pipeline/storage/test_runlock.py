"""The run's lock (worker/pipeline/storage/runlock.py): a held lock refuses a second writer
and is freed on exit. The locks between real processes are tested in
tests/integration/pipeline/storage/test_runlock.py."""

from __future__ import annotations

import pytest

from worker.pipeline.errors import InputError
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.runlock import run_lock


def test_a_held_lock_refuses_a_second_writer_and_frees_on_exit(tmp_path):
    run = RunDir(tmp_path / "r")
    with run_lock(run, "test one"):
        with pytest.raises(InputError, match="busy: test one"):
            with run_lock(run, "test two"):
                pass
    with run_lock(run, "test three"):  # released: taken again
        pass
