"""A job re-queued as lost belongs to its new attempt (worker/jobs/execution.py): a write
that carries a superseded attempt changes nothing in the job store."""

from __future__ import annotations

from worker.pipeline.storage.job_store import JobStore


def test_writes_carry_the_attempt_and_a_superseded_one_changes_nothing(tmp_path):
    jobs = JobStore(tmp_path / "curation.sqlite")
    job_id = jobs.create("export", {"name": "x"})
    first = jobs.start(job_id, "host-a:1")
    assert first == 1
    assert jobs.progress(job_id, 1, 10, "writing", attempt=first) is None
    # host-a looks dead: re-queued, then started on host-b.
    assert jobs.requeue(job_id, jobs.get(job_id)["heartbeat_at"])
    assert jobs.progress(job_id, 2, 10, "late", attempt=first) == "superseded"
    second = jobs.start(job_id, "host-b:2")
    assert second == 2
    assert jobs.progress(job_id, 5, 10, "late", attempt=first) == "superseded"
    assert not jobs.finish(job_id, "cancelled", attempt=first)
    assert not jobs.finish(job_id, "failed", error="late", attempt=first)
    job = jobs.get(job_id)
    # The late writes (2 and 5 done) did not land: 1 is the first attempt's last before it
    # was re-queued.
    assert (job["status"], job["worker"], job["done"], job["message"], job["error"]) == (
        "running", "host-b:2", 1, "re-queued: worker lost", None)
    # The running attempt writes as before; a cancel request reaches it.
    assert jobs.progress(job_id, 3, 10, "writing", attempt=second) is None
    jobs.request_cancel(job_id)
    assert jobs.progress(job_id, 4, 10, "writing", attempt=second) == "cancel"
    assert jobs.finish(job_id, "succeeded", result={"ok": 1}, attempt=second)
    assert jobs.get(job_id)["status"] == "succeeded"
    # Without a token (the CLI's own Ctrl-C, a publish failure) writes are not fenced.
    assert jobs.finish(job_id, "failed", error="forced")
