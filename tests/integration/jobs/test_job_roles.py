"""Every job checks its role on the worker, with real Redis and a real ``curator worker``:
a job queued by a token's person records who queued it, and the worker runs it only if
that person may still do it (a reviewer's export runs; a reviewer's compute job, queued
through the dispatcher past the server's own check, fails in one line; an export whose
person's token was revoked while it waited is not run). A job queued from the command line
(the OS user, no token) is not checked."""

from __future__ import annotations

import shutil
import time

import pytest

from worker.jobs.dispatchers import CeleryDispatcher
from worker.jobs.job_params import ExportParams, TestSplitParams
from worker.people import add_token, revoke_token
from worker.pipeline.storage.author import os_user, set_author
from worker.pipeline.storage.job_store import FINAL, JobStore
from worker.settings import Settings

pytestmark = pytest.mark.slow


def _final(store, job_id: str, timeout: float = 120) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        job = JobStore(store).get(job_id)
        if job["status"] in FINAL:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not end: {JobStore(store).get(job_id)}")


def test_the_worker_checks_the_role_of_whoever_queued_the_job(start_worker, redis_url,
                                                               runs_root, digits_run):
    shutil.copytree(digits_run.path, runs_root / "d")
    add_token(runs_root, "rui", "reviewer")
    add_token(runs_root, "ed", "reviewer")
    jobs = CeleryDispatcher(Settings(runs_root=runs_root, broker_url=redis_url))
    try:
        set_author("rui", by_token=True)
        export = jobs.submit("d", "export", ExportParams("by-rui", "indices"))
        compute = jobs.submit("d", "extract-test", TestSplitParams())
        set_author("ed", by_token=True)
        revoked = jobs.submit("d", "export", ExportParams("by-ed", "indices"))
        set_author(None)
        own = jobs.submit("d", "export", ExportParams("by-shell", "indices"))
    finally:
        set_author(None)
    revoke_token(runs_root, "ed")  # while ed's export waits for a worker
    start_worker("w1")
    store = runs_root / "d" / "curation.sqlite"
    done = {name: _final(store, job_id) for name, job_id in
            (("export", export), ("compute", compute), ("revoked", revoked), ("own", own))}
    assert done["export"]["status"] == "succeeded"
    assert (done["export"]["submitted_by"], done["export"]["by_token"]) == ("rui", 1)
    assert (runs_root / "d" / "exports" / "by-rui" / "kept_indices.txt").is_file()
    assert done["compute"]["status"] == "failed"
    assert done["compute"]["error"] == ("rui is a reviewer here and cannot retrain: ask an "
                                        "admin for a token with the admin role")
    assert done["revoked"]["status"] == "failed"
    assert done["revoked"]["error"] == ("ed's token was revoked after this export job was "
                                        "queued: it was not run")
    assert not (runs_root / "d" / "exports" / "by-ed").exists()
    assert done["own"]["status"] == "succeeded"
    assert (done["own"]["submitted_by"], done["own"]["by_token"]) == (os_user(), 0)
