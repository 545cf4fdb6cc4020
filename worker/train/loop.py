"""The DDP training entry point: ``torchrun --nproc_per_node=N -m worker.train --out DIR``.

``DIR/config.json`` and ``DIR/subset.npy`` (written by :mod:`worker.train.launch`) say what
to train. The dataset sits in memory as a uint8 tensor on the device and is augmented there
(random crop with padding, horizontal flip), as the fastest CIFAR trainers do. CUDA: NCCL,
bf16 autocast, channels_last. CPU: gloo.

Rank 0 alone writes ``metrics.jsonl`` (one line per epoch), ``progress.json`` (epoch and
optimizer step, at most twice a second), ``checkpoint.pt`` (every epoch, atomically) and
``summary.json``. Every rank writes ``rank<r>.checksum``, a sha256
of its final weights, so replicas can be checked to agree. SIGTERM stops every rank at the
same step; the last checkpoint stays usable and the run resumes from it when started again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from worker.pipeline.rundir import RunDir, atomic_path, write_text

from .data import FileImages, in_memory, load_train_data, streaming_sets
from .model import build_model, lr_at, make_optimizer
from .plan import scaled_lr


class _Stop:
    requested = False

    @classmethod
    def handler(cls, signum, frame) -> None:  # noqa: ANN001
        cls.requested = True


def _setup() -> tuple[int, int, torch.device]:
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    use_cuda = torch.cuda.is_available() and os.environ.get("CURATOR_DEVICE", "auto") != "cpu"
    device = torch.device(f"cuda:{local}") if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    else:
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
    if world > 1:
        dist.init_process_group("nccl" if use_cuda else "gloo")
    return rank, world, device


def _augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Per-sample random crop (padding S/8) and horizontal flip of a uint8 batch."""
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


def _all_sum(values: list[float], device: torch.device, world: int) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64, device=device)
    if world > 1:
        dist.all_reduce(t)
    return t.tolist()


def _sync_buffers(model: nn.Module, world: int) -> None:
    """Give every rank rank 0's BatchNorm statistics (DDP syncs weights, not these)."""
    if world > 1:
        for buf in model.buffers():
            dist.broadcast(buf, 0)


def _checksum(model: nn.Module) -> str:
    """sha256 of every weight and buffer, in name order."""
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


class _InMemory:
    """The whole subset as a uint8 tensor on the device; each rank takes its slice of one
    shared permutation per epoch."""

    kind = "in-memory"

    def __init__(self, data, device: torch.device, rank: int, world: int,
                 per_rank: int) -> None:
        self.x = torch.from_numpy(data.x_train).to(device)
        self.y = torch.from_numpy(data.y_train).to(device)
        self.x_test = torch.from_numpy(data.x_test).to(device)
        self.y_test = torch.from_numpy(data.y_test).to(device)
        self.rank, self.world, self.per_rank, self.device = rank, world, per_rank, device
        self.mean = self.x.float().mean(dim=(0, 2, 3), keepdim=True) / 255.0
        self.std = self.x.float().std(dim=(0, 2, 3), keepdim=True).clamp_min(1.0) / 255.0
        self.n_classes, self.image_size = len(data.classes), int(self.x.shape[-1])
        self.train_size, self.test_size = len(self.x), len(self.x_test)
        self.test_source = data.test_source
        self.steps_per_epoch = max(1, (len(self.x) // world) // per_rank)

    def train_batches(self, epoch: int, gen: torch.Generator):
        perm = torch.randperm(len(self.x), generator=gen, device=self.device)
        mine = perm[self.rank::self.world]
        for k in range(self.steps_per_epoch):
            idx = mine[k * self.per_rank:(k + 1) * self.per_rank]
            yield self.x[idx], self.y[idx]

    def test_batches(self):
        shard = torch.arange(self.rank, len(self.x_test), self.world, device=self.device)
        for s in range(0, len(shard), 1024):
            part = shard[s:s + 1024]
            yield self.x_test[part], self.y_test[part]


class _Streaming:
    """Images decoded from their files by DataLoader workers; DistributedSampler shards."""

    kind = "streaming"

    def __init__(self, train: FileImages, test: FileImages, test_source: str,
                 device: torch.device, rank: int, world: int, per_rank: int,
                 seed: int) -> None:
        from torch.utils.data import DataLoader, Subset
        from torch.utils.data.distributed import DistributedSampler

        workers = max(0, min(4, (os.cpu_count() or 1) // world - 1))
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
        self.steps_per_epoch = max(1, len(self.loader))

    def train_batches(self, epoch: int, gen: torch.Generator):
        self.sampler.set_epoch(epoch)
        for x, y in self.loader:
            yield x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)

    def test_batches(self):
        for x, y in self.test_loader:
            yield x.to(self.device), y.to(self.device)


def main(argv: list[str] | None = None) -> int:  # noqa: C901, PLR0912, PLR0915 - issue 23: a Trainer
    ap = argparse.ArgumentParser(prog="python -m worker.train")
    ap.add_argument("--out", type=Path, required=True)
    out = ap.parse_args(argv).out
    cfg = json.loads((out / "config.json").read_text())
    signal.signal(signal.SIGTERM, _Stop.handler)
    rank, world, device = _setup()
    cuda = device.type == "cuda"
    torch.manual_seed(cfg["seed"])

    run = RunDir(cfg["run"])
    subset = np.load(out / "subset.npy")
    # The labels to train with (reviewers' relabels applied); older trainings lack the file.
    labels = np.load(out / "subset_labels.npy") if (out / "subset_labels.npy").is_file() \
        else None
    per_rank = cfg["batch_size"] // world
    if in_memory(run):
        source = _InMemory(load_train_data(run, subset, labels), device, rank, world, per_rank)
    else:
        source = _Streaming(*streaming_sets(run, subset, labels), device, rank, world,
                            per_rank, cfg["seed"])
    mean, std = source.mean, source.std

    def prep(batch: torch.Tensor) -> torch.Tensor:
        x = (batch.float() / 255.0 - mean) / std
        return x.contiguous(memory_format=torch.channels_last) if cuda else x

    model = build_model(cfg["model"], source.n_classes, source.image_size).to(device)
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    steps_per_epoch = source.steps_per_epoch
    total_steps = steps_per_epoch * cfg["epochs"]
    peak = scaled_lr(cfg["lr"], per_rank * world)
    optim = make_optimizer(model, cfg["optimizer"], peak, cfg["weight_decay"])
    warmup = steps_per_epoch * cfg["warmup_epochs"]

    start_epoch, step = 0, 0
    ckpt_path = out / "checkpoint.pt"
    if ckpt_path.is_file():
        ckpt = torch.load(ckpt_path, map_location=device, weights_only=False)
        model.load_state_dict(ckpt["model"])
        optim.load_state_dict(ckpt["optimizer"])
        start_epoch, step = ckpt["epoch"] + 1, ckpt["step"]
    metrics_path = out / "metrics.jsonl"
    if rank == 0:
        kept = [ln for ln in (metrics_path.read_text().splitlines()
                              if metrics_path.is_file() else [])
                if json.loads(ln)["epoch"] < start_epoch]
        write_text(metrics_path, "".join(ln + "\n" for ln in kept))

    def save(epoch: int) -> None:
        if rank == 0:
            with atomic_path(ckpt_path, ".pt") as tmp:
                torch.save({"epoch": epoch, "step": step, "model": model.state_dict(),
                            "optimizer": optim.state_dict(), "config": cfg}, tmp)

    def beat(epoch: int) -> None:
        # Per-step position for the launcher's progress bar and ETA (rank 0, atomic).
        if rank == 0:
            write_text(out / "progress.json", json.dumps(
                {"epoch": epoch, "step": step, "total_steps": total_steps}) + "\n")

    stopped = False
    t_start = last_beat = time.perf_counter()
    images_seen = 0
    for epoch in range(start_epoch, cfg["epochs"]):
        ddp.train()
        gen = torch.Generator(device=device).manual_seed(cfg["seed"] * 100_003 + epoch)
        t0 = time.perf_counter()
        loss_sum = correct = seen = 0.0
        for raw, y in source.train_batches(epoch, gen):
            stop = _all_sum([float(_Stop.requested)], device, world)[0] > 0
            if stop:
                stopped = True
                break
            x = prep(_augment(raw, gen))
            for group in optim.param_groups:
                group["lr"] = lr_at(step, total_steps, warmup, peak)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
                logits = ddp(x)
                loss = F.cross_entropy(logits, y, label_smoothing=cfg["label_smoothing"])
            optim.zero_grad(set_to_none=True)
            loss.backward()
            optim.step()
            step += 1
            if time.perf_counter() - last_beat >= 0.5:
                beat(epoch)
                last_beat = time.perf_counter()
            loss_sum += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
        if stopped:
            break
        epoch_s = time.perf_counter() - t0
        _sync_buffers(model, world)
        ddp.eval()
        test_correct = test_seen = 0.0
        with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                    enabled=cuda):
            for raw, y in source.test_batches():
                test_correct += (model(prep(raw)).argmax(1) == y).sum().item()
                test_seen += len(y)
        loss_sum, correct, seen, test_correct, test_seen = _all_sum(
            [loss_sum, correct, seen, test_correct, test_seen], device, world)
        images_seen += seen
        save(epoch)
        beat(epoch + 1)
        if rank == 0:
            row = {"epoch": epoch, "loss": loss_sum / seen, "train_acc": correct / seen,
                   "test_acc": test_correct / max(1.0, test_seen),
                   "lr": optim.param_groups[0]["lr"], "epoch_seconds": epoch_s,
                   "images_per_s": seen / epoch_s}
            with open(metrics_path, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    _sync_buffers(model, world)
    (out / f"rank{rank}.checksum").write_text(_checksum(model) + "\n")
    if rank == 0:
        rows = [json.loads(ln) for ln in metrics_path.read_text().splitlines()]
        elapsed = time.perf_counter() - t_start
        summary = {
            "status": "stopped" if stopped else "completed", "epochs_done": len(rows),
            "final_test_acc": rows[-1]["test_acc"] if rows else None,
            "best_test_acc": max((r["test_acc"] for r in rows), default=None),
            "train_size": source.train_size, "test_size": source.test_size,
            "test_source": source.test_source, "data": source.kind,
            "world_size": world, "device": device.type,
            "images_per_s": images_seen / elapsed if elapsed > 0 else None,
            "images_per_s_per_process": (images_seen / elapsed / world) if elapsed > 0 else None,
            "seconds": elapsed, "config": cfg,
        }
        write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return 0
