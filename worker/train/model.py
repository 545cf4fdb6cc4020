"""Networks for retraining, and the large-batch optimiser recipe."""

from __future__ import annotations

import math

import torch
from torch import nn

from worker.pipeline.errors import InputError
from worker.pipeline.features.cifar_resnet import CifarResNet
from worker.pipeline.names import DEPTHS, TORCHVISION_RESNETS, TRAIN_MODELS

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


class LARS(torch.optim.Optimizer):
    """Layer-wise adaptive rate scaling (You et al. 2017) around SGD with momentum.

    Each weight tensor's step is scaled by ``trust · ‖w‖ / (‖g‖ + wd·‖w‖)``; biases and
    BatchNorm parameters (1-d tensors) are left unscaled and undecayed, as usual.
    """

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0,
                 trust: float = 0.001, nesterov: bool = True) -> None:
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      trust=trust, nesterov=nesterov))

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001, ANN201
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if p.ndim > 1:
                    g = g.add(p, alpha=group["weight_decay"])
                    w_norm, g_norm = torch.norm(p), torch.norm(g)
                    scale = torch.where((w_norm > 0) & (g_norm > 0),
                                        group["trust"] * w_norm / g_norm,
                                        torch.ones_like(w_norm))
                    g = g.mul(scale)
                buf = self.state[p].setdefault("momentum", torch.zeros_like(p))
                buf.mul_(group["momentum"]).add_(g)
                update = g.add(buf, alpha=group["momentum"]) if group["nesterov"] else buf
                p.add_(update, alpha=-group["lr"])


def make_optimizer(model: nn.Module, name: str, lr: float,
                   weight_decay: float) -> torch.optim.Optimizer:
    """SGD with Nesterov momentum, or LARS (meant for global batches of 4k and more)."""
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True,
                               weight_decay=weight_decay)
    if name == "lars":
        return LARS(model.parameters(), lr=lr, weight_decay=weight_decay)
    raise InputError(f"unknown optimizer {name!r}: use sgd or lars")


def lr_at(step: int, total_steps: int, warmup_steps: int, peak: float) -> float:
    """Linear warmup from peak/10 to ``peak``, then cosine decay to 0."""
    if warmup_steps and step < warmup_steps:
        return peak * (0.1 + 0.9 * step / warmup_steps)
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.5 * peak * (1 + math.cos(math.pi * min(1.0, progress)))
