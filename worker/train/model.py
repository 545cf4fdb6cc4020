"""Networks for retraining, and the large-batch optimiser recipe."""

from __future__ import annotations

import math

import torch
from torch import nn

from worker.pipeline.choices import DEPTHS, TORCHVISION_RESNETS, TRAIN_MODELS
from worker.pipeline.errors import InputError
from worker.pipeline.features.cifar_resnet import CifarResNet

SMALL_IMAGE = 64


def build_model(name: str, num_classes: int, image_size: int) -> nn.Module:
    """A torchvision ResNet or a CIFAR ResNet-(6n+2) (``cifar-resnet20`` …: 0.27M
    parameters at depth 20, about 14× fewer multiply-adds than ResNet-18 on 32 px, which
    makes CPU comparisons affordable). Torchvision ResNets on images of 64 px or less get
    the CIFAR stem (3×3 conv1, stride 1, no max-pool), which keeps small images from
    shrinking to nothing."""
    if name in DEPTHS:
        return CifarResNet(DEPTHS[name], num_classes)
    if name not in TORCHVISION_RESNETS:
        raise InputError(f"unknown model {name!r}: choose one of {', '.join(TRAIN_MODELS)}")
    import torchvision

    net = getattr(torchvision.models, name)(weights=None, num_classes=num_classes)
    if image_size <= SMALL_IMAGE:
        net.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        net.maxpool = nn.Identity()
    return net


def make_optimizer(model: nn.Module, name: str, lr: float,
                   weight_decay: float) -> torch.optim.Optimizer:
    """SGD with Nesterov momentum, or LARS (meant for global batches of 4k and more)."""
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True,
                               weight_decay=weight_decay)
    if name == "lars":
        return lars(model, lr, weight_decay)
    raise InputError(f"unknown optimizer {name!r}: use sgd or lars")


def lars(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    """Layer-wise adaptive rate scaling (You et al. 2017) around SGD with Nesterov momentum,
    as timm implements it: each weight tensor's step ``g + wd·w`` is scaled by
    ``0.001 · ‖w‖ / (‖g‖ + wd·‖w‖)`` (the paper's local rate); biases and BatchNorm
    parameters (1-d tensors) are left unscaled and undecayed, as usual."""
    from timm.optim import Lars

    weights = [p for p in model.parameters() if p.ndim > 1]
    others = [p for p in model.parameters() if p.ndim <= 1]
    # always_adapt: the weights' rate is scaled at any weight decay (timm scales only
    # where the decay is not 0); the 1-d group is neither scaled nor decayed.
    return Lars([{"params": weights, "weight_decay": weight_decay, "always_adapt": True},
                 {"params": others, "weight_decay": 0.0, "always_adapt": False}],
                lr=lr, momentum=0.9, nesterov=True, trust_coeff=0.001)


def lr_at(step: int, total_steps: int, warmup_steps: int, peak: float) -> float:
    """Linear warmup from peak/10 to ``peak``, then cosine decay to 0."""
    if warmup_steps and step < warmup_steps:
        return peak * (0.1 + 0.9 * step / warmup_steps)
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.5 * peak * (1 + math.cos(math.pi * min(1.0, progress)))
