"""Feature extraction shared out across Celery workers: one ``extract-shard`` job per range
of images, sent as one Celery ``group``, merged in row order.

Every worker that mounts the runs root at the same path takes part (GPU hosts in
production: the ``gpu`` queue). Each shard:

- computes the features of images ``start`` to ``stop - 1``
  (:func:`~worker.pipeline.features.extraction.network_features` with ``rows``), its start a
  multiple
  of the batch size, so it sees the same batches as a single-worker run and its rows are
  bit-identical to that run's;
- writes its block atomically to ``cache/parts-<key>/<start>-<stop>.<precision>.npy``
  (the folder the command made; once merged and removed, a late duplicate writes nothing); a
  block already there is reused, so a shard re-run after its worker was killed (Celery
  hands the message back, or a live worker re-queues it, worker.jobs.recovery) and a command run
  again after an interruption redo only what is missing;
- is a job record in the run's store, so the Jobs page shows who ran it and its progress.

The command that asked (``curator pipeline``) waits on those records, not on Celery
results (no result backend is needed, and a shard re-sent by the stale-job recovery is
still seen), then concatenates the blocks in row order. Precision ``auto`` is resolved by
each worker on its own device; blocks in mixed precisions are refused, not merged.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from worker.jobs.job_params import ShardParams
from worker.pipeline.errors import InputError
from worker.pipeline.features.extraction import (
    FeatureCompute,
    cache_key,
    feature_precision,
    network_features,
    network_input,
)
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.progress import Cancelled, ProgressFn, report
from worker.pipeline.sources.datasets import Dataset
from worker.pipeline.sources.ingest import open_run_dataset
from worker.pipeline.storage.job_store import JobStore
from worker.pipeline.storage.rundir import RunDir, save_npy
from worker.settings import AUTO_SHARD_MIN, SHARDS_PER_WORKER

SHARD_KIND = "extract-shard"
POLL_S = 0.3


class GroupDispatcher(Protocol):
    """What sharing out needs from worker.jobs.dispatchers.CeleryDispatcher."""

    def submit_group(self, run_id: str, kind: str, params: list[Any]) -> list[str]:
        ...

    def cancel(self, run_id: str, job_id: str) -> str | None:
        ...


def plan(n: int, batch_size: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` ranges ``(start, stop)`` covering ``0..n``, each starting on a multiple of
    ``batch_size`` and as equal as whole batches allow; fewer when there are fewer batches.
    """
    batches = -(-n // batch_size)
    shards = max(1, min(shards, batches))
    cuts = [round(k * batches / shards) * batch_size for k in range(shards + 1)]
    return [(a, min(b, n)) for a, b in zip(cuts, cuts[1:], strict=False) if a < min(b, n)]


def _parts(run: RunDir, key: str) -> Path:
    if not key.isalnum():  # a job parameter: never a path
        raise InputError(f"bad extract-shard key {key!r}")
    return run.cache / f"parts-{key}"


def _block(run: RunDir, key: str, start: int, stop: int, precision: str) -> Path:
    return _parts(run, key) / f"{start:010d}-{stop:010d}.{precision}.npy"


def run_shard(run: RunDir, p: ShardParams, progress: ProgressFn | None = None) -> dict:
    """One ``extract-shard`` job: features of rows ``start..stop-1`` into their block (or
    the block a killed attempt already finished). Returns the block and its precision."""
    opts, start, stop = p.features, p.start, p.stop
    precision = feature_precision(opts) or "fp32"
    block = _block(run.require(), p.key, start, stop, precision)
    # No parts folder: the command merged and removed it (this is a second delivery of a
    # shard that already ran, e.g. re-queued by the stale-job check as well as handed
    # back by Celery), so there is nothing left to write.
    if not block.is_file() and block.parent.is_dir():
        thumbs, native = network_input(run, mmap=True)
        feats = network_features(open_run_dataset(run), thumbs, opts, native, progress,
                                 rows=(start, stop))
        try:  # only into the folder the command made: never make it again after the merge
            save_npy(block, feats, make_parent=False)
        except FileNotFoundError:
            pass  # removed meanwhile: merged without this copy
    report(progress, stop - start, stop - start, f"extract: rows {start}–{stop - 1}")
    return {"block": block.name, "precision": precision, "rows": stop - start}


def sharded(dispatcher: GroupDispatcher, run_id: str, shards: int) -> FeatureCompute:
    """A :data:`~worker.pipeline.features.extraction.FeatureCompute` that shares the rows out as
    ``shards`` ``extract-shard`` jobs and merges their blocks."""

    def compute(run: RunDir, ds: Dataset, opts: FeatureOptions,
                progress: ProgressFn | None = None) -> tuple[np.ndarray, str]:
        # The blocks' folder is named by the options with precision left as asked, so a
        # re-run finds them whatever the workers resolve "auto" to.
        key = cache_key(run, opts, precision=opts.precision)
        ranges = plan(len(ds.samples), opts.batch_size, shards)
        params = [ShardParams(key, a, b, opts) for a, b in ranges]
        _parts(run, key).mkdir(parents=True, exist_ok=True)  # the shards write only into it
        ids = dispatcher.submit_group(run_id, SHARD_KIND, params)
        try:
            records = _wait(run, ids, len(ds.samples), progress)
        except (KeyboardInterrupt, Cancelled):
            for job_id in ids:
                dispatcher.cancel(run_id, job_id)
            raise
        precisions = {r["result"]["precision"] for r in records}
        if len(precisions) > 1:
            raise InputError(f"the workers computed features in different precisions "
                             f"({', '.join(sorted(precisions))}): pass --precision fp32 or bf16")
        precision = precisions.pop()
        feats = merge(run, key, ranges, precision)
        shutil.rmtree(_parts(run, key), ignore_errors=True)
        return feats, precision

    return compute


def _wait(run: RunDir, ids: list[str], n: int, progress: ProgressFn | None) -> list[dict]:
    """Until every shard has succeeded; the rows done so far are the progress. A failed or
    cancelled shard fails the extraction in one line."""
    jobs = JobStore(run.store)
    while True:
        records = [jobs.get(i) for i in ids]
        bad = next((r for r in records if r["status"] in ("failed", "cancelled")), None)
        if bad is not None:
            raise InputError(f"extract shard {bad['id']} {bad['status']}: "
                             f"{bad['error'] or 'cancelled'}")
        sizes = [r["params"]["stop"] - r["params"]["start"] for r in records]
        done = sum(size if r["status"] == "succeeded" else min(r["done"], size)
                   for r, size in zip(records, sizes, strict=True))
        report(progress, done, n, f"extract: shared out as {len(ids)} jobs")
        if all(r["status"] == "succeeded" for r in records):
            return records
        time.sleep(POLL_S)


def merge(run: RunDir, key: str, ranges: list[tuple[int, int]], precision: str) -> np.ndarray:
    """The blocks concatenated in row order, shape (N, D) float32."""
    blocks = [np.load(_block(run, key, a, b, precision), mmap_mode="r") for a, b in ranges]
    n, dim = ranges[-1][1], blocks[0].shape[1]
    out = np.empty((n, dim), dtype=np.float32)
    for (a, b), block in zip(ranges, blocks, strict=True):
        if block.shape != (b - a, dim):
            raise InputError(f"extract shard block {a}-{b} has shape {block.shape}: "
                             "delete the run's cache/parts-* folder and run again")
        out[a:b] = block
    return out


def shard_count(requested: int | None, n: int, gpu_workers: int) -> int:
    """How many shards: ``requested`` (0 or 1: one job), else automatic — shared out only
    above :data:`AUTO_SHARD_MIN` images with at least two workers on the gpu queue."""
    if requested is not None:
        return requested
    if n < AUTO_SHARD_MIN or gpu_workers < 2:
        return 0
    return SHARDS_PER_WORKER * gpu_workers

