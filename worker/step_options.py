"""The steps' option objects, made from option values by name.

``values`` maps each option's name (:mod:`worker.option_table`: the argparse ``dest`` and
the API's keyword) to its checked value: the CLI passes ``vars()`` of what it parsed, the
Python API (:mod:`tsne_curator.options`) the keywords it checked against the same
declarations, so ``curator pipeline --perplexity 12`` and ``tc.pipeline(..., perplexity=12)``
make the same :class:`~worker.pipeline.map.embedding.EmbeddingOptions`.

Only light modules at the top: the CLI imports this before it parses (each function
imports what it needs when it runs).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.number_params import check, group_params
from worker.settings import load_settings
from worker.train.config import TrainConfig
from worker.train.subsets import subsets_arg

if TYPE_CHECKING:
    from worker.jobs.job_params import ExperimentParams
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.sources.ingest import DatasetOptions

Values = Mapping[str, Any]


def dataset_options(v: Values, read: bool = True) -> DatasetOptions | None:
    """The dataset options of ``dataset`` and its options, or None without ``dataset``;
    with ``read``, the data checked as every door checks it (a ``features:`` file's values
    and labels: ``sources.ingest.check_dataset``), all before ``out`` is touched, except a
    features file the run at ``out`` holds its checked copy of (a resume reads it no more).
    ``tc.from_arrays`` passes ``read=False``: it checked the arrays it wrote with the same
    functions.

    Raises
    ------
    InputError
        A bad spec, a split the dataset lacks, or data that cannot make a run.
    """
    from worker.pipeline.sources.datasets import has_split, open_dataset, parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions, check_dataset
    from worker.pipeline.storage.rundir import RunDir

    if not v.get("dataset"):
        return None
    spec = parse_spec(v["dataset"], v["split"])
    if not has_split(spec, v["split"]):  # refused before out is touched (the reason: one line)
        open_dataset(spec)
    opts = DatasetOptions(
        spec, v["labels"], v["label_column"], v["true_label_column"], v["inject_noise"],
        v["seed"], v["noise_kind"], v["inject_duplicates"], v["inject_outliers"],
        v["duplicate_strength"], v["outlier_sources"], v["inject_leaks"],
        v["duplicate_family"], v["duplicate_across"])
    if read:
        out = v.get("out")
        check_dataset(opts, RunDir(out) if out else None)
    return opts


def feature_options(v: Values) -> FeatureOptions:
    """The extraction's options; ``device`` and ``workers`` not given are the settings'
    (``CURATOR_DEVICE``, ``CURATOR_NUM_WORKERS``). A network with random weights says so
    on stderr: its flags are near chance."""
    from worker.pipeline.features.backbones import random_weights_warning

    s = load_settings()
    warning = random_weights_warning(v["model"], v["weights"])
    if warning:
        print(warning, file=sys.stderr, flush=True)
    return FeatureOptions(model=v["model"], weights=v["weights"], finetune_epochs=v["finetune"],
                          batch_size=v["batch_size"], device=v["device"] or s.device,
                          num_workers=v["workers"] if v["workers"] is not None
                          else s.num_workers, seed=v["seed"], precision=v["precision"],
                          input_size=v["input_size"], decode=v["decode"])


def embedding_options(v: Values) -> EmbeddingOptions:
    """The map's options: the ``embedding`` group's numbers, the seed and the gradient."""
    from worker.pipeline.map.embedding import EmbeddingOptions

    return EmbeddingOptions(**{name: v[name] for name in group_params("embedding")},
                            seed=v.get("seed", 0), gradient=v["gradient"])


def finding_cuts(v: Values) -> dict[str, float]:
    """The finding cuts given, by kind name (``<kind>_threshold`` → ``<kind>``)."""
    return {name.removesuffix("_threshold"): cut for name in group_params("findings")
            if (cut := v.get(name)) is not None}


def train_config(v: Values, **over: Any) -> TrainConfig:
    """One training's configuration; ``over`` sets what the command does not take as an
    option (an experiment's subset, batch size and seed for each of its trainings)."""
    def pick(name: str, default: Any = None) -> Any:
        return over[name] if name in over else v.get(name, default)

    return TrainConfig(
        subset=pick("subset", "filtered"), model=v["model"], epochs=v["epochs"],
        batch_size=pick("batch_size"), nproc=v["nproc"], lr=v["lr"],
        weight_decay=v["weight_decay"], label_smoothing=v["label_smoothing"],
        optimizer=v["optimizer"], warmup_epochs=v["warmup_epochs"], compile=v["compile"],
        seed=pick("seed", 0), device=v["device"], name=pick("name"), nnodes=v["nnodes"],
        node_rank=v["node_rank"], rdzv_endpoint=v["rdzv_endpoint"], rdzv_id=v["rdzv_id"])


def experiment_params(v: Values) -> ExperimentParams:
    """``curator experiment``'s job parameters (the CLI's and ``Run.experiment``'s): one
    config per subset, batch size and seed, each refused before a job is recorded, as the
    job itself refuses it (``run_experiment``).

    Raises
    ------
    InputError
        A run without images, or a training that can never run.
    """
    from worker.jobs.job_params import ExperimentParams
    from worker.pipeline.storage.rundir import RunDir
    from worker.train.launch import validate

    RunDir(v["run"]).require_images("an experiment (retraining)")
    subsets = subsets_arg(v["subsets"]).split(",")
    batch_sizes = [None if b.strip() == "auto" else check("train_batch", b)
                   for b in v["batch_sizes"].split(",") if b.strip()]
    configs = [train_config(v, subset=s, batch_size=b, seed=seed, name=None)
               for s in subsets for b in batch_sizes for seed in range(v["seeds"])]
    for cfg in configs:
        validate(cfg)
    return ExperimentParams(v["name"] or "comparison", tuple(configs), v["budget"],
                            v["parallel"])
