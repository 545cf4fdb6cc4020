"""What a run records of its steps (storage/rundir.py ``step_record``, ``RunDir.step``):
a misspelt step fails loudly instead of reading as "not run yet", and a record that is not
what a run writes reads as empty."""

from __future__ import annotations

import pytest

from worker.pipeline.storage.rundir import STEP_NAMES, step_record


def test_a_misspelt_step_is_refused_by_reading_and_by_writing(fresh_run):
    with pytest.raises(ValueError, match="no step 'extracts'"):
        fresh_run.step("extracts")
    with pytest.raises(ValueError, match="no step 'clsuter'"):
        fresh_run.mark_step("clsuter", rule="x")
    assert "clsuter" not in fresh_run.read_meta()["steps"]


def test_every_step_a_pipeline_runs_is_a_step_name(fresh_run):
    recorded = set(fresh_run.read_meta()["steps"])
    assert recorded <= set(STEP_NAMES) and {"ingest", "extract", "embed", "cluster"} <= recorded
    assert fresh_run.step("extract")["status"] == "done"
    assert fresh_run.step_done("cluster")


@pytest.mark.parametrize("meta", [None, [], {}, {"steps": []}, {"steps": {"embed": 3}}])
def test_a_record_not_as_a_run_writes_it_reads_as_not_run(meta):
    assert step_record(meta, "embed") == {}
