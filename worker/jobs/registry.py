"""The job kinds, named once: each kind's queue, handler and parameter type. The Celery
routes (worker.jobs.celery_app) and tasks (worker.jobs.tasks), the dispatchers and the
execution of a job are made from :data:`KINDS`.

``gpu`` kinds need the accelerator (or the extraction workers); ``cpu`` kinds do not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from worker.jobs import handlers
from worker.jobs.job_params import (
    ExperimentParams,
    ExportParams,
    ExtractParams,
    IngestParams,
    PipelineParams,
    ShardParams,
    TestSplitParams,
    embedding_opts,
    train_config,
)
from worker.pipeline.errors import InputError
from worker.pipeline.progress import ProgressFn
from worker.pipeline.storage.rundir import RunDir


@dataclass(frozen=True)
class Kind:
    """One job kind.

    Attributes
    ----------
    name : the kind's name; its Celery task is ``curator.<name>``
    queue : "gpu" or "cpu"
    handler : runs the job on its typed parameters, returns its JSON result
    decode : the typed parameters from the job record's JSON
    encode : the JSON of the typed parameters
    """

    name: str
    queue: str
    handler: Callable[[RunDir, Any, ProgressFn], dict]
    decode: Callable[[dict], Any]
    encode: Callable[[Any], dict] = lambda p: p.model_dump(mode="json")

    @property
    def task(self) -> str:
        return f"curator.{self.name}"


def _kinds(*kinds: Kind) -> dict[str, Kind]:
    return {k.name: k for k in kinds}


KINDS: dict[str, Kind] = _kinds(
    Kind("ingest", "gpu", handlers.ingest, IngestParams.model_validate),
    Kind("extract", "gpu", handlers.extract, ExtractParams.model_validate),
    Kind("extract-shard", "gpu", handlers.extract_shard, ShardParams.model_validate),
    Kind("extract-test", "gpu", handlers.extract_test, TestSplitParams.model_validate),
    Kind("finetune", "gpu", handlers.finetune, ExtractParams.model_validate),
    Kind("train", "gpu", handlers.train, train_config, asdict),
    Kind("experiment", "gpu", handlers.experiment, ExperimentParams.model_validate),
    Kind("pipeline", "gpu", handlers.pipeline, PipelineParams.model_validate),
    Kind("embed", "cpu", handlers.embed, embedding_opts, asdict),
    Kind("export", "cpu", handlers.export, ExportParams.model_validate),
)

QUEUES = ("gpu", "cpu")


def kind(name: str) -> Kind:
    """The kind named ``name``; an unknown one is a one-line error."""
    try:
        return KINDS[name]
    except KeyError:
        raise InputError(f"unknown job kind {name!r}") from None


def routes() -> dict[str, dict[str, str]]:
    """Celery's ``task_routes``: each kind's task to its queue."""
    return {k.task: {"queue": k.queue} for k in KINDS.values()}
