"""Jobs whose worker died: re-queued when there is a broker, marked failed when there is
none (their process was the worker)."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

from worker.jobs.dispatchers import CeleryDispatcher
from worker.jobs.execution import stale_cutoff
from worker.jobs.registry import KINDS
from worker.pipeline.storage.job_store import JobStore
from worker.pipeline.storage.rundir import RunDir
from worker.run_catalog import list_runs
from worker.settings import Settings


def recover_stale_jobs(settings: Settings) -> list[str]:
    """Re-queue jobs left ``running`` by a worker that died (no heartbeat for
    ``stale_after_s``); returns one line per recovered job.

    Every worker runs this when it starts and then every few seconds
    (:func:`watch_stale_jobs`), so a job whose worker died is re-queued within about
    ``stale_after_s`` plus one check whenever any worker is alive, even one started the
    moment after the crash. Of several workers that notice it, one re-queues it
    (:meth:`JobStore.requeue`). A pool process killed mid-job is handed back by Celery at
    once (``task_reject_on_worker_lost``); this covers a whole worker killed, whose
    message Redis would only re-deliver after the visibility timeout.
    """
    dispatcher = CeleryDispatcher(settings)
    cutoff = stale_cutoff(settings)
    lines = []
    for entry in list_runs(settings.runs_root):
        if entry.error is not None or not entry.store.is_file():
            continue
        jobs = JobStore(entry.store)
        for job in jobs.list():
            beat = job["heartbeat_at"] or job["started_at"]
            if job["status"] != "running" or not beat or beat >= cutoff:
                continue
            if not jobs.requeue(job["id"], job["heartbeat_at"]):
                continue  # another worker got there first, or it came back to life
            kind = KINDS[job["kind"]]
            dispatcher.app.send_task(kind.task, args=[entry.id, job["params"], job["id"]],
                                     queue=kind.queue)
            lines.append(f"re-queued job {job['id']} ({job['kind']} of {entry.id}): its worker "
                         f"{job['worker']} stopped answering")
    return lines


def _stale_loop(settings: Settings, parent: int) -> None:
    """:func:`recover_stale_jobs` every half stale window while ``parent`` lives."""
    while os.getppid() == parent:
        time.sleep(max(1.0, min(5.0, settings.stale_after_s / 2)))
        try:
            lines = recover_stale_jobs(settings)
        except Exception as exc:  # noqa: BLE001 - a broker or disk hiccup; try again
            lines = [f"stale-job check failed, will retry: {str(exc).splitlines()[0][:200]}"]
        for line in lines:
            print(line, file=sys.stderr, flush=True)


def watch_stale_jobs(settings: Settings) -> multiprocessing.process.BaseProcess:
    """Run :func:`recover_stale_jobs` every half stale window, in a process of its own.

    Not a thread of the worker's main process: a thread there could hold SQLite's lock at
    the moment Celery forks a pool process to replace a killed one, and that process
    would hang on its first connect (seen with extraction shards)."""
    proc = multiprocessing.get_context("spawn").Process(
        target=_stale_loop, args=(settings, os.getpid()), name="curator-stale-jobs",
        daemon=True)
    proc.start()
    return proc


def fail_dead_jobs(settings: Settings, run: RunDir | None = None) -> list[str]:
    """Without a broker, a running job with a stale heartbeat belonged to a process that
    died (jobs run on that process's threads): mark it failed, in ``run`` or in every run
    under the runs root. Returns their ids."""
    if settings.broker_url:
        return []
    cutoff = stale_cutoff(settings)
    stores = [run.store] if run is not None else [
        e.store for e in list_runs(settings.runs_root) if e.error is None]
    return [job for store in stores if store.is_file()
            for job in JobStore(store).fail_stale(cutoff)]
