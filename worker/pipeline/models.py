"""Backbones whose penultimate layer gives the features.

Names: torchvision ``resnet18/34/50/101/152`` (local weights file or random init), CIFAR
``cifar-resnet20/32/44/56`` (akamaster weight files), and ``pixels`` (no network).
Nothing is ever downloaded: weights come from a file the user names.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .cifar_resnet import CifarResNet
from .errors import InputError
from .names import DEPTHS, MODEL_NAMES, PRECISIONS

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass
class Backbone:
    """A network whose ``forward`` returns (B, feature_dim) features.

    Attributes
    ----------
    net : nn.Module
        Classifier head replaced by ``Identity``; ``head`` holds the removed layer.
    feature_dim : int
        512 for ResNet-18/34, 2048 for ResNet-50/101/152, 64 for CIFAR ResNets.
    input_size : int
        Square side images are resized to.
    pretrained : bool
        Whether weights were loaded (else the network starts from random initialisation).
    mean, std : tuple of float
        Per-channel normalisation applied to [0, 1] pixels.
    """

    net: nn.Module
    head: nn.Linear
    feature_dim: int
    input_size: int
    pretrained: bool = False
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD


def check_model_name(name: str) -> str:
    if name not in MODEL_NAMES:
        raise InputError(f"unknown model {name!r}: choose one of {', '.join(MODEL_NAMES)}")
    return name


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Load a weights file: a raw state_dict, or a dict holding one under
    ``state_dict``/``model``; a DataParallel ``module.`` prefix is removed."""
    if not path.is_file():
        raise InputError(f"weights file not found: {path}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a bad file
        raise InputError(f"cannot read weights file {path}: {exc}") from None
    for key in ("state_dict", "model", "model_state_dict"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
            break
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise InputError(f"{path} holds no state_dict of tensors")
    return {k.removeprefix("module."): v for k, v in obj.items()}


def _load_backbone_weights(net: nn.Module, state: dict[str, torch.Tensor], head_name: str,
                           path: Path) -> None:
    """Load every backbone tensor strictly; the classifier head may differ in class count."""
    own = net.state_dict()
    head_keys = {k for k in state if k.startswith(head_name + ".")}
    head_fits = all(k in own and own[k].shape == state[k].shape for k in head_keys)
    if not head_fits:
        state = {k: v for k, v in state.items() if k not in head_keys}
    # Shapes first: PyTorch reports every mismatch in one long RuntimeError.
    wrong = [f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in state
             if k in own and own[k].shape != state[k].shape]
    if wrong:
        raise InputError(f"{path.name} does not fit this model: {len(wrong)} tensors have other "
                         f"shapes (first: {'; '.join(wrong[:2])}); is it for another "
                         "architecture?")
    missing, unexpected = net.load_state_dict(state, strict=False)
    missing = [k for k in missing if not (k.startswith(head_name + ".") and not head_fits)]
    if missing or unexpected:
        raise InputError(
            f"{path.name} does not fit this model: {len(missing)} missing keys "
            f"(e.g. {missing[:2]}), {len(unexpected)} unexpected (e.g. {unexpected[:2]})"
        )


def build_backbone(name: str, weights: Path | None, num_classes: int,
                   native_size: int) -> Backbone:
    """Build ``name`` with optional ``weights`` and strip its classifier head.

    Parameters
    ----------
    num_classes : int
        Size of the head kept aside for fine-tuning.
    native_size : int
        Side of the dataset's images; torchvision ResNets use it clamped to [32, 224].
    """
    check_model_name(name)
    if name == "pixels":
        raise InputError("'pixels' has no network")
    if name in DEPTHS:
        net: nn.Module = CifarResNet(DEPTHS[name], num_classes=10)
        head_name, dim, size = "linear", 64, 32
    else:
        import torchvision

        net = getattr(torchvision.models, name)(weights=None)
        head_name, dim, size = "fc", net.fc.in_features, min(224, max(32, native_size))
    if weights is not None:
        _load_backbone_weights(net, read_state_dict(weights), head_name, weights)
    old_head: nn.Linear = getattr(net, head_name)
    head = old_head if old_head.out_features == num_classes else nn.Linear(dim, num_classes)
    setattr(net, head_name, nn.Identity())
    return Backbone(net=net, head=head, feature_dim=dim, input_size=size,
                    pretrained=weights is not None)




@functools.cache
def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware (AVX512-BF16 or AMX).

    Without it PyTorch emulates bf16 and autocast is slower than fp32, so ``auto`` must
    not pick it. Linux only; elsewhere the answer is a safe ``False``.
    """
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_precision(requested: str, device: torch.device) -> str:
    """``auto`` → bf16 on CUDA and on CPUs with native bf16, else fp32.

    Raises
    ------
    InputError
        For an unknown name.
    """
    if requested not in PRECISIONS:
        raise InputError(f"unknown precision {requested!r}: use {', '.join(PRECISIONS)}")
    if requested != "auto":
        return requested
    return "bf16" if device.type == "cuda" or cpu_has_native_bf16() else "fp32"


def pick_device(requested: str = "auto") -> torch.device:
    """``auto`` → CUDA when present, else CPU; an explicit CUDA request without one fails."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"device {requested!r} requested but CUDA is not available; use cpu")
    try:
        return torch.device(requested)
    except RuntimeError:
        raise InputError(f"unknown device {requested!r}: use auto, cpu or cuda[:N]") from None
