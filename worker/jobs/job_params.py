"""Each job kind's parameters, typed, and their JSON: what a job record stores and a worker
reads. The JSON is made and read only here, at the job boundary (the broker carries JSON);
callers and handlers see the dataclasses. Unknown keys of the option dataclasses are
dropped on the way in, so a record written by an older version still opens."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from worker.pipeline.errors import InputError
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.sources.ingest import DatasetOptions
from worker.train.config import TrainConfig
from worker.train.subsets import subset_name


def feature_params(opts: FeatureOptions) -> dict[str, Any]:
    """``opts`` as JSON, with the weights file as an absolute path (workers elsewhere)."""
    d = asdict(opts)
    d["weights"] = str(Path(opts.weights).resolve()) if opts.weights else None
    return d


def feature_opts(d: dict[str, Any] | None) -> FeatureOptions:
    """:class:`FeatureOptions` from :func:`feature_params`' JSON (checked as it is made)."""
    known = {f.name for f in fields(FeatureOptions)}
    d = {k: v for k, v in (d or {}).items() if k in known}
    if d.get("weights"):
        d["weights"] = Path(d["weights"])
    return FeatureOptions(**d)


def embedding_opts(d: dict[str, Any] | None) -> EmbeddingOptions:
    """:class:`EmbeddingOptions` from their JSON."""
    known = {f.name for f in fields(EmbeddingOptions)}
    return EmbeddingOptions(**{k: v for k, v in (d or {}).items() if k in known})


def train_config(d: dict[str, Any]) -> TrainConfig:
    """A :class:`TrainConfig` from its JSON; unknown settings are refused in one line (a
    training must not silently ignore one)."""
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise InputError(f"unknown training settings: {', '.join(unknown)}")
    if "subset" in d:  # one name per subset, whoever wrote the job (pruned@.5 → pruned@0.5)
        d = {**d, "subset": subset_name(d["subset"])}
    return TrainConfig(**d)


def _dataset_json(dataset: DatasetOptions | None) -> dict | None:
    return dataset.to_json() if dataset else None


def _dataset(d: dict | None) -> DatasetOptions | None:
    return DatasetOptions.from_json(d) if d else None


@dataclass(frozen=True)
class IngestParams:
    """``ingest``: the dataset (None: the run's own, already ingested)."""

    dataset: DatasetOptions | None = None

    def to_json(self) -> dict[str, Any]:
        return {"dataset": _dataset_json(self.dataset)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IngestParams:
        return cls(_dataset(d.get("dataset")))


@dataclass(frozen=True)
class ExtractParams:
    """``extract`` and ``finetune``: the dataset and the feature options."""

    dataset: DatasetOptions | None
    features: FeatureOptions

    def to_json(self) -> dict[str, Any]:
        return {"dataset": _dataset_json(self.dataset),
                "features": feature_params(self.features)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ExtractParams:
        return cls(_dataset(d.get("dataset")), feature_opts(d.get("features")))


@dataclass(frozen=True)
class ShardParams:
    """``extract-shard``: rows ``start..stop-1`` into the parts folder of cache key
    ``key`` (worker.extract_shards)."""

    key: str
    start: int
    stop: int
    features: FeatureOptions

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "start": self.start, "stop": self.stop,
                "features": feature_params(self.features)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ShardParams:
        return cls(str(d["key"]), int(d["start"]), int(d["stop"]),
                   feature_opts(d.get("features")))


@dataclass(frozen=True)
class ExportParams:
    """``export``: the format and the export's name."""

    name: str
    format: str = "csv"

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "name": self.name}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ExportParams:
        return cls(d["name"], d.get("format", "csv"))


@dataclass(frozen=True)
class TestSplitParams:
    """``extract-test``: nothing to choose; the run says which backbone and split."""

    def to_json(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TestSplitParams:
        return cls()


@dataclass(frozen=True)
class ExperimentParams:
    """``experiment``: its name, one training config per arm and seed, and what it holds
    equal across subsets (``budget``: steps or epochs, worker/train/experiment.py), and how
    many trainings run at once (``parallel``)."""

    name: str
    configs: tuple[TrainConfig, ...]
    budget: str = "steps"
    parallel: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configs": [asdict(c) for c in self.configs],
                "budget": self.budget, "parallel": self.parallel}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ExperimentParams:
        # A job recorded before the budget existed held the epochs equal.
        return cls(d["name"], tuple(train_config(c) for c in d["configs"]),
                   d.get("budget", "epochs"), int(d.get("parallel", 1)))


@dataclass(frozen=True)
class PipelineParams:
    """``pipeline``: ingest → extract → embed → cluster, what the app's New-run form
    starts."""

    dataset: DatasetOptions | None
    features: FeatureOptions
    embedding: EmbeddingOptions

    def to_json(self) -> dict[str, Any]:
        return {"dataset": _dataset_json(self.dataset),
                "features": feature_params(self.features),
                "embedding": asdict(self.embedding)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PipelineParams:
        return cls(_dataset(d.get("dataset")), feature_opts(d.get("features")),
                   embedding_opts(d.get("embedding")))
