"""The DDP training entry point: ``torchrun --nproc_per_node=N -m worker.train --out DIR``.

Shaped like pytorch/examples' ``multigpu_torchrun.py``: a typed config, a :class:`Trainer`
with ``_run_batch`` / ``_run_epoch`` / ``_save_snapshot``. ``DIR/config.json`` and
``DIR/subset.npy`` (written by :mod:`worker.train.launch`) say what to train; the batches
come from :mod:`worker.train.batches`. CUDA: NCCL, bf16 autocast, channels_last. CPU: gloo.

The step never waits for the host: loss and accuracy stay device tensors, summed over
ranks once per epoch, and the stop flag (SIGTERM) is agreed across ranks only every
``sync_every`` steps, where rank 0 also reads the running loss for ``progress.json`` (a
single process reads its own flag every step: no sync is needed for that).

Rank 0 alone writes ``metrics.jsonl`` (one line per epoch), ``progress.json`` (epoch and
optimizer step, at most twice a second), ``checkpoint.pt`` (atomically, at most every
:data:`SNAPSHOT_SECONDS`, at the end and on a stop) and
``summary.json``. Every rank writes ``rank<r>.checksum``, a sha256 of its final weights, so
replicas can be checked to agree. SIGTERM stops every rank at the same step; the last
checkpoint stays usable and the run resumes from it when started again.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import signal
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from worker.pipeline.storage.rundir import RunDir, atomic_path, write_text
from worker.train.batches import Source, augment, open_source
from worker.train.config import with_defaults
from worker.train.convergence import convergence_record
from worker.train.model import build_model, lr_at, make_optimizer
from worker.train.plan import scaled_lr

# Steps between host syncs (the stop flag agreed across ranks, the running loss read):
# a few a second on a GPU, so a stop or the progress bar is never far behind.
SYNC_EVERY = 16
BEAT_SECONDS = 0.5  # progress.json at most this often
# checkpoint.pt is written at most this often, at the end, and on a stop. Every epoch was
# too often on a GPU: a CIFAR epoch of ResNet-18 takes about half a second there, and its
# 89 MB checkpoint 0.12-0.2 s to write (docs/benchmarks.md, "The grid on one H200"). Between
# writes the last finished epoch's state is kept on the device, so a stop still resumes
# from the last finished epoch; only a killed process loses up to this much training.
SNAPSHOT_SECONDS = 30.0


@dataclass(frozen=True)
class LoopConfig:
    """What the loop reads of ``config.json`` (every setting resolved by the planner).

    ``raw`` is the whole file, stored in the checkpoint and the summary as it came.
    ``sync_every`` comes from the config's ``extra`` (bench/train.py sets 1 to measure a
    loop that syncs with the host on every step, as this one once did).
    """

    run: str
    model: str
    epochs: int
    batch_size: int
    lr: float
    optimizer: str
    weight_decay: float
    warmup_epochs: int
    label_smoothing: float
    seed: int
    compile: str = "off"
    sync_every: int = SYNC_EVERY
    raw: dict = field(default_factory=dict, compare=False)

    @classmethod
    def read(cls, out: Path) -> LoopConfig:
        raw = with_defaults(json.loads((out / "config.json").read_text()))
        names = {f.name for f in fields(cls)} - {"sync_every", "raw"}
        every = int((raw.get("extra") or {}).get("sync_every", SYNC_EVERY))
        return cls(**{k: raw[k] for k in names}, sync_every=max(1, every), raw=raw)


@dataclass(frozen=True)
class Placement:
    """This process's place: rank, world size, device."""

    rank: int
    world: int
    device: torch.device

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"


def setup() -> Placement:
    """Rank, world and device from torchrun's environment; the process group when world > 1
    (NCCL on CUDA, gloo on CPU, where each process takes its share of the cores)."""
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
    return Placement(rank, world, device)


class _Stop:
    """Set by SIGTERM; read at the next sync point."""

    requested = False

    @classmethod
    def handler(cls, signum, frame) -> None:  # noqa: ANN001
        cls.requested = True


def checksum(model: nn.Module) -> str:
    """sha256 of every weight and buffer, in name order."""
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


class Trainer:
    """One training: the model, its optimizer and schedule, and the files rank 0 writes.

    Parameters
    ----------
    cfg : LoopConfig
    out : the training's folder (``<run>/train/<name>/``)
    place : Placement
    source : the batches (:mod:`worker.train.batches`)
    """

    def __init__(self, cfg: LoopConfig, out: Path, place: Placement, source: Source) -> None:
        self.cfg, self.out, self.place, self.source = cfg, out, place, source
        model = build_model(cfg.model, source.n_classes, source.image_size).to(place.device)
        if place.cuda:
            model = model.to(memory_format=torch.channels_last)
        self.model = model
        self.ddp = nn.parallel.DistributedDataParallel(model) if place.world > 1 else model
        if cfg.compile != "off":
            # The training step's forward and backward only: evaluation runs self.model
            # eager (its last batch has another size, which would compile again), and the
            # weights are the same tensors, so checkpoints are those of an eager run.
            self.ddp = torch.compile(self.ddp, mode=None if cfg.compile == "default"
                                     else cfg.compile)
        self.steps_per_epoch = source.steps_per_epoch
        self.total_steps = self.steps_per_epoch * cfg.epochs
        self.warmup = self.steps_per_epoch * cfg.warmup_epochs
        self.peak = scaled_lr(cfg.lr, cfg.batch_size // place.world * place.world)
        self.optim = make_optimizer(model, cfg.optimizer, self.peak, cfg.weight_decay)
        self.step, self.start_epoch = 0, 0
        self.images_seen = 0.0
        self._last_beat, self._running_loss = 0.0, None
        self._last_save, self._unsaved = time.perf_counter(), None
        self.metrics_path = out / "metrics.jsonl"
        self.snapshot_path = out / "checkpoint.pt"
        self._load_snapshot()

    # ------------------------------------------------------------------ snapshots
    def _load_snapshot(self) -> None:
        """Resume from the last finished epoch, and forget metrics of any epoch after it."""
        if self.snapshot_path.is_file():
            snap = torch.load(self.snapshot_path, map_location=self.place.device,
                              weights_only=True)
            self.model.load_state_dict(snap["model"])
            self.optim.load_state_dict(snap["optimizer"])
            self.start_epoch, self.step = snap["epoch"] + 1, snap["step"]
        if self.place.rank == 0:
            lines = self.metrics_path.read_text().splitlines() \
                if self.metrics_path.is_file() else []
            kept = [ln for ln in lines if json.loads(ln)["epoch"] < self.start_epoch]
            write_text(self.metrics_path, "".join(ln + "\n" for ln in kept))

    def _save_snapshot(self, epoch: int) -> None:
        """Keep the finished ``epoch``'s state; write it when :data:`SNAPSHOT_SECONDS` have
        passed since the last write or it is the last epoch (rank 0)."""
        if self.place.rank != 0:
            return
        due = epoch == self.cfg.epochs - 1 or \
            time.perf_counter() - self._last_save >= SNAPSHOT_SECONDS
        # Kept for later, a copy on the device (milliseconds): the next steps change the
        # tensors. Written now, the live state needs none.
        keep = (lambda state: state) if due else copy.deepcopy
        self._unsaved = {"epoch": epoch, "step": self.step,
                         "model": keep(self.model.state_dict()),
                         "optimizer": keep(self.optim.state_dict()), "config": self.cfg.raw}
        if due:
            self._write_snapshot()

    def _write_snapshot(self) -> None:
        """``checkpoint.pt`` from the last finished epoch's kept state, if not yet written."""
        if self._unsaved is None:
            return
        with atomic_path(self.snapshot_path, ".pt") as tmp:
            torch.save(self._unsaved, tmp)
        self._unsaved, self._last_save = None, time.perf_counter()

    def _beat(self, epoch: int, force: bool = False) -> None:
        """``progress.json`` for the launcher's bar and ETA (rank 0, atomic)."""
        now = time.perf_counter()
        if self.place.rank != 0 or not (force or now - self._last_beat >= BEAT_SECONDS):
            return
        self._last_beat = now
        live = {"epoch": epoch, "step": self.step, "total_steps": self.total_steps}
        if self._running_loss is not None:
            live["loss"] = self._running_loss
        write_text(self.out / "progress.json", json.dumps(live) + "\n")

    # ------------------------------------------------------------------ steps
    def _prep(self, batch: torch.Tensor) -> torch.Tensor:
        x = (batch.float() / 255.0 - self.source.mean) / self.source.std
        return x.contiguous(memory_format=torch.channels_last) if self.place.cuda else x

    def _run_batch(self, raw: torch.Tensor, y: torch.Tensor, gen: torch.Generator,
                   sums: torch.Tensor) -> None:
        """One optimizer step; adds (loss · b, correct, b) into ``sums`` (float64 (3,) on
        the device) without reading anything back to the host."""
        x = self._prep(augment(raw, gen))
        for group in self.optim.param_groups:
            group["lr"] = lr_at(self.step, self.total_steps, self.warmup, self.peak)
        with torch.autocast(self.place.device.type, dtype=torch.bfloat16,
                            enabled=self.place.cuda):
            logits = self.ddp(x)
            loss = F.cross_entropy(logits, y, label_smoothing=self.cfg.label_smoothing)
        self.optim.zero_grad(set_to_none=True)
        loss.backward()
        self.optim.step()
        self.step += 1
        with torch.no_grad():  # in-place adds of device values and Python numbers: no sync
            sums[0] += loss.detach() * len(y)
            sums[1] += (logits.argmax(1) == y).sum()
            sums[2] += len(y)

    def _sync(self, sums: torch.Tensor) -> bool:
        """The sync point: True when any rank was asked to stop; rank 0 reads its running
        loss for the progress file."""
        flag = torch.tensor([float(_Stop.requested)], device=self.place.device)
        if self.place.world > 1:
            dist.all_reduce(flag)
        if self.place.rank == 0:
            loss_sum, _, seen = sums.tolist()
            self._running_loss = loss_sum / seen if seen else None
        return bool(flag.item() > 0)

    def _run_epoch(self, epoch: int) -> torch.Tensor | None:
        """One pass over this rank's share; its (loss · n, correct, n) summed over ranks,
        or None when a stop was agreed (at a sync point, the same step on every rank)."""
        self.ddp.train()
        gen = torch.Generator(device=self.place.device).manual_seed(
            self.cfg.seed * 100_003 + epoch)
        sums = torch.zeros(3, dtype=torch.float64, device=self.place.device)
        for k, (raw, y) in enumerate(self.source.train_batches(epoch, gen)):
            if k % self.cfg.sync_every == 0 and self._sync(sums):
                return None
            # One process: the flag is this process's own, read every step for free (a
            # CPU step can take seconds; a Cancel should not wait 16 of them).
            if self.place.world == 1 and _Stop.requested:
                return None
            self._run_batch(raw, y, gen, sums)
            self._beat(epoch)
        return self._all_sum(sums)

    def _all_sum(self, t: torch.Tensor) -> torch.Tensor:
        if self.place.world > 1:
            dist.all_reduce(t)
        return t

    def _sync_buffers(self) -> None:
        """Give every rank rank 0's BatchNorm statistics (DDP syncs weights, not these)."""
        if self.place.world > 1:
            for buf in self.model.buffers():
                dist.broadcast(buf, 0)

    @torch.inference_mode()
    def _evaluate(self) -> torch.Tensor:
        """(correct, n, correct, n without the leaked test images) on the test set, summed
        over ranks."""
        self._sync_buffers()
        self.ddp.eval()
        counts = torch.zeros(4, dtype=torch.float64, device=self.place.device)
        with torch.autocast(self.place.device.type, dtype=torch.bfloat16,
                            enabled=self.place.cuda):
            for raw, y, leaked in self.source.test_batches():
                right = self.model(self._prep(raw)).argmax(1) == y
                counts[0] += right.sum()
                counts[1] += len(y)
                counts[2] += (right & ~leaked).sum()
                counts[3] += (~leaked).sum()
        return self._all_sum(counts)

    # ------------------------------------------------------------------ the run
    def train(self) -> bool:
        """Every epoch left; False when stopped."""
        for epoch in range(self.start_epoch, self.cfg.epochs):
            t0 = time.perf_counter()
            sums = self._run_epoch(epoch)
            if sums is None:
                self._write_snapshot()  # the last finished epoch: a resume starts after it
                return False
            epoch_s = time.perf_counter() - t0
            loss_sum, correct, seen = sums.tolist()
            test_correct, test_seen, clean_correct, clean_seen = self._evaluate().tolist()
            self.images_seen += seen
            self._beat(epoch + 1, force=True)
            if self.place.rank == 0:
                row = {"epoch": epoch, "loss": loss_sum / seen, "train_acc": correct / seen,
                       "test_acc": test_correct / max(1.0, test_seen),
                       # Without the test images a train image nearly copies (leak
                       # findings): the figure comparable with published numbers.
                       "test_acc_without_leaks": clean_correct / max(1.0, clean_seen),
                       "test_leaked": int(test_seen - clean_seen),
                       "lr": self.optim.param_groups[0]["lr"], "epoch_seconds": epoch_s,
                       "images_per_s": seen / epoch_s}
                with open(self.metrics_path, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
            # after its metrics line: a checkpoint never names an epoch without one
            self._save_snapshot(epoch)
        return True

    def finish(self, completed: bool, elapsed: float) -> None:
        """Every rank's weight checksum; rank 0's ``summary.json``."""
        self._sync_buffers()
        (self.out / f"rank{self.place.rank}.checksum").write_text(checksum(self.model) + "\n")
        if self.place.rank != 0:
            return
        rows = [json.loads(ln) for ln in self.metrics_path.read_text().splitlines()]
        rate = self.images_seen / elapsed if elapsed > 0 else None
        summary = {
            "status": "completed" if completed else "stopped", "epochs_done": len(rows),
            "final_test_acc": rows[-1]["test_acc"] if rows else None,
            "best_test_acc": max((r["test_acc"] for r in rows), default=None),
            "final_test_acc_without_leaks": rows[-1].get("test_acc_without_leaks")
            if rows else None,
            "test_leaked": rows[-1].get("test_leaked", 0) if rows else 0,
            "train_size": self.source.train_size, "test_size": self.source.test_size,
            "test_source": self.source.test_source, "data": self.source.kind,
            "world_size": self.place.world, "device": self.place.device.type,
            "steps_per_epoch": self.steps_per_epoch, "steps": self.step,
            "images_per_s": rate,
            "images_per_s_per_process": rate / self.place.world if rate else None,
            "seconds": elapsed, "config": self.cfg.raw,
            **convergence_record(rows, self.source.test_size),
        }
        write_text(self.out / "summary.json", json.dumps(summary, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m worker.train")
    ap.add_argument("--out", type=Path, required=True)
    out = ap.parse_args(argv).out
    cfg = LoopConfig.read(out)
    signal.signal(signal.SIGTERM, _Stop.handler)
    place = setup()
    torch.manual_seed(cfg.seed)
    source = open_source(RunDir(cfg.run), out, place.device, place.rank, place.world,
                         cfg.batch_size, cfg.seed)
    trainer = Trainer(cfg, out, place, source)
    t0 = time.perf_counter()
    try:
        completed = trainer.train()
    except BaseException:  # an error in an epoch (out of memory, …): keep the last one's
        trainer._write_snapshot()
        raise
    trainer.finish(completed, time.perf_counter() - t0)
    if place.world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return 0
