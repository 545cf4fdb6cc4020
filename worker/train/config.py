"""One training's configuration, and the check of its numbers.

Its own module because both :mod:`worker.train.plan` (which fills in what was left
unset) and :mod:`worker.train.launch` (which starts it) read it.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields

from worker.pipeline.number_params import check, check_optional


@dataclass
class TrainConfig:
    """One training run. ``batch_size`` is the global batch across all processes.

    ``epochs``, ``batch_size`` and ``lr`` left as None are chosen from the subset's size
    when the training is prepared (:mod:`worker.train.plan`)."""

    subset: str = "filtered"
    model: str = "resnet18"
    epochs: int | None = None
    batch_size: int | None = None
    nproc: int = 1
    lr: float | None = None  # at batch 256; scaled linearly with the global batch
    weight_decay: float = 5e-4
    label_smoothing: float = 0.0
    optimizer: str = "auto"  # resolved by worker/train/plan.py: lars from batch 4,096
    warmup_epochs: int = 1
    compile: str = "off"  # worker.pipeline.choices.COMPILE_MODES
    seed: int = 0
    device: str = "auto"
    name: str | None = None
    # Multi-node: passed straight to torchrun's c10d rendezvous.
    nnodes: int = 1
    node_rank: int | None = None
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None
    extra: dict = field(default_factory=dict)

    def default_name(self) -> str:
        # pruned@0.5 → pruned_0.5: '@' is not in the safe-name rule of run folders
        subset = self.subset.replace("@", "_")
        # compiled apart from eager: the same settings, but not the same arithmetic
        how = "" if self.compile == "off" else f"-c{self.compile}"
        return f"{subset}-{self.model}-b{self.batch_size}-e{self.epochs}-s{self.seed}{how}"


def with_defaults(raw: dict) -> dict:
    """A training's ``config.json`` as read, with each :class:`TrainConfig` setting it lacks
    at its default: a training prepared before that setting existed ran as the default
    says (``compile``: eager)."""
    return {**{f.name: f.default for f in fields(TrainConfig) if f.default is not MISSING},
            **raw}


# TrainConfig's numbers and their names in worker.pipeline.number_params; the optional ones (None
# or an empty form box: chosen from the subset's size) first.
OPTIONAL_NUMBERS = {"epochs": "epochs", "batch_size": "train_batch", "lr": "lr"}
NUMBERS = {"nproc": "nproc", "weight_decay": "weight_decay",
           "label_smoothing": "label_smoothing", "warmup_epochs": "warmup_epochs",
           "seed": "seed", "nnodes": "nnodes"}


def check_numbers(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with every number checked and typed (worker.pipeline.number_params), whether it came
    from the CLI, a form (text, floats, empty boxes) or a job's JSON."""
    for name, key in OPTIONAL_NUMBERS.items():
        setattr(cfg, name, check_optional(key, getattr(cfg, name)))
    for name, key in NUMBERS.items():
        setattr(cfg, name, check(key, getattr(cfg, name)))
    cfg.node_rank = check_optional("node_rank", cfg.node_rank, high=cfg.nnodes, strict=True,
                                   why=" (below --nnodes)")
    return cfg
