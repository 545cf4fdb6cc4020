"""Running one job: its record kept current, a heartbeat while it runs, failures recorded.

The same :func:`run_job` body serves a Celery worker, the embedded in-process worker and a
command that runs a job in its own process (:func:`run_here`), so a job behaves identically
with or without Redis. Job records live in the run's SQLite store
(:class:`~worker.pipeline.jobstore.JobStore`); Redis carries only the queue.
"""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from worker.pipeline.errors import InputError
from worker.pipeline.jobstore import FINAL, JobStore
from worker.pipeline.progress import Cancelled, ProgressFn
from worker.pipeline.rundir import RunDir
from worker.runs import resolve_run
from worker.settings import Settings

from .registry import kind as kind_named

HEARTBEAT_S = 10.0


def heartbeat_interval(settings: Settings) -> float:
    """Seconds between heartbeats: at least three fit in the stale window, so a live job is
    never taken for a dead one."""
    return min(HEARTBEAT_S, settings.stale_after_s / 3)


def stale_cutoff(settings: Settings) -> str:
    """ISO time before which a running job's last heartbeat means its worker is gone."""
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC) - timedelta(seconds=settings.stale_after_s)).isoformat(
        timespec="seconds")


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def is_transient(exc: BaseException) -> bool:
    """I/O errors worth retrying: a locked database, a busy or stale shared filesystem."""
    if isinstance(exc, sqlite3.OperationalError):
        return "locked" in str(exc) or "busy" in str(exc)
    if isinstance(exc, TimeoutError | BlockingIOError | InterruptedError):
        return True
    return isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.EBUSY, errno.ESTALE,
                                                      errno.EIO)


class _Progress:
    """Progress callback writing to the job record (at most every 0.5 s) and a heartbeat
    thread, so a job whose worker died can be told apart from a slow one."""

    def __init__(self, jobs: JobStore, job_id: str, beat_s: float,
                 echo: ProgressFn | None = None) -> None:
        self.jobs, self.job_id, self.beat_s, self.echo = jobs, job_id, beat_s, echo
        self.last = 0.0
        self.cancel = False
        self.state = (0, 0, "starting")
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def __call__(self, done: int, total: int, message: str) -> bool:
        self.state = (done, total, message)
        if self.echo is not None and self.echo(done, total, message):
            self.cancel = True
        now = time.monotonic()
        if now - self.last >= 0.5 or done >= total:
            self.last = now
            self.cancel = self.jobs.progress(self.job_id, done, total, message)
        return self.cancel

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                self.cancel = self.jobs.progress(self.job_id, *self.state) or self.cancel
            except sqlite3.Error:
                continue

    def close(self) -> None:
        self._stop.set()


def run_job(runs_root: Path, run_id: str, kind: str, params: dict[str, Any],
            job_id: str, echo: ProgressFn | None = None) -> dict[str, Any] | None:
    """Run one job from its record's JSON ``params`` and keep the record current; ``echo``
    also sees its progress (the CLI prints it when it runs a job in its own process).

    Returns the job's result (None when it was cancelled, or had already finished before a
    re-delivery). Exceptions propagate so that the caller's failure hook records them.
    """
    spec = kind_named(kind)
    run = resolve_run(runs_root, run_id)
    jobs = JobStore(run.store)
    record = jobs.get(job_id)
    if record is None:
        jobs.create(kind, params, job_id)
    elif record["status"] in FINAL:
        return record["result"]  # a re-delivered message for a job that already ended
    if not jobs.start(job_id, worker_name()):
        return None
    from worker.settings import load_settings

    progress = _Progress(jobs, job_id, heartbeat_interval(load_settings()), echo)
    try:
        result = spec.handler(run, spec.decode(params), progress)
    except Cancelled:
        jobs.finish(job_id, "cancelled")
        return None
    finally:
        progress.close()
    jobs.finish(job_id, "succeeded", result=result)
    return result


def new_job(run: RunDir, kind: str, params: Any) -> tuple[str, dict[str, Any]]:
    """Record a queued job of typed ``params`` in the run's store; returns its id and the
    params' JSON. A clustered run whose store has gone is refused (curation.check_store),
    not given a fresh, empty one."""
    from worker.pipeline.curation import check_store

    encoded = kind_named(kind).encode(params)
    check_store(run)
    return JobStore(run.store).create(kind, encoded), encoded


def run_here(run: RunDir, kind: str, params: Any, echo: ProgressFn) -> dict:
    """Run a job in this process, in the foreground, recorded in the run's job store like
    any other: the Jobs page lists a ``curator retrain``, ``experiment`` or ``export``
    started from a shell, shows its progress, and can cancel it. Ctrl-C cancels it too.

    Raises :class:`Cancelled` when it was cancelled; a failure is recorded, then raised."""
    job_id, encoded = new_job(run, kind, params)
    try:
        result = run_job(run.path.parent, run.path.name, kind, encoded, job_id, echo)
    except KeyboardInterrupt:
        JobStore(run.store).finish(job_id, "cancelled")
        raise
    except BaseException as exc:
        record_failure(run.path.parent, run.path.name, job_id, exc)
        raise
    if result is None:
        raise Cancelled(f"{kind} job {job_id} was cancelled")
    return result


def record_failure(runs_root: Path, run_id: str, job_id: str, exc: BaseException) -> None:
    """The failure hook: store a one-line error on the job."""
    try:
        run = resolve_run(runs_root, run_id)
    except InputError:
        return
    text = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
    JobStore(run.store).finish(job_id, "failed", error=text.splitlines()[0][:1000] if text
                               else type(exc).__name__)
