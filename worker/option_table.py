"""Every option of the commands the Python API shares with ``curator``, declared once.

An :class:`Option` is what one ``--flag`` (or positional argument) of a command is: its
name (the argparse ``dest`` and the API's keyword), flag, default, help, metavar and how
its value is read (a number through its :class:`~worker.pipeline.number_params.Param`, a choice,
a path, text, a switch, or another parser of text). The CLI adds its flags from these
declarations (:func:`worker.cli.arguments.add_options`), and the API
(:mod:`tsne_curator.options`) checks its keywords against the same declarations, so a
flag and its keyword cannot drift apart. A number's flag, range and default are its
``Param``'s; this table adds what the command line shows about it.

Only light modules here: ``curator --help`` builds every flag from this table.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from worker.pipeline.choices import (
    BUDGETS,
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
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import PARAMS, cli_type, fmt_number, group_params
from worker.settings import AUTO_SHARD_MIN, SHARDS_PER_WORKER
from worker.train.subsets import subsets_arg

# How an option that takes a comma-separated list shows its value (``--subsets NAME,…``):
# the Python API takes a list for such an option too.
LIST_METAVAR_END = ",…"

# How an option's value is read (Option.kind).
NUMBER, CHOICE, PATH, TEXT, SWITCH, PARSED, APPEND = (
    "number", "choice", "path", "text", "switch", "parsed", "append")


@dataclass(frozen=True)
class Option:
    """One option of a command: a ``--flag``, or a positional argument when ``flag`` is "".

    Attributes
    ----------
    name : the argparse ``dest`` and the API's keyword (``inject_noise``)
    flag : ``--inject-noise``; "" for a positional argument (``run``)
    kind : how a value is read: ``number`` (checked by ``PARAMS[param]``), ``choice`` (one
        of ``choices``), ``path``, ``text``, ``switch`` (True or False), ``parsed`` (text
        read by ``parse``, which raises ``argparse.ArgumentTypeError``) or ``append`` (a
        repeatable text flag)
    default : the value when the option is not given
    help : the help line (None: the flag has none)
    metavar : how the help shows the value (None: argparse's own); one ending in
        :data:`LIST_METAVAR_END` takes a comma-separated list
    param : a number's :data:`~worker.pipeline.number_params.PARAMS` name
    choices : a choice's values
    parse : a ``parsed`` option's reader of text
    required : the command refuses to run without it
    """

    name: str
    flag: str
    kind: str = TEXT
    default: object = None
    help: str | None = None
    metavar: str | None = None
    param: str | None = None
    choices: tuple[str, ...] | None = None
    parse: Callable[[str], object] | None = None
    required: bool = False

    @property
    def listed(self) -> bool:
        """Whether the option takes a comma-separated list (``--subsets a,b``)."""
        return str(self.metavar or "").endswith(LIST_METAVAR_END)

    @property
    def label(self) -> str:
        """How an error names the API keyword: ``inject_noise (--inject-noise)``."""
        return f"{self.name} ({self.flag})" if self.flag else self.name


_FROM_PARAM = object()  # number(): the option's default is its Param's


def number(param: str, help: str | None = None, *, name: str | None = None,
           metavar: str | None = None, default: object = _FROM_PARAM) -> Option:
    """The option of number ``param``: its flag and default (unless ``default`` is given)
    from ``PARAMS[param]``; ``{default}`` in ``help`` is replaced by the Param's default."""
    p = PARAMS[param]
    if help is not None:
        help = help.replace("{default}", fmt_number(p.default)
                            if p.default is not None else "none")
    return Option(name or param, p.flag, NUMBER, p.default if default is _FROM_PARAM
                  else default, help, metavar, param=param)


def choice(name: str, values: tuple[str, ...], default: str | None = None,
           help: str | None = None, metavar: str | None = None) -> Option:
    """The option ``--NAME`` that takes one of ``values``."""
    return Option(name, _flag(name), CHOICE, default, help, metavar, choices=tuple(values))


def text(name: str, help: str | None = None, default: str | None = None,
         metavar: str | None = None, required: bool = False) -> Option:
    """The option ``--NAME`` that takes any text."""
    return Option(name, _flag(name), TEXT, default, help, metavar, required=required)


def path(name: str, help: str | None = None, metavar: str | None = None,
         required: bool = False, positional: bool = False) -> Option:
    """The option ``--NAME`` (or the positional argument NAME) that takes a path."""
    return Option(name, "" if positional else _flag(name), PATH, None, help, metavar,
                  required=required)


def switch(name: str, help: str | None = None) -> Option:
    """The flag ``--NAME``: True when given."""
    return Option(name, _flag(name), SWITCH, False, help)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def cut_value(value: str) -> int | str:
    """``--cut``'s reader: ``rule``, or a count checked by its Param."""
    return "rule" if value == "rule" else _COUNT(value)


_COUNT = cli_type("cut")


def sample_or_file(value: str) -> int | Path:
    """``curator similar``'s positional argument: a whole number is a sample index,
    checked by its Param (``-1`` is refused, not taken for a file); anything else is the
    path of an image file (``./17`` names a file called ``17``)."""
    return _SAMPLE(value) if re.fullmatch(r"\s*[+-]?[0-9]+\s*", value) else Path(value)


_SAMPLE = cli_type("sample_index")

# -- the options several commands share ---------------------------------------------------
DATASET = (
    text("dataset", "digits | cifar10:DIR | folder:DIR", metavar="SPEC"),
    choice("split", ("train", "test"), "train"),
    path("labels", "CSV with path,label columns", metavar="CSV"),
    text("label_column", "label column of --labels", default="label"),
    text("true_label_column", "column of --labels holding clean labels"),
    number("inject_noise", "flip this fraction of labels (true labels are recorded)",
           metavar="RATE"),
    choice("noise_kind", NOISE_KINDS, "symmetric",
           "symmetric: to any other class; pairs: each class to one fixed partner (cat↔dog, "
           "automobile↔truck, …)"),
    number("seed", "for noise injection and sampling"),
    number("inject_duplicates", "add this fraction of near copies of random samples (truth "
                                "recorded in injected.csv)", metavar="RATE"),
    choice("duplicate_strength", DUPLICATE_STRENGTHS, "mixed",
           "how injected copies differ: exact pixels; light (JPEG, resize); medium (mirror, "
           "shift, brightness); strong (crop, mirror, colour, JPEG); mixed cycles through "
           "these four, on which the cuts were chosen; held-out cycles through crop, rotate, "
           "jitter, blur, jpeg, overlay and aspect, which they were not (docs/method.md)"),
    number("duplicate_family", "copies come in families: each chosen sample gets 1 to K "
                               "copies (drawn at random) until --inject-duplicates' total is "
                               "made; 1 to 10", metavar="K"),
    number("duplicate_across", "this share of the injected copies (chosen at random) carry "
                               "the label of a class other than their source's: copies filed "
                               "in another class's folder; 0 to 1", metavar="SHARE"),
    number("inject_outliers", "add N images from other sources with random labels",
           metavar="N"),
    number("inject_leaks", "add copies of N test images to train, made as "
                           "--duplicate-strength says (a dataset with a test split; truth in "
                           "injected.csv)", metavar="N"),
    choice("outlier_sources", OUTLIER_SOURCES, "mixed",
           "the injected outliers' sources: mixed (digits, photographs, noise, blank: the "
           "cuts were chosen on these), held-out (grey photographs, line drawings, textures, "
           "shapes, noisy colours), or one of them"),
)

FEATURES = (
    choice("model", MODEL_NAMES, None,
           f"one of: {', '.join(MODEL_NAMES)} (default {DEFAULT_IMAGE_MODEL}, "
           "ImageNet-pretrained, for images; pixels for digits)", metavar="NAME"),
    number("input_size", "side images are resized to for the network (default: the "
                         "model's own, 160 for efficientnet-lite0)", metavar="PX"),
    path("weights", "local weights file", metavar="FILE"),
    number("finetune", "fine-tune on the dataset before extraction", metavar="EPOCHS"),
    number("extract_batch", "images per extraction batch", name="batch_size"),
    text("device", "auto | cpu | cuda[:N]"),
    number("workers", "decoding processes of an extraction (default: all cores but one)"),
    choice("decode", DECODERS, "auto",
           "where JPEG files are decoded: on the device's decoder (nvJPEG), on the host's "
           "worker processes, or auto: the device when it is CUDA"),
    choice("precision", PRECISIONS, "auto",
           "inference precision; auto = bf16 on CUDA and on CPUs with native bf16, else fp32"),
)

# The t-SNE options: EmbeddingOptions has a field of each number's name (its group in
# worker/pipeline/number_params.py, whose Params carry their help), and the gradient.
EMBEDDING = (
    *(number(name, p.help) for name, p in group_params("embedding").items()),
    choice("gradient", ("auto", "fft", "bh"), "auto"),
)

CLUSTERING = (
    number("eps", "DBSCAN eps (default: automatic per class)"),
    number("min_samples", "DBSCAN min_samples (default 5)"),
    choice("rule", RULES, None, f"flagging rule (default {DEFAULT_RULE})"),
)

# A finding kind's cuts (``<kind>_threshold``, ``<kind>_drop_threshold``: their Params,
# with their help and why their defaults were chosen). Only a cut given is passed on
# (default None): the step's own default, or the cut a run stored, stands otherwise.
FINDINGS = tuple(number(name, p.help, metavar="T", default=None)
                 for name, p in group_params("findings").items())

TRAINING = (
    text("model", "torchvision ResNet (resnet18…152) or cifar-resnet20/32/44/56",
         default="resnet18"),
    number("epochs", "default: enough for 600 optimizer steps, 10 to 100"),
    number("nproc", "processes (GPUs) per node"),
    number("lr", "at batch 256, scaled linearly (default 0.1)"),
    number("weight_decay", "L2 penalty"),
    number("label_smoothing", "0 to <1"),
    choice("optimizer", OPTIMIZERS, "auto",
           "auto (default): LARS from a global batch of 4,096, SGD with Nesterov momentum "
           "below; or either one for every batch"),
    number("warmup_epochs", "linear warm-up before the cosine decay"),
    choice("compile", COMPILE_MODES, "off",
           "torch.compile the model for training: off (default), or a torch mode "
           "(reduce-overhead adds CUDA graphs on a GPU); the first epoch pays the compile"),
    text("device", "auto | cpu | cuda", default="auto"),
    text("name", "output name under RUN/train (or RUN/experiments)"),
)
MULTI_NODE = (
    number("nnodes", "hosts taking part"),
    number("node_rank"),
    text("rdzv_endpoint", "HOST:PORT of the rendezvous"),
    text("rdzv_id", "job id shared by all nodes"),
)

# -- each command's own options -----------------------------------------------------------
RUN = path("run", positional=True)
OUT = path("out", "run directory", required=True)
SHARDS = number("shards", "share feature extraction out as N Celery jobs to 'curator "
                          "worker' processes (needs CURATOR_BROKER_URL; 0 = one job; "
                          f"default: {SHARDS_PER_WORKER} per worker on the gpu queue from "
                          f"{AUTO_SHARD_MIN:,} images when two or more consume it)",
                metavar="N")
CLUSTER_OWN = (
    Option("cls", "--class", APPEND, metavar="NAME",
           help="apply --eps/--min-samples to this class only (repeatable)"),
    switch("auto", "recompute eps from the k-distance knee"),
    Option("cut", "--cut", PARSED, metavar="N|rule", parse=cut_value,
           help="flag the N highest mislabel scores of each --class and no others, whatever "
                "DBSCAN says (rule adaptive); 'rule' gives the class back to the rule (undo: "
                "curator undo)"),
)
# A version of the run (curator version): what an export writes or an experiment trains on
VERSION = text("version", "a version of the run (curator versions lists them): its frozen "
                          "curation instead of the live one", metavar="NAME")
EXPORT_OWN = (
    choice("format", ("csv", "imagefolder", "indices"), "csv"),
    text("dest", "export name", metavar="NAME", required=True),
    VERSION,
)
EXPERIMENT_OWN = (
    Option("subsets", "--subsets", PARSED, "full,filtered,random",
           "comma-separated: full, filtered, random, corrected, pruned@F, random@F (e.g. "
           "full,pruned@0.5,random@0.5,pruned@0.3,random@0.3)",
           f"NAME{LIST_METAVAR_END}", parse=subsets_arg),
    text("batch_sizes", "comma-separated global batches; 'auto' chooses from the subset size",
         default="auto", metavar=f"BATCH{LIST_METAVAR_END}"),
    number("seeds", "seeds per subset and batch size"),
    choice("budget", BUDGETS, "steps",
           "what every subset gets the same of: optimizer steps (default: a smaller subset "
           "trains more epochs, so a comparison is not one of training lengths) or epochs "
           "(--epochs applies to every subset)"),
    number("parallel", "trainings at once (default 1): pays only where one training leaves "
                       "the GPU idle (1.02x for ResNet-18 at batch >= 1024 on an H200); on a "
                       "CPU they share its cores"),
    VERSION,
)
SIMILAR_OWN = (
    Option("index", "", PARSED, help="the sample: its row of samples.csv (a whole number); "
           "or an image file (JPEG, PNG, WebP, BMP, GIF or TIFF) that need not be in the run, "
           "put through the run's own model", metavar="INDEX|FILE", parse=sample_or_file),
    number("similar_k", "how many nearest samples (default {default})", name="k"),
    switch("json", "print the rows as JSON"),
)
SERVE = (
    path("runs_root", "default: CURATOR_RUNS_ROOT or ./runs"),
    text("host", "default 127.0.0.1 (CURATOR_HOST)"),
    number("port", "default 8050 (CURATOR_PORT)"),
    switch("debug", "Dash dev tools and reloader, and the Curate page's test hooks (as "
                    "CURATOR_DEBUG_HOOKS=1)"),
)

# The options of each command the API calls, by name: tc.pipeline and tc.from_arrays take
# pipeline's, Run.cluster cluster's, Run.export export's, Run.experiment experiment's,
# Run.similar similar's and tc.serve serve's.
COMMANDS: dict[str, dict[str, Option]] = {
    command: {o.name: o for o in options} for command, options in {
        "pipeline": (OUT, *DATASET, *FEATURES, SHARDS, *EMBEDDING, *CLUSTERING, *FINDINGS),
        "cluster": (RUN, *CLUSTERING, *CLUSTER_OWN),
        "export": (RUN, *EXPORT_OWN),
        "experiment": (RUN, *EXPERIMENT_OWN, *TRAINING, *MULTI_NODE),
        "similar": (RUN, *SIMILAR_OWN),
        "serve": SERVE,
    }.items()}


def as_required(options: tuple[Option, ...], names: tuple[str, ...]) -> tuple[Option, ...]:
    """``options`` with those named ``names`` required (``--dataset`` on a command that
    cannot run without one)."""
    return tuple(replace(o, required=True) if o.name in names else o for o in options)



def read_text(option: Option, text: str) -> object:
    """``text`` read by a ``parsed`` option's reader, as the command line reads it.

    Raises
    ------
    InputError
        What the reader refuses, in one line naming the option (``option.label``).
    """
    try:
        return option.parse(text)  # type: ignore[misc]
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise InputError(f"{option.label} {exc}") from None
