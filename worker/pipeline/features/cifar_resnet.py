"""CIFAR ResNets (He et al. 2016, 16/32/64 channels, option-A shortcuts).

The layout and parameter names match the public akamaster/pytorch_resnet_cifar10 weights,
so ``resnet20-*.th`` and ``resnet56-*.th`` load with ``strict=True`` once the ``module.``
prefix is removed.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class _ShortcutA(nn.Module):
    """Option-A shortcut: subsample by 2 and zero-pad the new channels (no parameters)."""

    def __init__(self, planes: int) -> None:
        super().__init__()
        self.pad = planes // 4

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))


class _BasicBlock(nn.Module):
    def __init__(self, in_planes: int, planes: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            self.shortcut = _ShortcutA(planes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """ResNet-(6n+2) for 32×32 inputs; ``forward_features`` gives the 64-d penultimate vector."""

    feature_dim = 64

    def __init__(self, depth: int, num_classes: int = 10) -> None:
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._stage(16, 16, n, 1)
        self.layer2 = self._stage(16, 32, n, 2)
        self.layer3 = self._stage(32, 64, n, 2)
        self.linear = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                nn.init.kaiming_normal_(m.weight)

    @staticmethod
    def _stage(in_planes: int, planes: int, blocks: int, stride: int) -> nn.Sequential:
        layers = [_BasicBlock(in_planes, planes, stride)]
        layers += [_BasicBlock(planes, planes, 1) for _ in range(blocks - 1)]
        return nn.Sequential(*layers)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) images → (B, 64) features after global average pooling."""
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        return torch.flatten(F.adaptive_avg_pool2d(out, 1), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.forward_features(x))
