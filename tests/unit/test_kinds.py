"""The job kinds are named once (worker.kinds): every kind has a handler, a Celery task
and a route, and nothing else does."""

from __future__ import annotations

from worker.celery_app import app
from worker.jobs import HANDLERS
from worker.kinds import QUEUES
from worker.tasks import TASKS


def test_every_kind_has_one_handler_task_and_route():
    assert set(HANDLERS) == set(QUEUES) == set(TASKS)
    routes = app.conf.task_routes
    for kind, queue in QUEUES.items():
        assert TASKS[kind].name == f"curator.{kind}" and routes[TASKS[kind].name] == {
            "queue": queue}
    assert set(QUEUES.values()) == {"gpu", "cpu"}
