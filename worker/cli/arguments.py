"""The options several commands share (dataset, model, map, clusters, findings, training),
added as flags from their declarations (:mod:`worker.option_table`, which the Python API
checks its keywords against too), and how what a command parsed becomes the steps' option
objects (:mod:`worker.step_options`, the API's as well).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.option_table import (
    APPEND,
    CLUSTERING,
    DATASET,
    EMBEDDING,
    FEATURES,
    FINDINGS,
    MULTI_NODE,
    NUMBER,
    PARSED,
    PATH,
    SWITCH,
    TRAINING,
    Option,
    as_required,
)
from worker.option_table import LIST_METAVAR_END as LIST_METAVAR_END  # the commands' import
from worker.pipeline.number_params import cli_type
from worker.step_options import (
    dataset_options,
    embedding_options,
    feature_options,
    finding_cuts,
)
from worker.step_options import train_config as _train_config

if TYPE_CHECKING:
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.sources.ingest import DatasetOptions
    from worker.pipeline.storage.rundir import RunDir
    from worker.train.config import TrainConfig


class _Arguments(Protocol):
    """An argparse parser or argument group: what takes ``add_argument``."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action: ...


def rundir(path: Path) -> RunDir:
    from worker.pipeline.storage.rundir import RunDir

    return RunDir(path)


def _type(o: Option) -> Callable[[str], object] | None:
    """The argparse ``type`` of ``o``: a number checked against its range as it is parsed."""
    return cli_type(o.param) if o.kind == NUMBER else Path if o.kind == PATH \
        else o.parse if o.kind == PARSED else None


def add_options(parser: _Arguments, options: Iterable[Option]) -> None:
    """Add a flag (or a positional argument) to ``parser`` for each declaration of
    ``options`` (:mod:`worker.option_table`), with its type, default, choices and help."""
    for o in options:
        if o.kind == SWITCH:
            parser.add_argument(o.flag, action="store_true", help=o.help)
        elif not o.flag:
            parser.add_argument(o.name, type=_type(o), help=o.help, metavar=o.metavar)
        else:
            parser.add_argument(o.flag, dest=o.name, type=_type(o), default=o.default,
                                choices=o.choices, required=o.required, help=o.help,
                                metavar=o.metavar,
                                **({"action": "append"} if o.kind == APPEND else {}))


def dataset_args(p: argparse.ArgumentParser, required: bool) -> None:
    add_options(p.add_argument_group("dataset"),
                as_required(DATASET, ("dataset",)) if required else DATASET)


def model_args(p: argparse.ArgumentParser) -> None:
    add_options(p.add_argument_group("features"), FEATURES)


def embed_args(p: argparse.ArgumentParser) -> None:
    add_options(p.add_argument_group("embedding"), EMBEDDING)


def cluster_args(p: argparse.ArgumentParser) -> None:
    add_options(p.add_argument_group("clustering"), CLUSTERING)


def finding_args(p: argparse.ArgumentParser) -> None:
    add_options(p.add_argument_group("findings (distances relative to the data's typical "
                                     "nearest-neighbour distance; docs/method.md)"), FINDINGS)


# The steps' options from what a command parsed (worker.step_options says how each is made,
# for the CLI and the Python API alike).
def thresholds(a: argparse.Namespace) -> dict[str, float]:
    """The finding cuts given on the command line, by kind name (``<kind>_threshold``)."""
    return finding_cuts(vars(a))


def dataset_opts(a: argparse.Namespace, read: bool = True) -> DatasetOptions | None:
    """:func:`worker.step_options.dataset_options` of the parsed options."""
    return dataset_options(vars(a), read)


def feature_opts(a: argparse.Namespace) -> FeatureOptions:
    return feature_options(vars(a))


def embed_opts(a: argparse.Namespace) -> EmbeddingOptions:
    return embedding_options(vars(a))


def train_config(a: argparse.Namespace, **over: object) -> TrainConfig:
    return _train_config(vars(a), **over)


# add(name, command, help) -> the command's subparser (build_parser's helper)
Add = Callable[[str, Callable, str], argparse.ArgumentParser]


def train_args(sp: argparse.ArgumentParser) -> None:
    add_options(sp.add_argument_group("training"), TRAINING)
    add_options(sp.add_argument_group("multi-node (torchrun c10d rendezvous)"), MULTI_NODE)
