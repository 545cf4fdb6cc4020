"""The Celery app, built from settings: Redis broker, JSON only, queues ``gpu`` and ``cpu``.

Start workers with ``curator worker`` (or ``celery -A worker.jobs.celery_app worker``).
"""

from __future__ import annotations

from celery import Celery
from kombu import Queue

from worker.jobs.registry import QUEUES, routes
from worker.settings import Settings, load_settings


def make_celery(settings: Settings) -> Celery:
    """A Celery app for ``settings``; tasks come from :mod:`worker.jobs.tasks`."""
    app = Celery("curator", broker=settings.broker_url or "memory://",
                 backend=settings.result_backend or None, include=["worker.jobs.tasks"])
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_queues=tuple(Queue(q) for q in QUEUES),
        task_default_queue="cpu",
        task_routes=routes(),
        # A job is acknowledged only when it ends, and a worker that dies mid-job hands it
        # back; one message at a time, so a long job never holds others hostage.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=not settings.result_backend,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout},
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    app.conf.curator_settings = settings
    return app


app = make_celery(load_settings())
