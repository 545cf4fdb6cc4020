"""What the broker carries for each job kind: the message a real Redis holds for a submitted
job (no worker consumes it here) has the job's record JSON as its parameters, the same as
the job store's (tests/unit/jobs/test_job_params.py holds that format)."""

from __future__ import annotations

import base64
import json

import pytest

from tests.unit.jobs.test_job_params import IDS, RECORDS
from worker.jobs.dispatchers import CeleryDispatcher
from worker.jobs.registry import QUEUES
from worker.pipeline.storage.job_store import JobStore
from worker.settings import Settings


def _take_messages(url: str) -> dict[str, list]:
    """Every task message queued on the gpu and cpu queues, removed from Redis: task id →
    its positional arguments (Celery's message protocol 2: the body is [args, kwargs,
    embed], base64 in kombu's envelope)."""
    import redis

    client = redis.Redis.from_url(url)
    found = {}
    for queue in QUEUES:
        for raw in client.lrange(queue, 0, -1):
            envelope = json.loads(raw)
            body = json.loads(base64.b64decode(envelope["body"]))
            found[envelope["headers"]["id"]] = body[0]
        client.delete(queue)
    return found


@pytest.mark.parametrize("kind, params, expected", RECORDS, ids=IDS)
def test_the_broker_carries_the_recorded_json(redis_url, runs_root, kind, params, expected):
    (runs_root / "run").mkdir()
    dispatcher = CeleryDispatcher(Settings(runs_root=runs_root, broker_url=redis_url))
    job_id = dispatcher.submit("run", kind, params)
    assert _take_messages(redis_url)[job_id] == ["run", expected, job_id]
    assert JobStore(runs_root / "run" / "curation.sqlite").get(job_id)["params"] == expected
