"""Training settings chosen from the subset's size, and warnings for settings that cannot train.

A fixed batch of 256 on the 1,437-image digits demo gives five optimizer steps per epoch:
ten epochs end at chance. The rule here gives every run enough steps:

- batch size (global): the largest power of two ≤ n / 32, within [16, 256], so an epoch
  has at least about 32 steps (and never fewer processes' worth of samples than the world);
- epochs: enough for at least 600 optimizer steps, within [10, 100];
- learning rate: 0.1 at batch 256, scaled linearly with the batch (Goyal et al. 2017),
  which :func:`scaled_lr` gives and the training loop applies.

Settings the user gives are kept; the plan then warns when an epoch has fewer than 20
steps or the run fewer than 300 in all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from worker.pipeline.number_params import check
from worker.train.config import TrainConfig

MIN_STEPS_PER_EPOCH = 20
MIN_TOTAL_STEPS = 300
TARGET_TOTAL_STEPS = 600
BATCH_RANGE = (16, 256)
EPOCH_RANGE = (10, 100)
BASE_LR = 0.1  # at batch 256


def scaled_lr(base_lr: float, global_batch: int, base_batch: int = 256) -> float:
    """The linear scaling rule (Goyal et al. 2017): lr grows with the global batch."""
    return base_lr * global_batch / base_batch


def auto_batch_size(n: int, world: int = 1) -> int:
    """Largest power of two ≤ n / 32 within [16, 256], and at least ``world``."""
    lo, hi = BATCH_RANGE
    b = 2 ** int(math.floor(math.log2(max(1.0, n / 32))))
    return max(world, min(hi, max(lo, b)))


def steps_per_epoch(n: int, batch_size: int, world: int = 1) -> int:
    """Optimizer steps per epoch as the loop runs them: each rank takes ``batch // world``
    samples per step from its ``n // world`` share; incomplete batches are dropped."""
    per_rank = max(1, batch_size // world)
    return max(0, (n // world) // per_rank)


def auto_epochs(steps: int) -> int:
    """Enough epochs for at least 600 steps, within [10, 100]."""
    lo, hi = EPOCH_RANGE
    return min(hi, max(lo, math.ceil(TARGET_TOTAL_STEPS / max(1, steps))))


LARS_FROM = 4096  # the global batch from which ``--optimizer auto`` takes LARS


def optimizer_for(name: str, batch_size: int) -> str:
    """The optimizer a training runs: ``name``, or for ``auto`` LARS from a global batch
    of ``LARS_FROM`` (layer-wise rates keep large batches stable: You et al., the paper's
    setting) and SGD below."""
    if name != "auto":
        return name
    return "lars" if batch_size >= LARS_FROM else "sgd"


@dataclass(frozen=True)
class Plan:
    """What a training will do.

    Attributes
    ----------
    batch_size, epochs : int, resolved (given or chosen)
    lr : float, the base learning rate at batch 256 (given or 0.1)
    train_size : int, images trained on
    steps_per_epoch, total_steps : int
    chosen : tuple of str, which of batch size and epochs the rule chose
    warnings : tuple of str, one line each
    """

    batch_size: int
    epochs: int
    lr: float
    train_size: int
    steps_per_epoch: int
    total_steps: int
    chosen: tuple[str, ...]
    warnings: tuple[str, ...]

    def describe(self) -> str:
        auto = f" ({' and '.join(self.chosen)} chosen from the subset size)" if self.chosen else ""
        peak = scaled_lr(self.lr, self.batch_size)
        return (f"{self.train_size:,} images, batch {self.batch_size}, {self.epochs} epochs, "
                f"peak lr {peak:.3g}: {self.steps_per_epoch} steps per epoch, "
                f"{self.total_steps} in all{auto}")


def make_plan(n: int, batch_size: int | None, epochs: int | None, lr: float | None,
              world: int = 1) -> Plan:
    """Resolve the settings left out (None) from the subset size ``n`` and warn about
    given ones that leave too few optimizer steps."""
    chosen = tuple(name for name, v in (("batch size", batch_size), ("epochs", epochs))
                   if v is None)
    batch = batch_size if batch_size is not None else auto_batch_size(n, world)
    steps = steps_per_epoch(n, batch, world)
    ep = epochs if epochs is not None else auto_epochs(steps)
    warnings = []
    if steps < MIN_STEPS_PER_EPOCH:
        warnings.append(f"batch {batch} on {n:,} images gives {steps} optimizer steps per epoch "
                        f"(fewer than {MIN_STEPS_PER_EPOCH}): the model may not train; "
                        "leave the batch size empty to choose one from the subset size")
    elif steps * ep < MIN_TOTAL_STEPS:
        warnings.append(f"{ep} epochs of {steps} steps give {steps * ep} optimizer steps in all "
                        f"(fewer than {MIN_TOTAL_STEPS}): the model may not train; leave the "
                        "epochs empty to choose them from the subset size")
    return Plan(batch, ep, lr if lr is not None else BASE_LR, n, steps, steps * ep, chosen,
                tuple(warnings))


def resolve(cfg: TrainConfig, n: int) -> tuple[TrainConfig, Plan]:
    """``cfg`` with its left-out settings filled in for a subset of ``n`` images (a batch
    given is checked against ``n``), and ``--optimizer auto`` made the one it runs."""
    if cfg.batch_size is not None:
        check("train_batch", cfg.batch_size, high=n, why=" (the subset's size)")
    plan = make_plan(n, cfg.batch_size, cfg.epochs, cfg.lr, cfg.nproc * cfg.nnodes)
    return replace(cfg, batch_size=plan.batch_size, epochs=plan.epochs, lr=plan.lr,
                   optimizer=optimizer_for(cfg.optimizer, plan.batch_size)), plan
