"""The options several commands share (dataset, model, map, clusters, findings, training) and
how they become the steps' option objects.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.names import (
    COMPILE_MODES,
    DECODERS,
    DEFAULT_IMAGE_MODEL,
    DEFAULT_RULE,
    DUPLICATE_STRENGTHS,
    MODEL_NAMES,
    NOISE_KINDS,
    OPTIMIZERS,
    OUTLIER_SOURCES,
    PRECISIONS,
    RULES,
)
from worker.pipeline.ranges import add_flags, cli_type, group_params
from worker.settings import load_settings
from worker.train.config import TrainConfig

if TYPE_CHECKING:
    from worker.pipeline.storage.rundir import RunDir




# How an option that takes a comma-separated list shows its value (``--subsets NAME,…``):
# the Python API takes a list for such an option too (tsne_curator.options).
LIST_METAVAR_END = ",…"


def rundir(path: Path) -> RunDir:
    from worker.pipeline.storage.rundir import RunDir

    return RunDir(path)


def dataset_args(p: argparse.ArgumentParser, required: bool) -> None:
    g = p.add_argument_group("dataset")
    g.add_argument("--dataset", required=required, metavar="SPEC",
                   help="digits | cifar10:DIR | folder:DIR")
    g.add_argument("--split", default="train", choices=["train", "test"])
    g.add_argument("--labels", type=Path, metavar="CSV", help="CSV with path,label columns")
    g.add_argument("--label-column", default="label", help="label column of --labels")
    g.add_argument("--true-label-column", help="column of --labels holding clean labels")
    g.add_argument("--inject-noise", type=cli_type("inject_noise"), default=0.0, metavar="RATE",
                   help="flip this fraction of labels (true labels are recorded)")
    g.add_argument("--noise-kind", default="symmetric", choices=NOISE_KINDS,
                   help="symmetric: to any other class; pairs: each class to one fixed "
                        "partner (cat↔dog, automobile↔truck, …)")
    g.add_argument("--seed", type=cli_type("seed"), default=0,
                   help="for noise injection and sampling")
    g.add_argument("--inject-duplicates", type=cli_type("inject_duplicates"), default=0.0,
                   metavar="RATE", help="add this fraction of near copies of random samples "
                                        "(truth recorded in injected.csv)")
    g.add_argument("--duplicate-strength", default="mixed", choices=DUPLICATE_STRENGTHS,
                   help="how injected copies differ: exact pixels; light (JPEG, resize); "
                        "medium (mirror, shift, brightness); strong (crop, mirror, colour, "
                        "JPEG); mixed cycles through these four, on which the cuts were "
                        "chosen; held-out cycles through crop, rotate, jitter, blur, jpeg, "
                        "overlay and aspect, which they were not (docs/method.md)")
    g.add_argument("--duplicate-family", type=cli_type("duplicate_family"), default=1,
                   metavar="K", help="copies come in families: each chosen sample gets 1 to K "
                                     "copies (drawn at random) until --inject-duplicates' "
                                     "total is made; 1 to 10")
    g.add_argument("--duplicate-across", type=cli_type("duplicate_across"), default=0.0,
                   metavar="SHARE", help="this share of the injected copies (chosen at random) "
                                         "carry the label of a class other than their "
                                         "source's: copies filed in another class's folder; "
                                         "0 to 1")
    g.add_argument("--inject-outliers", type=cli_type("inject_outliers"), default=0,
                   metavar="N", help="add N images from other sources with random labels")
    g.add_argument("--inject-leaks", type=cli_type("inject_leaks"), default=0, metavar="N",
                   help="add copies of N test images to train, made as --duplicate-strength "
                        "says (a dataset with a test split; truth in injected.csv)")
    g.add_argument("--outlier-sources", default="mixed", choices=OUTLIER_SOURCES,
                   help="the injected outliers' sources: mixed (digits, photographs, noise, "
                        "blank: the cuts were chosen on these), held-out (grey photographs, "
                        "line drawings, textures, shapes, noisy colours), or one of them")


def model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("features")
    g.add_argument("--model", default=None, choices=MODEL_NAMES, metavar="NAME",
                   help=f"one of: {', '.join(MODEL_NAMES)} (default {DEFAULT_IMAGE_MODEL}, "
                        "ImageNet-pretrained, for images; pixels for digits)")
    g.add_argument("--input-size", type=cli_type("input_size"), default=None, metavar="PX",
                   help="side images are resized to for the network (default: the model's "
                        "own, 160 for efficientnet-lite0)")
    g.add_argument("--weights", type=Path, metavar="FILE", help="local weights file")
    g.add_argument("--finetune", type=cli_type("finetune"), default=0, metavar="EPOCHS",
                   help="fine-tune on the dataset before extraction")
    g.add_argument("--batch-size", type=cli_type("extract_batch"), default=256,
                   help="images per extraction batch")
    g.add_argument("--device", default=None, help="auto | cpu | cuda[:N]")
    g.add_argument("--workers", type=cli_type("workers"), default=None,
                   help="decoding processes of an extraction (default: all cores but one)")
    g.add_argument("--decode", default="auto", choices=DECODERS,
                   help="where JPEG files are decoded: on the device's decoder (nvJPEG), on "
                        "the host's worker processes, or auto: the device when it is CUDA")
    g.add_argument("--precision", default="auto", choices=PRECISIONS,
                   help="inference precision; auto = bf16 on CUDA and on CPUs with native "
                        "bf16, else fp32")


def embed_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("embedding")
    add_flags(g, "embedding")
    g.add_argument("--gradient", default="auto", choices=["auto", "fft", "bh"])


def cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("clustering")
    g.add_argument("--eps", type=cli_type("eps"), help="DBSCAN eps (default: automatic per class)")
    g.add_argument("--min-samples", type=cli_type("min_samples"),
                   help="DBSCAN min_samples (default 5)")
    g.add_argument("--rule", choices=RULES, help=f"flagging rule (default {DEFAULT_RULE})")


def finding_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("findings (distances relative to the data's typical "
                             "nearest-neighbour distance; docs/method.md)")
    add_flags(g, "findings", given_only=True)


def thresholds(a: argparse.Namespace) -> dict[str, float]:
    """The finding cuts given on the command line, by kind name (``<kind>_threshold``)."""
    return {name.removesuffix("_threshold"): v for name in group_params("findings")
            if (v := getattr(a, name, None)) is not None}


def dataset_opts(a: argparse.Namespace, read: bool = True):
    """The dataset options of ``--dataset`` and its flags, or None without ``--dataset``;
    with ``read``, the data checked as every door checks it (a ``features:`` file's values
    and labels: ``sources.ingest.check_dataset``), all before ``--out`` is touched, except
    a features file the run at ``--out`` holds its checked copy of (a resume reads it
    no more). ``tc.from_arrays`` passes ``read=False``: it checked the arrays it wrote with
    the same functions."""
    from worker.pipeline.sources.datasets import has_split, open_dataset, parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions, check_dataset

    if not a.dataset:
        return None
    spec = parse_spec(a.dataset, a.split)
    if not has_split(spec, a.split):  # refused before --out is touched (the reason: one line)
        open_dataset(spec)
    opts = DatasetOptions(spec, a.labels, a.label_column, a.true_label_column, a.inject_noise,
                          a.seed, a.noise_kind, a.inject_duplicates, a.inject_outliers,
                          a.duplicate_strength, a.outlier_sources, a.inject_leaks,
                          a.duplicate_family, a.duplicate_across)
    if read:
        out = getattr(a, "out", None)
        check_dataset(opts, rundir(out) if out else None)
    return opts


def feature_opts(a: argparse.Namespace):
    from worker.pipeline.features.backbones import random_weights_warning

    s = load_settings()
    warning = random_weights_warning(a.model, a.weights)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    return FeatureOptions(model=a.model, weights=a.weights, finetune_epochs=a.finetune,
                          batch_size=a.batch_size, device=a.device or s.device,
                          num_workers=a.workers if a.workers is not None else s.num_workers,
                          seed=a.seed, precision=a.precision, input_size=a.input_size,
                          decode=a.decode)


def embed_opts(a: argparse.Namespace):
    from worker.pipeline.map.embedding import EmbeddingOptions

    return EmbeddingOptions(**{name: getattr(a, name) for name in group_params("embedding")},
                            seed=getattr(a, "seed", 0), gradient=a.gradient)


def train_config(a: argparse.Namespace, **over):
    def pick(name: str, default=None):  # noqa: ANN001, ANN202
        return over[name] if name in over else getattr(a, name, default)

    return TrainConfig(
        subset=pick("subset", "filtered"), model=a.model, epochs=a.epochs,
        batch_size=pick("batch_size"), nproc=a.nproc, lr=a.lr,
        weight_decay=a.weight_decay, label_smoothing=a.label_smoothing,
        optimizer=a.optimizer, warmup_epochs=a.warmup_epochs, compile=a.compile,
        seed=pick("seed", 0),
        device=a.device, name=pick("name"),
        nnodes=a.nnodes, node_rank=a.node_rank, rdzv_endpoint=a.rdzv_endpoint,
        rdzv_id=a.rdzv_id)


# add(name, command, help) -> the command's subparser (build_parser's helper)
Add = Callable[[str, Callable, str], argparse.ArgumentParser]


def train_args(sp: argparse.ArgumentParser) -> None:
    g = sp.add_argument_group("training")
    g.add_argument("--model", default="resnet18",
                   help="torchvision ResNet (resnet18…152) or cifar-resnet20/32/44/56")
    g.add_argument("--epochs", type=cli_type("epochs"),
                   help="default: enough for 600 optimizer steps, 10 to 100")
    g.add_argument("--nproc", type=cli_type("nproc"), default=1,
                   help="processes (GPUs) per node")
    g.add_argument("--lr", type=cli_type("lr"),
                   help="at batch 256, scaled linearly (default 0.1)")
    g.add_argument("--weight-decay", type=cli_type("weight_decay"), default=5e-4,
                   help="L2 penalty")
    g.add_argument("--label-smoothing", type=cli_type("label_smoothing"), default=0.0,
                   help="0 to <1")
    g.add_argument("--optimizer", default="auto", choices=OPTIMIZERS,
                   help="auto (default): LARS from a global batch of 4,096, SGD with "
                        "Nesterov momentum below; or either one for every batch")
    g.add_argument("--warmup-epochs", type=cli_type("warmup_epochs"), default=1,
                   help="linear warm-up before the cosine decay")
    g.add_argument("--compile", default="off", choices=COMPILE_MODES,
                   help="torch.compile the model for training: off (default), or a torch "
                        "mode (reduce-overhead adds CUDA graphs on a GPU); the first epoch "
                        "pays the compile")
    g.add_argument("--device", default="auto", help="auto | cpu | cuda")
    g.add_argument("--name", help="output name under RUN/train (or RUN/experiments)")
    m = sp.add_argument_group("multi-node (torchrun c10d rendezvous)")
    m.add_argument("--nnodes", type=cli_type("nnodes"), default=1, help="hosts taking part")
    m.add_argument("--node-rank", type=cli_type("node_rank"))
    m.add_argument("--rdzv-endpoint", help="HOST:PORT of the rendezvous")
    m.add_argument("--rdzv-id", help="job id shared by all nodes")
