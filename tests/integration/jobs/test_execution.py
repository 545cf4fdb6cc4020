"""A job re-queued as lost belongs to its new attempt (worker/jobs/execution.py
``run_job``'s fence), on a copy of the digits run: the worker that only seemed dead (a
long pause, a partitioned host) stops and leaves the new attempt alone, and an
undisturbed job succeeds with its result."""

from __future__ import annotations

from worker.jobs.execution import record_failure, run_job
from worker.pipeline.storage.job_store import JobStore


def test_a_lost_worker_stops_and_leaves_the_new_attempt_alone(fresh_run):
    """run_job on a real export: mid-run the job is re-queued and started elsewhere; the
    first worker's next progress write tells it to stop, and it records nothing."""
    jobs = JobStore(fresh_run.store)
    job_id = jobs.create("export", {"name": "lost", "format": "imagefolder"})
    taken = []

    def elsewhere(done: int, total: int, message: str) -> bool:
        if not taken:  # another worker's recovery re-queues it, a third starts it
            assert jobs.requeue(job_id, jobs.get(job_id)["heartbeat_at"])
            taken.append(jobs.start(job_id, "host-b:2"))
        return False

    result = run_job(fresh_run.path.parent, fresh_run.path.name, "export",
                     {"name": "lost", "format": "imagefolder"}, job_id, echo=elsewhere)
    assert result is None and taken == [2]
    job = jobs.get(job_id)
    assert (job["status"], job["worker"], job["attempts"], job["finished_at"]) == (
        "running", "host-b:2", 2, None)

    # A failure of the lost attempt is recorded on that attempt only.
    exc = RuntimeError("disk went away")
    exc.job_attempt = 1
    record_failure(fresh_run.path.parent, fresh_run.path.name, job_id, exc)
    assert jobs.get(job_id)["status"] == "running"
    exc.job_attempt = 2
    record_failure(fresh_run.path.parent, fresh_run.path.name, job_id, exc)
    job = jobs.get(job_id)
    assert (job["status"], job["error"]) == ("failed", "RuntimeError: disk went away")


def test_an_undisturbed_job_succeeds_with_its_result(fresh_run):
    jobs = JobStore(fresh_run.store)
    job_id = jobs.create("export", {"name": "fine", "format": "csv"})
    result = run_job(fresh_run.path.parent, fresh_run.path.name, "export",
                     {"name": "fine", "format": "csv"}, job_id)
    job = jobs.get(job_id)
    assert result is not None and (job["status"], job["attempts"]) == ("succeeded", 1)
    assert job["result"] == result
