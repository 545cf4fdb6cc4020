"""Running one job: its record kept current, a heartbeat while it runs, failures recorded.

The same :func:`run_job` body serves a Celery worker, the embedded in-process worker and a
command that runs a job in its own process (:func:`run_here`), so a job behaves identically
with or without Redis. Job records live in the run's SQLite store
(:class:`~worker.pipeline.storage.job_store.JobStore`); Redis carries only the queue.
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

from worker.jobs.registry import kind as kind_named
from worker.people import check_submitter
from worker.pipeline.errors import InputError
from worker.pipeline.progress import Cancelled, ProgressFn
from worker.pipeline.storage.curation_store import check_store
from worker.pipeline.storage.job_store import FINAL, JobStore
from worker.pipeline.storage.rundir import RunDir
from worker.run_catalog import resolve_run
from worker.settings import Settings, load_settings

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
    thread, so a job whose worker died can be told apart from a slow one.

    Every write carries the attempt (``JobStore.start``'s token): once the job has been
    re-queued as lost, this worker is told to stop (``superseded``) and writes nothing
    more, so a worker that only seemed dead cannot overwrite the attempt that replaced it.
    """

    def __init__(self, jobs: JobStore, job_id: str, attempt: int, beat_s: float,
                 echo: ProgressFn | None = None) -> None:
        self.jobs, self.job_id, self.attempt, self.beat_s = jobs, job_id, attempt, beat_s
        self.echo = echo
        self.last = 0.0
        self.cancel = self.superseded = False
        self.state = (0, 0, "starting")
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def _write(self) -> None:
        answer = self.jobs.progress(self.job_id, *self.state, attempt=self.attempt)
        self.superseded = self.superseded or answer == "superseded"
        self.cancel = self.cancel or answer is not None

    def __call__(self, done: int, total: int, message: str) -> bool:
        self.state = (done, total, message)
        if self.echo is not None and self.echo(done, total, message):
            self.cancel = True
        now = time.monotonic()
        if not self.superseded and (now - self.last >= 0.5 or done >= total):
            self.last = now
            self._write()
        return self.cancel

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.beat_s) and not self.superseded:
            try:
                self._write()
            except sqlite3.Error:
                continue

    def close(self) -> None:
        self._stop.set()


def run_job(runs_root: Path, run_id: str, kind: str, params: dict[str, Any],
            job_id: str, echo: ProgressFn | None = None) -> dict[str, Any] | None:
    """Run one job from its record's JSON ``params`` and keep the record current; ``echo``
    also sees its progress (the CLI prints it when it runs a job in its own process).

    Returns the job's result (None when it was cancelled, had already finished before a
    re-delivery, or was re-queued as lost while it ran: the attempt that replaced it
    answers). Exceptions propagate, carrying this attempt as ``job_attempt``, so that the
    caller's failure hook records them on this attempt only.
    """
    spec = kind_named(kind)
    run = resolve_run(runs_root, run_id)
    jobs = JobStore(run.store)
    record = jobs.get(job_id)
    if record is None:
        jobs.create(kind, params, job_id)
    elif record["status"] in FINAL:
        return record["result"]  # a re-delivered message for a job that already ended
    elif record.get("by_token"):  # queued by a token's person: may they run it now?
        check_submitter(runs_root, record["submitted_by"], kind)
    attempt = jobs.start(job_id, worker_name())
    if attempt is None:
        return None

    progress = _Progress(jobs, job_id, attempt, heartbeat_interval(load_settings()), echo)
    try:
        result = spec.handler(run, spec.decode(params), progress)
    except Cancelled:
        jobs.finish(job_id, "cancelled", attempt=attempt)  # a no-op once superseded
        return None
    except BaseException as exc:
        exc.job_attempt = attempt  # type: ignore[attr-defined]
        raise
    finally:
        progress.close()
    return result if jobs.finish(job_id, "succeeded", result=result, attempt=attempt) else None


def new_job(run: RunDir, kind: str, params: Any) -> tuple[str, dict[str, Any]]:
    """Record a queued job of typed ``params`` in the run's store; returns its id and the
    params' JSON. A clustered run whose store has gone is refused (curation.check_store),
    not given a fresh, empty one."""
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
    except KeyboardInterrupt as exc:
        JobStore(run.store).finish(job_id, "cancelled", attempt=getattr(exc, "job_attempt", None))
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
    # Only on the attempt that failed (run_job's ``job_attempt``): one that was re-queued
    # as lost meanwhile leaves the attempt that replaced it alone.
    JobStore(run.store).finish(job_id, "failed", error=text.splitlines()[0][:1000] if text
                               else type(exc).__name__,
                               attempt=getattr(exc, "job_attempt", None))
