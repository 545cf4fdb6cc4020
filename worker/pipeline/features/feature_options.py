"""What decides a run's features: the options of the extract step, as the CLI, the New-run
form and the job records give them.

Apart from :mod:`.extraction`, so that submitting a job or listing jobs (the CLI, the app)
does not import torch (about 3 s of a process's start on 2 cores).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from worker.pipeline.choices import DECODERS, default_model
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import check, check_optional


@dataclass(frozen=True)
class FeatureOptions:
    """What decides the features; ``cache_key`` hashes these with the sample list."""

    model: str | None = None  # None: the dataset's default (names.default_model)
    weights: Path | None = None
    finetune_epochs: int = 0
    batch_size: int = 256
    device: str = "auto"
    num_workers: int | None = None  # decoding processes; None: all cores but one
    seed: int = 0
    precision: str = "auto"
    input_size: int | None = None  # None: the model's own (backbones.EFFICIENTNET_SIZE, …)
    decode: str = "auto"  # where JPEG files are decoded (names.DECODERS)

    def __post_init__(self) -> None:
        # Checked when the options are made (CLI, form, job record), before any ingest.
        checked = {"finetune_epochs": check("finetune", self.finetune_epochs),
                   "batch_size": check("extract_batch", self.batch_size),
                   "num_workers": check_optional("workers", self.num_workers),
                   "seed": check("seed", self.seed),
                   "input_size": check_optional("input_size", self.input_size)}
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        if self.decode not in DECODERS:
            raise InputError(f"--decode must be one of {', '.join(DECODERS)}, got "
                             f"{self.decode!r}")

    def for_dataset(self, kind: str) -> FeatureOptions:
        """These options with ``model`` filled in for a dataset of ``kind``."""
        return self if self.model else replace(self, model=default_model(kind))
