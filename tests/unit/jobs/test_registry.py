"""The job kinds are named once (worker.jobs.registry): the Celery tasks and routes are
made from it, and every kind's parameters survive their JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.jobs.celery_app import app
from worker.jobs.job_params import (
    ExperimentParams,
    ExportParams,
    ExtractParams,
    IngestParams,
    PipelineParams,
    ShardParams,
)
from worker.jobs.job_params import TestSplitParams as SplitParams  # not a test class to pytest
from worker.jobs.registry import KINDS, QUEUES, kind
from worker.jobs.tasks import TASKS
from worker.pipeline.errors import InputError
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.train.config import TrainConfig


def test_tasks_and_routes_are_made_from_the_registry():
    assert set(TASKS) == set(KINDS)
    routes = app.conf.task_routes
    for name, k in KINDS.items():
        assert TASKS[name].name == k.task == f"curator.{name}"
        assert routes[k.task] == {"queue": k.queue} and k.queue in QUEUES
    assert {q.name for q in app.conf.task_queues} == set(QUEUES) == {"gpu", "cpu"}
    with pytest.raises(InputError, match="unknown job kind 'nope'"):
        kind("nope")


DATASET = DatasetOptions(parse_spec("digits"), inject_noise=0.1, seed=3)


FEATURES = FeatureOptions(model="pixels", batch_size=128, weights=Path("/w/r18.pth"))


EXAMPLES = {
    "ingest": IngestParams(DATASET),
    "extract": ExtractParams(DATASET, FEATURES),
    "finetune": ExtractParams(None, FeatureOptions(finetune_epochs=2)),
    "extract-shard": ShardParams("abc123", 256, 512, FEATURES),
    "extract-test": SplitParams(),
    "embed": EmbeddingOptions(perplexity=20),
    "export": ExportParams("mine", "indices"),
    "train": TrainConfig(subset="random", epochs=3, batch_size=64, extra={"sync_every": 1}),
    "experiment": ExperimentParams("cmp", (TrainConfig(seed=1), TrainConfig(seed=2))),
    "pipeline": PipelineParams(DATASET, FEATURES, EmbeddingOptions(perplexity=12)),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kinds_parameters_come_back_from_their_json(name):
    import json

    k = KINDS[name]
    encoded = json.loads(json.dumps(k.encode(EXAMPLES[name])))  # what the broker carries
    assert k.decode(encoded) == EXAMPLES[name]


def test_unknown_training_settings_are_refused():
    with pytest.raises(InputError, match="unknown training settings: speed"):
        KINDS["train"].decode({"epochs": 2, "speed": 11})
