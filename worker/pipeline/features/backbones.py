"""Backbones whose penultimate layer gives the features.

Names: ``efficientnet-lite0`` (ImageNet-pretrained, weights from an installed package; the
default for images), torchvision ``resnet18/34/50/101/152`` (local weights file or random
init), CIFAR ``cifar-resnet20/32/44/56`` (akamaster weight files), and ``pixels`` (no
network). Nothing is ever downloaded: weights come from a file the user names or from an
installed package.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from worker.pipeline.choices import DEPTHS, MODEL_NAMES, PRECISIONS, PRETRAINED_MODELS
from worker.pipeline.errors import InputError
from worker.pipeline.features import efficientnet
from worker.pipeline.features.cifar_resnet import CifarResNet

# Input side for efficientnet-lite0 when none is asked for, chosen from the resolution
# table in docs/benchmarks.md (linear probe, detection F1 and images/s at 96–224 px).
EFFICIENTNET_SIZE = 160

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
        1280 for EfficientNet-Lite0, 512 for ResNet-18/34, 2048 for ResNet-50/101/152, 64
        for CIFAR ResNets.
    input_size : int
        Square side images are resized to.
    pretrained : bool
        Whether weights were loaded (else the network starts from random initialisation).
    weights : Path or None
        The file the weights came from (the user's, or the installed package's).
    mean, std : tuple of float
        Per-channel normalisation applied to [0, 1] pixels.
    """

    net: nn.Module
    head: nn.Linear
    feature_dim: int
    input_size: int
    pretrained: bool = False
    weights: Path | None = None
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD


def check_model_name(name: str) -> str:
    if name not in MODEL_NAMES:
        raise InputError(f"unknown model {name!r}: choose one of {', '.join(MODEL_NAMES)}")
    return name


def is_pretrained(model: str, weights: Path | None) -> bool | None:
    """Whether ``model``'s features come from learned weights: None for ``pixels`` (no
    network), True with a weights file or for a model whose weights come installed, else
    False (random initialisation)."""
    if model == "pixels":
        return None
    return weights is not None or model in PRETRAINED_MODELS


def random_weights_warning(model: str | None, weights: Path | None) -> str | None:
    """The one-line warning for a network that starts from random weights, or None."""
    if model is None or is_pretrained(model, weights) is not False:
        return None
    return (f"warning: {model} has random weights (no --weights file): its features know "
            "little about your images, so the flags will be near chance; use the default "
            "--model efficientnet-lite0, give --weights, or add --finetune")


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
                   native_size: int, input_size: int | None = None) -> Backbone:
    """Build ``name`` with optional ``weights`` and strip its classifier head.

    Parameters
    ----------
    weights : Path or None
        A weights file; None gives random weights, except for ``efficientnet-lite0``,
        whose ImageNet weights come from the installed package.
    num_classes : int
        Size of the head kept aside for fine-tuning.
    native_size : int
        Side of the dataset's images; torchvision ResNets use it clamped to [32, 224].
    input_size : int, optional
        Side images are resized to; None for the model's default.
    """
    check_model_name(name)
    if name == "pixels":
        raise InputError("'pixels' has no network")
    if name == "efficientnet-lite0":
        return _efficientnet(weights, num_classes, input_size)
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
    return Backbone(net=net, head=head, feature_dim=dim, input_size=input_size or size,
                    pretrained=weights is not None, weights=weights)


def _efficientnet(weights: Path | None, num_classes: int, input_size: int | None) -> Backbone:
    """EfficientNet-Lite0 with the package's ImageNet weights, or the user's file."""
    net = efficientnet.create()
    path = weights or efficientnet.package_weights()
    net.load_state_dict(efficientnet.map_state_dict(read_state_dict(path), net, path.name))
    old_head: nn.Linear = net.classifier
    head = old_head if old_head.out_features == num_classes else \
        nn.Linear(efficientnet.FEATURE_DIM, num_classes)
    net.classifier = nn.Identity()
    return Backbone(net=net, head=head, feature_dim=efficientnet.FEATURE_DIM,
                    input_size=input_size or EFFICIENTNET_SIZE, pretrained=True, weights=path,
                    mean=efficientnet.MEAN, std=efficientnet.STD)


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


def resolve_precision(requested: str, device: torch.device,
                      timer: Callable[[str], float] | None = None, key: str = "") -> str:
    """``auto`` → bf16 on CUDA; fp32 on CPUs that emulate bf16; on CPUs with native bf16,
    whichever of the two ``timer`` measures faster for ``key`` (cached per machine), or
    bf16 when no timer is given.

    Native bf16 is not always faster: on an Intel host with AVX512-BF16 and no AMX, CIFAR
    ResNet-56 ran at 421 images/s in bf16 against 449 in fp32, while on this AMD EPYC
    EfficientNet-Lite0 ran 1.9× faster in bf16. So the choice is timed, not guessed.

    Parameters
    ----------
    timer : callable, optional
        ``timer(precision) -> seconds`` for one small batch of the real network.
    key : str
        What the timing depends on besides the machine (model and input size).

    Raises
    ------
    InputError
        For an unknown name.
    """
    if requested not in PRECISIONS:
        raise InputError(f"unknown precision {requested!r}: use {', '.join(PRECISIONS)}")
    if requested != "auto":
        return requested
    if device.type == "cuda":
        return "bf16"
    if not cpu_has_native_bf16():
        return "fp32"
    if timer is None:
        return "bf16"
    return _timed_choice(key, timer)


def precision_cache() -> Path:
    """Where timed precision choices are kept: ``$CURATOR_CACHE_DIR/precision.json``
    (default ``~/.cache/tsne-curator``)."""
    root = os.environ.get("CURATOR_CACHE_DIR") or Path.home() / ".cache" / "tsne-curator"
    return Path(root) / "precision.json"


def _machine_key() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in _cpuinfo_lines()
                if line.startswith("model name")), "cpu")
    return f"{cpu}|{torch.get_num_threads()} threads|torch {torch.__version__}"


def _cpuinfo_lines() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def _timed_choice(key: str, timer: Callable[[str], float]) -> str:
    """The faster precision for ``key`` on this machine: timed once, then read back."""
    path = precision_cache()
    full = f"{key}|{_machine_key()}"
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    if known.get(full) in ("fp32", "bf16"):
        return known[full]
    # Best of three after a warm-up call, for each: one batch is enough to see a 5% gap.
    best = {p: min(timer(p) for _ in range(4)) for p in ("fp32", "bf16")}
    choice = "bf16" if best["bf16"] < best["fp32"] else "fp32"
    known[full] = choice
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only means timing again next time
    return choice


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
