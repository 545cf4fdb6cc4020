"""The job kinds and the queue each runs on, named once: the dispatchers (worker.jobs),
the Celery routes (worker.celery_app) and the tasks (worker.tasks) are made from this.

``gpu`` kinds need the accelerator (or the extraction workers); ``cpu`` kinds do not.
"""

from __future__ import annotations

QUEUES: dict[str, str] = {
    "extract": "gpu", "finetune": "gpu", "train": "gpu", "experiment": "gpu",
    "pipeline": "gpu", "embed": "cpu", "export": "cpu", "cluster-shard": "cpu",
}
