"""Submitting jobs: to ``curator worker`` processes through the broker, or to threads of
this process when there is none. Both record the job first, from its typed parameters."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from worker.jobs.execution import new_job, record_failure, run_job, stale_cutoff
from worker.jobs.registry import KINDS, QUEUES
from worker.pipeline.errors import InputError
from worker.pipeline.storage.job_store import JobStore
from worker.run_catalog import resolve_run
from worker.settings import Settings


class EmbeddedDispatcher:
    """Runs jobs on threads inside this process: no Redis, no separate worker.

    One thread per queue, so an export never waits behind an hour of extraction.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pools = {q: ThreadPoolExecutor(1, thread_name_prefix=f"curator-{q}")
                      for q in QUEUES}

    def submit(self, run_id: str, kind: str, params: Any) -> str:
        run = resolve_run(self.settings.runs_root, run_id)
        job_id, encoded = new_job(run, kind, params)
        self.pools[KINDS[kind].queue].submit(self._run, run_id, kind, encoded, job_id)
        return job_id

    def _run(self, run_id: str, kind: str, params: dict, job_id: str) -> None:
        try:
            run_job(self.settings.runs_root, run_id, kind, params, job_id)
        except BaseException as exc:  # noqa: BLE001 - recorded on the job, as a worker would
            record_failure(self.settings.runs_root, run_id, job_id, exc)

    def cancel(self, run_id: str, job_id: str) -> str | None:
        return JobStore(resolve_run(self.settings.runs_root, run_id).store).request_cancel(
            job_id, stale_cutoff(self.settings))


class CeleryDispatcher:
    """Sends jobs to ``curator worker`` processes through the broker."""

    def __init__(self, settings: Settings) -> None:
        from worker.jobs.celery_app import make_celery

        self.settings = settings
        self.app = make_celery(settings)

    def check_broker(self) -> None:
        """Fail fast, in one line, when the broker cannot be reached."""
        check_broker(self.settings.broker_url)

    def consumers(self, queue: str) -> list[str]:
        """Names of the live workers that consume ``queue`` (asks them, ~1 s)."""
        try:
            active = self.app.control.inspect(timeout=1.0).active_queues() or {}
        except Exception:  # noqa: BLE001 - an unreachable broker: nobody consumes
            return []
        return [w for w, qs in active.items() if any(q.get("name") == queue for q in qs)]

    def signature(self, run_id: str, kind: str, params: dict[str, Any], job_id: str):  # noqa: ANN201
        """The Celery signature of a recorded job (its task id is the job's id)."""
        return self.app.signature(KINDS[kind].task, args=[run_id, params, job_id],
                                  options={"task_id": job_id, "queue": KINDS[kind].queue})

    def submit(self, run_id: str, kind: str, params: Any) -> str:
        return self.submit_group(run_id, kind, [params])[0]

    def submit_group(self, run_id: str, kind: str, params: list[Any]) -> list[str]:
        """Record one ``kind`` job per ``params`` and send them as one Celery ``group``
        (one job: a plain task); returns their ids (each job's Celery task id too)."""
        from celery import group

        self.check_broker()
        run = resolve_run(self.settings.runs_root, run_id)
        jobs = [new_job(run, kind, p) for p in params]
        sigs = [self.signature(run_id, kind, encoded, job_id) for job_id, encoded in jobs]
        try:
            (sigs[0] if len(sigs) == 1 else group(sigs)).apply_async()
        except Exception as exc:  # noqa: BLE001 - any publish failure means "not queued"
            for job_id, _ in jobs:
                JobStore(run.store).finish(job_id, "failed",
                                           error=f"could not queue the job: {exc}")
            raise InputError(f"cannot reach the broker at {self.settings.broker_url}: "
                             f"{exc}") from None
        return [job_id for job_id, _ in jobs]

    def cancel(self, run_id: str, job_id: str) -> str | None:
        status = JobStore(resolve_run(self.settings.runs_root, run_id).store).request_cancel(
            job_id, stale_cutoff(self.settings))
        if status == "cancelled":
            try:
                self.app.control.revoke(job_id)
            except Exception:  # noqa: BLE001, S110 - the record already says cancelled
                pass
        return status


Dispatcher = EmbeddedDispatcher | CeleryDispatcher


def check_broker(url: str, timeout: float = 2.0) -> None:
    """Raise a one-line :class:`InputError` unless the Redis broker at ``url`` answers."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=timeout,
                             socket_timeout=timeout).ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        raise InputError(f"cannot reach the broker at {url} ({exc}); start Redis or fix "
                         "CURATOR_BROKER_URL") from None


def get_dispatcher(settings: Settings) -> Dispatcher:
    """Celery when ``CURATOR_BROKER_URL`` is set, else the embedded in-process worker."""
    return CeleryDispatcher(settings) if settings.broker_url else EmbeddedDispatcher(settings)
