"""Following a job from a client (the CLI, the app): polling its record, finding it, and
what to tell the user while it waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from worker.jobs.dispatchers import CeleryDispatcher
from worker.jobs.execution import stale_cutoff
from worker.jobs.registry import KINDS
from worker.pipeline.errors import InputError
from worker.pipeline.progress import ProgressFn
from worker.pipeline.storage.job_store import FINAL, JobStore
from worker.pipeline.storage.rundir import RunDir
from worker.run_catalog import list_runs
from worker.settings import Settings


def wait_for(run: RunDir, job_id: str, on_progress: ProgressFn | None = None,
             poll_s: float = 0.3,
             on_wait: Callable[[dict[str, Any], float], None] | None = None) -> dict[str, Any]:
    """Poll a job record until it ends; returns the final record. ``on_wait(job, waited
    seconds)`` is called about every 2 s while it has not ended."""
    jobs = JobStore(run.store)
    last = None
    start = checked = time.monotonic()
    while True:
        job = jobs.get(job_id)
        if on_wait is not None and job is not None and job["status"] not in FINAL \
                and time.monotonic() - checked >= 2:
            checked = time.monotonic()
            on_wait(job, checked - start)
        if job is None:
            raise InputError(f"job {job_id} not found in {run.path}")
        state = (job["done"], job["total"], job["message"])
        if on_progress and job["total"] and state != last:
            on_progress(*state)
            last = state
        if job["status"] in FINAL:
            return job
        time.sleep(poll_s)


def find_job(runs_root: Path, job_id: str) -> tuple[str, dict[str, Any]]:
    """Search every readable run under the runs root for ``job_id``; returns (run id,
    record)."""
    for entry in list_runs(runs_root):
        if entry.error is None and entry.store.is_file():
            job = JobStore(entry.store).get(job_id)
            if job is not None:
                return entry.id, job
    raise InputError(f"no job {job_id} under {Path(runs_root).resolve()}")


def waiting_notice(settings: Settings, job: dict[str, Any], waited_s: float) -> str | None:
    """What a client waiting on ``job`` should be told, if anything: no worker consumes
    its queue, or the worker running it stopped answering."""
    if settings.broker_url and job["status"] == "queued" and waited_s >= 3:
        queue = KINDS[job["kind"]].queue if job["kind"] in KINDS else "gpu"
        if not CeleryDispatcher(settings).consumers(queue):
            return (f"no worker is consuming the '{queue}' queue yet: start one with "
                    f"'curator worker --queues {queue}' (still waiting)")
    beat = job["heartbeat_at"] or job["started_at"]
    if job["status"] == "running" and beat and beat < stale_cutoff(settings):
        return (f"the worker running this job ({job['worker']}) stopped answering; "
                + ("a live worker will re-queue it" if settings.broker_url
                   else "the job is lost: run the command again"))
    if job["status"] == "queued" and (job["message"] or "").startswith("re-queued"):
        return (f"the worker running this job ({job['worker']}) stopped answering; the job "
                "was re-queued and will start again on a live worker")
    return None
