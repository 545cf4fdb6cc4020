"""Each job kind's parameters, typed, and their JSON: what a job record stores and a worker
reads. Each kind's parameters are a frozen pydantic model: ``model_dump(mode="json")`` is the
record (the broker carries JSON) and ``model_validate`` reads it back, checked, so callers and
handlers see typed options only. A missing key takes its field's default and an unknown key
of the option dataclasses is dropped on the way in, so a record written by an older version
still opens; a bad record is one :class:`InputError` line.

The options themselves (dataset, features, embedding, training) are the pipeline's frozen
dataclasses; each has one JSON form, given once below as an annotated field type."""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, PlainSerializer, PlainValidator, ValidationError

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


def _dataset(d: DatasetOptions | dict | None) -> DatasetOptions | None:
    if isinstance(d, DatasetOptions):
        return d
    return DatasetOptions.from_json(d) if d else None


def _dataset_json(dataset: DatasetOptions | None) -> dict | None:
    return dataset.to_json() if dataset else None


def _recorded(cls: type, read: Any, write: Any) -> Any:
    """The field type of a ``cls`` option dataclass in a job record: an instance is taken as
    it is (checked when it was made), JSON is read by ``read``; ``write`` makes the JSON."""
    return Annotated[cls, PlainValidator(lambda v: v if isinstance(v, cls) else read(v)),
                     PlainSerializer(write)]


Dataset = Annotated[DatasetOptions | None, PlainValidator(_dataset),
                    PlainSerializer(_dataset_json)]
Features = _recorded(FeatureOptions, feature_opts, feature_params)
Embedding = _recorded(EmbeddingOptions, embedding_opts, asdict)
Training = _recorded(TrainConfig, train_config, asdict)


def _one_line(cls: type, exc: ValidationError) -> InputError:
    """A record's first error as one line: an option's own message (it names the flag)
    when it has one, else the field and what is wrong with it."""
    err = exc.errors()[0]
    cause = err.get("ctx", {}).get("error")
    if isinstance(cause, InputError):
        return InputError(str(cause))
    where = ".".join(str(part) for part in err["loc"])
    return InputError(f"{cls.__name__}.{where}: {err['msg']}")


class JobParams(BaseModel):
    """The parameters of one job kind: frozen, made by field name or by position in field
    order (``ExportParams("v1", "csv")``), and refused in one :class:`InputError` line when a
    value does not fit."""

    model_config = ConfigDict(frozen=True)

    def __init__(self, /, *args: Any, **kwargs: Any) -> None:
        names = list(type(self).model_fields)
        if len(args) > len(names) or set(names[:len(args)]) & set(kwargs):
            raise TypeError(f"{type(self).__name__} takes {', '.join(names)} once each, by "
                            "position or by name")
        try:
            super().__init__(**dict(zip(names, args, strict=False)), **kwargs)
        except ValidationError as exc:
            raise _one_line(type(self), exc) from None

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """The parameters from a job record's JSON (``model_dump(mode="json")``)."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise _one_line(cls, exc) from None


class IngestParams(JobParams):
    """``ingest``: the dataset (None: the run's own, already ingested)."""

    dataset: Dataset = None


class ExtractParams(JobParams):
    """``extract`` and ``finetune``: the dataset and the feature options."""

    dataset: Dataset = None
    features: Features = FeatureOptions()


class ShardParams(JobParams):
    """``extract-shard``: rows ``start..stop-1`` into the parts folder of cache key
    ``key`` (worker.jobs.extract_shards)."""

    key: str
    start: int
    stop: int
    features: Features = FeatureOptions()


class ExportParams(JobParams):
    """``export``: the export's name, its format, and the version whose frozen curation
    it writes (None: the live curation)."""

    name: str
    format: str = "csv"
    version: str | None = None


class TestSplitParams(JobParams):
    """``extract-test``: nothing to choose; the run says which backbone and split."""


class ExperimentParams(JobParams):
    """``experiment``: its name, one training config per arm and seed, and what it holds
    equal across subsets (``budget``: steps or epochs, worker/train/experiment.py), and how
    many trainings run at once (``parallel``)."""

    name: str
    configs: tuple[Training, ...]
    budget: str = "steps"
    parallel: int = 1

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """The parameters from a job record; one recorded before the budget existed held
        the epochs equal."""
        if isinstance(obj, dict) and "budget" not in obj:
            obj = {**obj, "budget": "epochs"}
        return super().model_validate(obj, **kwargs)


class PipelineParams(JobParams):
    """``pipeline``: ingest → extract → embed → cluster, what the app's New-run form
    starts."""

    dataset: Dataset = None
    features: Features = FeatureOptions()
    embedding: Embedding = EmbeddingOptions()
