"""The job kinds and the queue each runs on, named once: the dispatchers (worker.jobs),
the Celery routes (worker.celery_app) and the tasks (worker.tasks) are made from this.

``gpu`` kinds need the accelerator (or the extraction workers); ``cpu`` kinds do not.
"""

from __future__ import annotations

QUEUES: dict[str, str] = {
    "ingest": "gpu", "extract": "gpu", "extract-shard": "gpu", "finetune": "gpu",
    "train": "gpu", "experiment": "gpu", "pipeline": "gpu", "embed": "cpu", "export": "cpu",
}

# Feature extraction is shared out (worker.extract_shards) by itself, with a broker and at
# least two workers on the gpu queue, from this many images: SHARDS_PER_WORKER shards per
# worker. bench/shards.py measured 2.06x with two workers at 50,000 images
# (docs/benchmarks.md); the threshold keeps small runs, where each shard's start-up
# (loading the model) is a visible part of its time, in one job (a choice, not measured).
AUTO_SHARD_MIN = 20_000
SHARDS_PER_WORKER = 2
