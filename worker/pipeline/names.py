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
MODEL_NAMES = ("pixels", *TORCHVISION_RESNETS, *DEPTHS)
PRECISIONS = ("auto", "fp32", "bf16")
