"""Names the command line offers as choices, in a module that imports nothing heavy.

``curator --help`` builds every sub-command's parser; importing torch, scikit-learn or
numpy for their choice lists made it take seconds. The modules that implement these
names import them from here, so each list is written once.
"""

from __future__ import annotations

RULES = ("adaptive", "dbscan-knn", "dbscan")
DEFAULT_RULE = "adaptive"
NOISE_KINDS = ("symmetric", "pairs")
TORCHVISION_RESNETS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")
DEPTHS = {"cifar-resnet20": 20, "cifar-resnet32": 32, "cifar-resnet44": 44, "cifar-resnet56": 56}
# ImageNet-pretrained backbones whose weights come with the install (a registry package),
# so they are pretrained without a --weights file.
PRETRAINED_MODELS = ("efficientnet-lite0",)
MODEL_NAMES = ("pixels", *PRETRAINED_MODELS, *TORCHVISION_RESNETS, *DEPTHS)
# The networks `curator retrain` can train (worker.train.model builds them).
TRAIN_MODELS = (*TORCHVISION_RESNETS, *DEPTHS)
# What a user gets without --model: the pretrained backbone for images (its features never
# saw the dataset's labels, which is what makes the flags trustworthy); pixels for the
# 8x8 digits demo, where a 224-px ImageNet network has nothing to see.
DEFAULT_IMAGE_MODEL = "efficientnet-lite0"
DEFAULT_DIGITS_MODEL = "pixels"
# One sentence per choice, for the New-run form and `--help`.
MODEL_HELP = {
    "pixels": "raw pixels, no network: only for tiny images such as the digits demo",
    "efficientnet-lite0": "ImageNet-pretrained EfficientNet-Lite0, installed with the tool "
                          "(recommended: its features never saw your labels)",
    **{m: f"torchvision {m}: pretrained only with a weights file, else random weights "
          "(flags near chance)" for m in TORCHVISION_RESNETS},
    **{m: f"CIFAR {m.removeprefix('cifar-')}: pretrained only with a weights file, else "
          "random weights (flags near chance)" for m in DEPTHS},
}


def default_model(dataset_kind: str) -> str:
    """The ``--model`` used when none is given, for a dataset spec's kind
    (``digits``, ``cifar10``, ``folder`` or ``features``)."""
    return DEFAULT_DIGITS_MODEL if dataset_kind in ("digits", "features") else DEFAULT_IMAGE_MODEL
PRECISIONS = ("auto", "fp32", "bf16")
# Where an extraction decodes JPEG files: on the device (torchvision's nvJPEG decoder), on
# the host's worker processes, or auto: on the device when it is a CUDA GPU.
DECODERS = ("auto", "host", "device")
# Training subsets (worker/train/data.py says what each holds).
SUBSETS = ("filtered", "full", "random", "corrected")
# How pruned@F ranks what the curation keeps (worker/pipeline/pruning.py says what each
# is; the default is CCS's coverage, chosen a priori: the choose bench preferred easy on
# 5,000 images, one seed, but easy's own report rows did not confirm it, docs/benchmarks.md
# "Pruning by value").
PRUNINGS = ("coverage", "easy", "hard")
DEFAULT_PRUNING = "coverage"
# The fractions kept that the Summary tab counts and the Retrain panel offers (any F in
# (0, 1) from the CLI or the API).
SHOWN_FRACTIONS = (0.7, 0.5, 0.3)
# Training optimizers: auto is LARS from a global batch of 4,096 (the paper's large
# batches), SGD with Nesterov momentum below (worker/train/plan.py ``optimizer_for``).
OPTIMIZERS = ("auto", "sgd", "lars")
# What an experiment holds equal across its subsets (worker/train/experiment.py): the
# optimizer steps (a smaller subset trains more epochs) or the epochs.
BUDGETS = ("steps", "epochs")
# torch.compile of a training's model (worker/train/trainer.py): off, or one of torch's
# modes ("reduce-overhead" adds CUDA graphs on a GPU). Off by default: a CPU gains little,
# and its first epoch carries the compile (docs/training.md, "Compiled training").
COMPILE_MODES = ("off", "default", "reduce-overhead", "max-autotune")
# Injected copies' strengths and outliers' sources (worker/pipeline/sources/inject.py says
# what each is): the detectors' cuts were chosen on the first group of each, and are
# reported on the held-out group beside it.
STRENGTHS = ("exact", "light", "medium", "strong")
HELD_OUT = ("crop", "rotate", "jitter", "blur", "jpeg", "overlay", "aspect")
DUPLICATE_STRENGTHS = (*STRENGTHS, *HELD_OUT, "mixed", "held-out")
CHOSEN_SOURCES = ("digits", "photo", "noise", "blank")
HELD_OUT_SOURCES = ("grey", "lines", "texture", "shapes", "solid")
OUTLIER_SOURCES = (*CHOSEN_SOURCES, *HELD_OUT_SOURCES, "mixed", "held-out")
