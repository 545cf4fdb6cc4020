"""What a run records of its steps (storage/rundir.py ``step_record``, ``RunDir.step``), on
a copy of the digits run: a misspelt step or field fails loudly instead of reading as
"not run yet", every step and field a pipeline writes is declared, and an older record's
extra field is kept but not read."""

from __future__ import annotations

import pytest

from worker.pipeline.storage.rundir import STEP_NAMES


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


def test_a_misspelt_field_is_refused_by_reading_and_by_writing(fresh_run):
    record = fresh_run.step("extract")
    assert record.get("cache_key") and "feature_dim" in record
    with pytest.raises(ValueError, match="step 'extract' records no field 'cache_kye'"):
        record.get("cache_kye")
    with pytest.raises(ValueError, match="no field 'eps'"):
        "eps" in fresh_run.step("embed")  # noqa: B015 - the test is that it raises
    with pytest.raises(ValueError, match="step 'cluster' records no field 'parms'"):
        fresh_run.mark_step("cluster", parms={})
    assert "parms" not in fresh_run.read_meta()["steps"]["cluster"]


def test_every_field_a_pipeline_writes_is_declared(fresh_run):
    """The declarations hold what the steps write: a full pipeline's records read back
    field by field, and the embed step's options are its declared fields."""
    from dataclasses import fields

    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.storage.rundir import STEP_FIELDS

    for step, record in fresh_run.read_meta()["steps"].items():
        assert set(record) - {"status", "at"} <= STEP_FIELDS[step], step
    assert {f.name for f in fields(EmbeddingOptions)} | {"features_key"} == STEP_FIELDS["embed"]


def test_an_older_records_extra_field_is_kept_but_not_read(fresh_run):
    with fresh_run.update_meta() as meta:
        meta["steps"]["ingest"]["retired_field"] = 1
    record = fresh_run.step("ingest")
    assert dict(record)["retired_field"] == 1
    with pytest.raises(ValueError, match="records no field 'retired_field'"):
        record.get("retired_field")
