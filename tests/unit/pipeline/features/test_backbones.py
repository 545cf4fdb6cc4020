"""The backbones (worker/pipeline/features/backbones.py): the pretrained default's weights
mapped right (a known photograph gets its ImageNet class), folded BatchNorm exact, weights
files for another network refused in one line, which networks are pretrained, and the
precision chosen and timed once per machine."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from worker.pipeline.errors import InputError
from worker.pipeline.features import backbones as models
from worker.pipeline.features import efficientnet
from worker.pipeline.features.backbones import (
    build_backbone,
    pick_device,
    random_weights_warning,
)
from worker.pipeline.features.extraction import _inference_net


@pytest.fixture(scope="module")
def lite0():
    return build_backbone("efficientnet-lite0", None, 1000, 32, 224)  # keeps the ImageNet head


def _photo(name: str, size: int) -> torch.Tensor:
    """A photograph scikit-learn ships, centre-cropped square, as (1, 3, S, S) in [0, 1]."""
    from PIL import Image
    from sklearn.datasets import load_sample_image

    a = load_sample_image(name)
    h, w, _ = a.shape
    s = min(h, w)
    a = a[(h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s]
    img = Image.fromarray(a).resize((size, size), Image.Resampling.BICUBIC)
    return torch.from_numpy(np.array(img)).permute(2, 0, 1).float()[None] / 255.0


def test_a_known_photograph_gets_its_imagenet_class(lite0):
    """The package's weights reach the right tensors: the Summer Palace photograph is
    'palace' (ImageNet class 698), as the original Lite0 says; a wrong mapping gives
    noise."""
    from timm.data import ImageNetInfo

    net = torch.nn.Sequential(lite0.net, lite0.head).eval()
    assert lite0.pretrained and lite0.feature_dim == 1280 and lite0.head.out_features == 1000
    x = (_photo("china.jpg", 224) - 0.5) / 0.5
    with torch.inference_mode():
        top = int(net(x).argmax())
    assert top == 698, ImageNetInfo().index_to_description(top)


def test_folded_batchnorm_gives_the_same_features(lite0):
    plain = build_backbone("efficientnet-lite0", None, 10, 32, 160).net.eval()
    fast = _inference_net(build_backbone("efficientnet-lite0", None, 10, 32, 160).net,
                          torch.device("cpu"))
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in fast.modules())
    x = torch.rand(4, 3, 160, 160) * 2 - 1
    with torch.inference_mode():
        a, b = plain(x), fast(x.contiguous(memory_format=torch.channels_last))
    assert torch.nn.functional.cosine_similarity(a, b).min() > 0.9999


def test_a_file_for_another_network_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "r20.pth"
    torch.save(build_backbone("cifar-resnet20", None, 10, 32).net.state_dict(), bad)
    with pytest.raises(InputError, match="does not fit efficientnet-lite0"):
        build_backbone("efficientnet-lite0", bad, 10, 32)
    # Its own checkpoint in timm's key layout loads as it is.
    own = tmp_path / "timm.pth"
    torch.save(efficientnet.create().state_dict(), own)
    assert build_backbone("efficientnet-lite0", own, 10, 32).weights == own


def test_which_networks_are_pretrained():
    assert models.is_pretrained("efficientnet-lite0", None)
    assert models.is_pretrained("resnet18", None) is False
    assert models.is_pretrained("pixels", None) is None
    assert random_weights_warning("resnet18", None).startswith("warning: resnet18 has random")
    assert random_weights_warning(None, None) is None  # the default is pretrained
    assert random_weights_warning("efficientnet-lite0", None) is None


def test_auto_precision_is_timed_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda: True)
    calls = []

    def timer(precision: str) -> float:
        calls.append(precision)
        return {"fp32": 1.0, "bf16": 2.0}[precision]  # bf16 slower here, as on some CPUs

    cpu = torch.device("cpu")
    assert models.resolve_precision("auto", cpu, timer, key="m@160") == "fp32"
    n = len(calls)
    assert n == 8 and models.resolve_precision("auto", cpu, timer, key="m@160") == "fp32"
    assert len(calls) == n  # read back, not timed again
    assert models.resolve_precision("auto", cpu, lambda p: {"fp32": 2, "bf16": 1}[p],
                                    key="m@224") == "bf16"
    cached = json.loads((tmp_path / "precision.json").read_text())
    assert sorted((k.split("|")[0], v) for k, v in cached.items()) == [("m@160", "fp32"),
                                                                     ("m@224", "bf16")]


def test_torchvision_resnet_weights_roundtrip(tmp_path):
    import torchvision

    net = torchvision.models.resnet18(weights=None, num_classes=7)
    torch.save({"state_dict": {f"module.{k}": v for k, v in net.state_dict().items()}},
               tmp_path / "r18.pth")
    bb = build_backbone("resnet18", tmp_path / "r18.pth", 7, 32)
    assert bb.feature_dim == 512 and bb.head.out_features == 7
    assert torch.equal(bb.net.conv1.weight, net.conv1.weight)


def test_unknown_model_and_device():
    with pytest.raises(InputError, match="unknown model"):
        build_backbone("vgg16", None, 10, 32)
    assert pick_device("auto").type in ("cpu", "cuda")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA is not available"):
            pick_device("cuda")


def test_precision_choice_and_fallback(monkeypatch):
    from worker.pipeline.features import backbones as models

    cpu = torch.device("cpu")
    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda: False)
    assert models.resolve_precision("auto", cpu) == "fp32"  # emulated bf16 would be slower
    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda: True)
    assert models.resolve_precision("auto", cpu) == "bf16"
    assert models.resolve_precision("fp32", cpu) == "fp32"
    assert models.resolve_precision("auto", torch.device("cuda")) == "bf16"
    with pytest.raises(InputError, match="unknown precision 'fp8'"):
        models.resolve_precision("fp8", cpu)
