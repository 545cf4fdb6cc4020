"""Thin Celery tasks, one per job kind (worker.jobs.registry), each calling
:func:`worker.jobs.execution.run_job`.

Every task takes ``(run_id, params, job_id)``. Failures reach :meth:`JobTask.on_failure`,
which records them on the job; only transient I/O errors are retried.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from worker.jobs.celery_app import app
from worker.jobs.execution import is_transient, record_failure, run_job
from worker.jobs.registry import KINDS


class JobTask(Task):
    """Base task: keeps the job record in the run's store in step with Celery."""

    max_retries = 3

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:  # noqa: ANN001
        run_id, _, job_id = args
        record_failure(app.conf.curator_settings.runs_root, run_id, job_id, exc)

    def run_kind(self, kind: str, run_id: str, params: dict[str, Any],
                 job_id: str) -> dict[str, Any] | None:
        try:
            return run_job(app.conf.curator_settings.runs_root, run_id, kind, params, job_id)
        except Exception as exc:
            if is_transient(exc) and self.request.retries < self.max_retries:
                raise self.retry(exc=exc, countdown=5 * (self.request.retries + 1)) from exc
            raise


def _register(kind: str) -> JobTask:
    """One task per job kind, named ``curator.<kind>``; routing comes from celery_app."""

    def run(self: JobTask, run_id: str, params: dict[str, Any], job_id: str) -> Any:
        return self.run_kind(kind, run_id, params, job_id)

    run.__name__ = run.__qualname__ = kind.replace("-", "_")
    return app.task(name=f"curator.{kind}", bind=True, base=JobTask)(run)


TASKS = {kind: _register(kind) for kind in KINDS}
