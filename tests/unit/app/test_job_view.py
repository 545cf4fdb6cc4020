"""How the app shows a job (app/job_view.py): the time left from the current phase's own
start, and a finished job read as done rather than as its last step."""

from __future__ import annotations


def test_job_timing_extrapolates_the_current_phase(tmp_path):
    """ETA from the phase's own start: a new total (ingest → extract) restarts the clock."""
    from datetime import datetime, timedelta

    from app.job_view import job_duration, job_timing
    from worker.pipeline.storage.job_store import JobStore

    jobs = JobStore(tmp_path / "curation.sqlite")
    job_id = jobs.create("train", {})
    jobs.start(job_id, "here:1")
    jobs.progress(job_id, 0, 100, "ingest")
    first = jobs.get(job_id)["phase_started_at"]
    jobs.progress(job_id, 50, 100, "ingest")
    assert jobs.get(job_id)["phase_started_at"] == first
    jobs.progress(job_id, 0, 400, "train")  # a new phase
    jobs.progress(job_id, 100, 400, "train")
    job = jobs.get(job_id)
    start = datetime.fromisoformat(job["phase_started_at"])
    text = job_timing(job, now=start + timedelta(seconds=30))
    assert "about 1:30 left" in text and text.startswith("elapsed ")
    job = {**job, "status": "succeeded",
           "finished_at": (datetime.fromisoformat(job["started_at"])
                           + timedelta(seconds=3725)).isoformat()}
    assert job_duration(job) == "1:02:05" and job_timing(job) == "took 1:02:05"
    assert job_timing({**job, "started_at": None}) == ""


def test_a_finished_job_reads_done_not_its_last_step():
    from app.job_view import job_status_text

    job = {"status": "succeeded", "message": "ingest: decoding images", "error": None,
           "total": 10, "done": 10}
    assert job_status_text(job) == "done"
    assert job_status_text({**job, "status": "failed", "error": "x failed"}) == "x failed"
    assert job_status_text({**job, "status": "running"}) == "ingest: decoding images"
