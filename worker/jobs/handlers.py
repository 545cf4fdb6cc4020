"""What each job kind runs, on its typed parameters (:mod:`.job_params`).

Heavy modules are imported inside the handlers: the app and the CLI import this package to
submit jobs, and have no use for torch or openTSNE until a job runs in their process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from worker.jobs.job_params import (
    ExperimentParams,
    ExportParams,
    ExtractParams,
    IngestParams,
    PipelineParams,
    ShardParams,
    TestSplitParams,
)
from worker.pipeline.errors import InputError
from worker.pipeline.findings.testsplit import load_test_split
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.progress import ProgressFn
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir
from worker.pipeline.storage.runlock import PIPELINE_LOCK, claim_out_dir, run_lock
from worker.train.config import TrainConfig
from worker.train.launch import launch

if TYPE_CHECKING:
    from worker.pipeline.sources.datasets import Dataset

# How long a step waits for another writer of its run (runlock.run_lock) before failing.
STEP_WAIT_S = 600.0


def preload() -> None:
    """Import what the jobs run (torch, torchvision…) now. ``curator worker`` calls this
    before Celery forks its pool processes, so that each starts with them loaded, and a
    pool process that replaces a dead one takes its next job at once; a process that only
    submits or lists jobs never calls it."""
    import worker.jobs.extract_shards  # noqa: F401
    import worker.pipeline.features.extraction  # noqa: F401


@contextlib.contextmanager
def _ingested(run: RunDir, dataset: DatasetOptions | None, progress: ProgressFn,
              holder: str) -> Iterator[Dataset]:
    """The run's dataset, ingested first if need be, under the run's step lock."""
    from worker.pipeline.runner import ensure_ingested

    claim_out_dir(run.path, dataset.spec.class_root if dataset else None)
    with run_lock(run, holder, wait=STEP_WAIT_S):
        yield ensure_ingested(run, dataset, progress)


def ingest(run: RunDir, p: IngestParams, progress: ProgressFn) -> dict:
    """Ingest alone: what a shared-out extraction needs first (the images' count)."""
    with _ingested(run, p.dataset, progress, "an ingest job") as ds:
        return {"samples": len(ds.samples)}


def extract(run: RunDir, p: ExtractParams, progress: ProgressFn) -> dict:
    from worker.pipeline.features.extraction import extract as extract_features

    with _ingested(run, p.dataset, progress, "an extract job") as ds:
        feats = extract_features(run, ds, p.features, progress)
    return {"features": run.features.name, "shape": list(feats.shape)}


def finetune(run: RunDir, p: ExtractParams, progress: ProgressFn) -> dict:
    if p.features.finetune_epochs < 1:
        raise InputError("a finetune job needs finetune_epochs of at least 1")
    return extract(run, p, progress)


def extract_shard(run: RunDir, p: ShardParams, progress: ProgressFn) -> dict:
    from worker.jobs.extract_shards import run_shard

    return run_shard(run, p, progress)


def embed(run: RunDir, p: EmbeddingOptions, progress: ProgressFn) -> dict:
    from worker.pipeline.runner import ensure_embedded

    with run_lock(run.require(), "an embed job", wait=STEP_WAIT_S):
        ensure_embedded(run, p, progress)
    return {"embedding": run.embedding.name}


def extract_test(run: RunDir, p: TestSplitParams, progress: ProgressFn) -> dict:
    """The test split's features through the run's backbone, for the leak kind (cached;
    nothing when the dataset has no test split)."""
    with run_lock(run.require(), "a test-split extraction", wait=STEP_WAIT_S):
        test = load_test_split(run, progress)
    return {"test_images": 0 if test is None else len(test.paths)}


def export(run: RunDir, p: ExportParams, progress: ProgressFn) -> dict:
    from worker.pipeline.export import export as write_export

    dest = write_export(run.require(), p.format, p.name, progress=progress, version=p.version)
    return {"export": dest.relative_to(run.path).as_posix()}


def pipeline(run: RunDir, p: PipelineParams, progress: ProgressFn) -> dict:
    """extract → embed → cluster in one job: what the app's "New run" form starts."""
    from worker.pipeline.runner import run_pipeline

    with run_lock(run, "a pipeline job", PIPELINE_LOCK):
        decisions = run_pipeline(run, p.dataset, p.features, p.embedding, progress=progress)
    return {"features": run.features.name, "embedding": run.embedding.name,
            "kept": int(decisions.kept.sum())}


def train(run: RunDir, cfg: TrainConfig, progress: ProgressFn) -> dict:
    """DDP training under torchrun; a re-delivered job resumes from its checkpoint."""
    summary = launch(run.require(), cfg, progress)
    return {k: v for k, v in summary.items() if k != "config"} | {
        "train_dir": f"train/{summary['config']['name']}"}


def experiment(run: RunDir, p: ExperimentParams, progress: ProgressFn) -> dict:
    """Train every config of a comparison (worker.train.experiment) and write its tables."""
    from worker.train.experiment import run_experiment

    out = run_experiment(run.require(), p.name, list(p.configs), progress, p.budget,
                         p.parallel)
    return {"experiment": out.relative_to(run.path).as_posix()}
