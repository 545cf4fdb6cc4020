"""Each job kind's record is a format: the job store keeps it, the broker carries it, and a
worker of another version may read it. The JSON below is that format as the tool writes it
(printed from the records of 2026-11-28); every kind's parameters must still be recorded as
exactly this and read back into the same typed parameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.jobs.execution import new_job
from worker.jobs.job_params import (
    ExperimentParams,
    ExportParams,
    ExtractParams,
    IngestParams,
    PipelineParams,
    ShardParams,
)
from worker.jobs.job_params import TestSplitParams as SplitParams  # not a test class to pytest
from worker.jobs.registry import KINDS
from worker.pipeline.errors import InputError
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.job_store import JobStore
from worker.pipeline.storage.rundir import RunDir
from worker.train.config import TrainConfig

DATASET = DatasetOptions(parse_spec("digits"), labels_csv=Path("/data/labels.csv"),
                         inject_noise=0.1, seed=3, inject_duplicates=0.05, inject_outliers=5)


FEATURES = FeatureOptions(model="pixels", batch_size=128, weights=Path("/w/r18.pth"),
                          num_workers=2, input_size=64)


DATASET_JSON = {
    "spec": "digits", "split": "train", "labels_csv": "/data/labels.csv",
    "label_column": "label", "true_label_column": None, "inject_noise": 0.1,
    "noise_kind": "symmetric", "seed": 3, "inject_duplicates": 0.05, "inject_outliers": 5,
    "duplicate_strength": "mixed", "outlier_sources": "mixed", "inject_leaks": 0,
    "duplicate_family": 1, "duplicate_across": 0.0}


FEATURES_JSON = {
    "model": "pixels", "weights": "/w/r18.pth", "finetune_epochs": 0, "batch_size": 128,
    "device": "auto", "num_workers": 2, "seed": 0, "precision": "auto", "input_size": 64,
    "decode": "auto"}


DEFAULT_FEATURES_JSON = {
    "model": None, "weights": None, "finetune_epochs": 2, "batch_size": 256, "device": "auto",
    "num_workers": None, "seed": 0, "precision": "auto", "input_size": None,
    "decode": "auto"}


def _train_json(**over: object) -> dict:
    return {"subset": "filtered", "model": "resnet18", "epochs": None, "batch_size": None,
            "nproc": 1, "lr": None, "weight_decay": 0.0005, "label_smoothing": 0.0,
            "optimizer": "auto", "warmup_epochs": 1, "compile": "off", "seed": 0,
            "device": "auto", "name": None, "nnodes": 1, "node_rank": None,
            "rdzv_endpoint": None, "rdzv_id": None, "extra": {}, **over}


# (kind, typed parameters, the record's JSON)
RECORDS = [
    ("ingest", IngestParams(DATASET), {"dataset": DATASET_JSON}),
    ("ingest", IngestParams(), {"dataset": None}),
    ("extract", ExtractParams(DATASET, FEATURES),
     {"dataset": DATASET_JSON, "features": FEATURES_JSON}),
    ("finetune", ExtractParams(None, FeatureOptions(finetune_epochs=2)),
     {"dataset": None, "features": DEFAULT_FEATURES_JSON}),
    ("extract-shard", ShardParams("abc123", 256, 512, FEATURES),
     {"key": "abc123", "start": 256, "stop": 512, "features": FEATURES_JSON}),
    ("extract-test", SplitParams(), {}),
    ("embed", EmbeddingOptions(perplexity=20, seed=4),
     {"pca_dims": 50, "perplexity": 20.0, "n_iter": 300, "seed": 4, "gradient": "auto",
      "exaggeration_iter": 150}),
    ("export", ExportParams("mine", "indices"),
     {"format": "indices", "name": "mine", "version": None}),
    ("export", ExportParams("plain", version="v2"),
     {"format": "csv", "name": "plain", "version": "v2"}),
    ("train", TrainConfig(subset="pruned@0.5", epochs=3, batch_size=64, lr=0.1,
                          extra={"sync_every": 1}),
     _train_json(subset="pruned@0.5", epochs=3, batch_size=64, lr=0.1,
                 extra={"sync_every": 1})),
    ("experiment", ExperimentParams("cmp", (TrainConfig(seed=1),
                                            TrainConfig(subset="random", seed=2,
                                                        batch_size=128)), "epochs", 2),
     {"name": "cmp", "configs": [_train_json(seed=1),
                                 _train_json(subset="random", seed=2, batch_size=128)],
      "budget": "epochs", "parallel": 2}),
    ("experiment", ExperimentParams("defaults", (TrainConfig(),)),
     {"name": "defaults", "configs": [_train_json()], "budget": "steps", "parallel": 1}),
    ("pipeline", PipelineParams(DATASET, FEATURES, EmbeddingOptions(perplexity=12)),
     {"dataset": DATASET_JSON, "features": FEATURES_JSON,
      "embedding": {"pca_dims": 50, "perplexity": 12.0, "n_iter": 300, "seed": 0,
                    "gradient": "auto", "exaggeration_iter": 150}}),
]


IDS = [f"{kind}-{i}" for i, (kind, _, _) in enumerate(RECORDS)]


def test_every_kind_has_a_record():
    assert {kind for kind, _, _ in RECORDS} == set(KINDS)


@pytest.mark.parametrize("kind, params, expected", RECORDS, ids=IDS)
def test_the_job_store_keeps_the_recorded_json(tmp_path, kind, params, expected):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    job_id, encoded = new_job(run, kind, params)
    assert json.loads(json.dumps(encoded)) == expected  # what the broker is sent
    assert JobStore(run.store).get(job_id)["params"] == expected


@pytest.mark.parametrize("kind, params, expected", RECORDS, ids=IDS)
def test_the_recorded_json_reads_back_into_the_same_parameters(kind, params, expected):
    assert KINDS[kind].decode(json.loads(json.dumps(expected))) == params


def test_records_of_older_versions_still_open():
    """Keys a record lacks take their defaults, keys it has that the options no longer know
    are dropped, and an experiment recorded before the budget existed held the epochs
    equal."""
    old = {"dataset": None, "features": {"batch_size": 64, "gone_option": 1}}
    assert KINDS["extract"].decode(old) == ExtractParams(None, FeatureOptions(batch_size=64))
    assert KINDS["extract"].decode({}) == ExtractParams(None, FeatureOptions())
    assert KINDS["ingest"].decode({}) == IngestParams()
    assert KINDS["export"].decode({"name": "v1"}) == ExportParams("v1", "csv")
    assert KINDS["embed"].decode({"perplexity": 5, "gone": 1}) == EmbeddingOptions(perplexity=5)
    exp = KINDS["experiment"].decode({"name": "x", "configs": [{"seed": 1}]})
    assert exp == ExperimentParams("x", (TrainConfig(seed=1),), "epochs", 1)
    shard = KINDS["extract-shard"].decode({"key": "k", "start": "0", "stop": 10})
    assert (shard.start, shard.stop, shard.features) == (0, 10, FeatureOptions())
    train = KINDS["train"].decode({"subset": " pruned@.50 "})
    assert train == TrainConfig(subset="pruned@0.5")


@pytest.mark.parametrize("kind, record, message", [
    ("extract", {"features": {"batch_size": -1}}, "--batch-size must be"),
    ("pipeline", {"embedding": {"gradient": "x"}}, "--gradient must be auto, fft or bh"),
    ("ingest", {"dataset": {"spec": "digits", "inject_noise": 2}}, "--inject-noise must be"),
    ("train", {"epochs": 2, "speed": 11}, "unknown training settings: speed"),
    ("experiment", {"name": "x", "configs": [{"speed": 1}]}, "unknown training settings"),
    ("export", {"format": "csv"}, "name"),
    ("extract-shard", {"key": "k", "start": "a", "stop": 1}, "start"),
])
def test_a_bad_record_is_one_line(kind, record, message):
    with pytest.raises(InputError, match=message) as err:
        KINDS[kind].decode(record)
    assert len(str(err.value).splitlines()) == 1


def test_relative_paths_are_recorded_absolute(tmp_path, monkeypatch):
    """A worker elsewhere has another working folder: the weights and the labels file are
    recorded as absolute paths."""
    monkeypatch.chdir(tmp_path)
    params = ExtractParams(DatasetOptions(parse_spec("digits"), labels_csv=Path("l.csv")),
                           FeatureOptions(weights=Path("w.pth")))
    record = KINDS["extract"].encode(params)
    assert record["features"]["weights"] == str(tmp_path.resolve() / "w.pth")
    assert record["dataset"]["labels_csv"] == str(tmp_path.resolve() / "l.csv")


def test_parameters_are_made_by_position_or_name_and_are_frozen():
    assert ExportParams("mine", "indices") == ExportParams(name="mine", format="indices")
    assert ShardParams("k", 0, 5, FEATURES) == ShardParams(key="k", start=0, stop=5,
                                                           features=FEATURES)
    assert hash(ExportParams("a")) == hash(ExportParams("a"))
    with pytest.raises(ValueError, match="frozen"):
        ExportParams("a").name = "b"  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes name, format, version once each"):
        ExportParams("a", "csv", None, "extra")
