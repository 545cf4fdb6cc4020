"""Where a training's batches come from: the subset in memory on the device, or streamed
from the image files; and the augmentation applied on the device.

Both sources yield exactly :func:`worker.train.plan.steps_per_epoch` batches of
``batch // world`` samples per rank and epoch (incomplete batches are dropped), the number
the planner shows the user before the training starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from worker.pipeline.storage.rundir import RunDir
from worker.train.data import FileImages, TrainData, in_memory, load_train_data, streaming_sets
from worker.train.plan import steps_per_epoch


def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Per-sample random crop (padding S/8) and horizontal flip of a uint8 batch.

    Parameters
    ----------
    x : uint8 (B, C, S, S) on the training device
    gen : the epoch's generator on the same device (seeded: runs repeat exactly)

    Returns
    -------
    uint8 (B, C, S, S)
    """
    b, c, s, _ = x.shape
    pad = max(1, s // 8)
    xp = F.pad(x, (pad, pad, pad, pad))
    oy = torch.randint(0, 2 * pad + 1, (b,), generator=gen, device=x.device)
    ox = torch.randint(0, 2 * pad + 1, (b,), generator=gen, device=x.device)
    ar = torch.arange(s, device=x.device)
    rows = (oy[:, None] + ar)[:, None, :, None]
    cols = (ox[:, None] + ar)[:, None, None, :]
    out = xp[torch.arange(b, device=x.device)[:, None, None, None],
             torch.arange(c, device=x.device)[None, :, None, None], rows, cols]
    flip = torch.rand(b, generator=gen, device=x.device) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(3), out)


@dataclass(frozen=True)
class RankShare:
    """This process's share of each step: rank ``rank`` of ``world`` processes on
    ``device``, each taking ``batch // world`` of the ``batch`` samples a step holds."""

    device: torch.device
    rank: int
    world: int
    batch: int


class InMemory:
    """The whole subset as a uint8 tensor on the device; each rank takes its slice of one
    shared permutation per epoch."""

    kind = "in-memory"

    def __init__(self, data: TrainData, share: RankShare) -> None:
        device, rank, world, batch = share.device, share.rank, share.world, share.batch
        self.x = torch.from_numpy(data.x_train).to(device)
        self.y = torch.from_numpy(data.y_train).to(device)
        self.x_test = torch.from_numpy(data.x_test).to(device)
        self.y_test = torch.from_numpy(data.y_test).to(device)
        leaked = data.test_leaked if data.test_leaked is not None else \
            np.zeros(len(data.y_test), bool)
        self.leaked_test = torch.from_numpy(np.asarray(leaked, bool)).to(device)
        self.rank, self.world, self.per_rank, self.device = rank, world, batch // world, device
        self.mean = self.x.float().mean(dim=(0, 2, 3), keepdim=True) / 255.0
        self.std = self.x.float().std(dim=(0, 2, 3), keepdim=True).clamp_min(1.0) / 255.0
        self.n_classes, self.image_size = len(data.classes), int(self.x.shape[-1])
        self.train_size, self.test_size = len(self.x), len(self.x_test)
        self.test_source = data.test_source
        self.steps_per_epoch = steps_per_epoch(len(self.x), batch, world)

    def train_batches(self, epoch: int, gen: torch.Generator):  # noqa: ANN201 - generator
        """(uint8 (b, C, S, S), int64 (b,)) per step, b = batch // world."""
        perm = torch.randperm(len(self.x), generator=gen, device=self.device)
        mine = perm[self.rank::self.world]
        for k in range(self.steps_per_epoch):
            idx = mine[k * self.per_rank:(k + 1) * self.per_rank]
            yield self.x[idx], self.y[idx]

    def test_batches(self):  # noqa: ANN201 - generator
        """(images, labels, leaked) per batch of this rank's share of the test set."""
        shard = torch.arange(self.rank, len(self.x_test), self.world, device=self.device)
        for s in range(0, len(shard), 1024):
            part = shard[s:s + 1024]
            yield self.x_test[part], self.y_test[part], self.leaked_test[part]


class Streaming:
    """Images decoded from their files by DataLoader workers; DistributedSampler shards."""

    kind = "streaming"

    def __init__(self, train: FileImages, test: FileImages, test_source: str,
                 share: RankShare, seed: int) -> None:
        from torch.utils.data import DataLoader, Subset
        from torch.utils.data.distributed import DistributedSampler

        device, rank, world, batch = share.device, share.rank, share.world, share.batch
        workers = max(0, min(4, (os.cpu_count() or 1) // world - 1))
        per_rank = batch // world
        self.sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True,
                                          seed=seed, drop_last=True)
        self.loader = DataLoader(train, batch_size=per_rank, sampler=self.sampler,
                                 num_workers=workers, drop_last=True,
                                 pin_memory=device.type == "cuda")
        self.test_loader = DataLoader(Subset(test, range(rank, len(test), world)),
                                      batch_size=256, num_workers=workers)
        self.device = device
        # ImageNet statistics: streaming never holds the whole set to measure its own.
        self.mean = torch.tensor([0.485, 0.456, 0.406], device=device).view(1, 3, 1, 1)
        self.std = torch.tensor([0.229, 0.224, 0.225], device=device).view(1, 3, 1, 1)
        self.n_classes = len(train.ds.samples.classes)
        self.image_size = train.size
        self.train_size, self.test_size, self.test_source = len(train), len(test), test_source
        # The sampler's floor(n / world) per rank, then whole batches: the planner's count.
        self.steps_per_epoch = steps_per_epoch(len(train), batch, world)

    def train_batches(self, epoch: int, gen: torch.Generator):  # noqa: ANN201 - generator
        self.sampler.set_epoch(epoch)
        for x, y in self.loader:
            yield x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)

    def test_batches(self):  # noqa: ANN201 - generator
        """(images, labels, leaked) per batch of this rank's share of the test set."""
        for x, y, leaked in self.test_loader:
            yield x.to(self.device), y.to(self.device), leaked.to(self.device)


Source = InMemory | Streaming


def open_source(run: RunDir, out: Path, device: torch.device, rank: int, world: int,
                batch: int, seed: int) -> Source:
    """The training's subset (``out/subset.npy``, with ``out/subset_labels.npy``: the
    labels to train with, reviewers' relabels applied) from memory when ingest's thumbnails
    are the images themselves, else streamed from the files."""
    subset = np.load(out / "subset.npy")
    labels_path = out / "subset_labels.npy"  # older trainings lack it: the given labels
    labels = np.load(labels_path) if labels_path.is_file() else None
    share = RankShare(device, rank, world, batch)
    if in_memory(run):
        return InMemory(load_train_data(run, subset, labels), share)
    return Streaming(*streaming_sets(run, subset, labels), share, seed)
