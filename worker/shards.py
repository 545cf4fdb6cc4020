"""The cluster step's per-class work shared out to Celery workers.

Workers on any host that mounts the runs root at the same path take part: the parent
(``curator cluster`` or ``curator pipeline``) writes the class grouping once into
``cache/shards/<batch>/``, queues one ``cluster-shard`` job per share of the classes on
the ``cpu`` queue, and merges the files the shards write there. Each shard is a job record
in the run's store like any other, so it shows who ran it and when.

Nothing waits forever on a busy queue: a shard still queued after the stale-job delay
(``CURATOR_STALE_AFTER``, 20 s: all workers busy, or the only one running the very job
that asked) or whose worker stopped sending heartbeats is claimed and run by the parent
itself. A claim is one conditional
UPDATE, so each shard runs once even when a late worker and the parent race for it.
"""

from __future__ import annotations

import shutil
import time
import uuid
from typing import Any

import numpy as np

from .jobs import CeleryDispatcher, heartbeat_interval, stale_cutoff, worker_name
from .pipeline.clustering import ClassWork, cluster_classes
from .pipeline.curation import ClassMapper
from .pipeline.errors import InputError
from .pipeline.jobstore import JobStore
from .pipeline.progress import ProgressFn
from .pipeline.rundir import RunDir, atomic_path

SHARD_KIND = "cluster-shard"
# Runs this large share their cluster step out when a broker is configured (below it the
# step takes a few seconds on one machine and the queue round trips would cost more).
AUTO_SHARD_MIN = 200_000
SHARDS_PER_WORKER = 4


def _folder(run: RunDir, batch: str) -> Any:
    if not batch.isalnum():  # a job parameter: never a path
        raise InputError(f"bad shard batch {batch!r}")
    return run.cache / "shards" / batch


def run_shard(run: RunDir, params: dict[str, Any], progress: ProgressFn | None = None) -> dict:
    """One share of the classes (the ``cluster-shard`` job): automatic eps and DBSCAN for
    each, written to ``cache/shards/<batch>/<index>.npz``."""
    folder = _folder(run, str(params["batch"]))
    with np.load(folder / "members.npz") as m:
        order, starts = m["order"], m["starts"]
    work = [(int(c), None if e is None else float(e), int(ms)) for c, e, ms in params["work"]]
    done = cluster_classes(run.load_embedding(), order, starts, work)
    codes = np.array(sorted(done), dtype=np.int64)
    eps = np.array([np.nan if done[c][0] is None else done[c][0] for c in codes])
    parts = [done[c][1] if done[c][1] is not None else np.empty(0, np.int64) for c in codes]
    name = f"{int(params['index'])}.npz"
    with atomic_path(folder / name, ".npz") as tmp:
        np.savez(tmp, codes=codes, eps=eps, sizes=np.array([len(p) for p in parts]),
                 labels=np.concatenate(parts) if parts else np.empty(0, np.int64))
    if progress is not None:
        progress(len(work), len(work), f"clustered {len(work)} classes")
    return {"file": name, "classes": len(work)}


def _read_shard(path) -> dict[int, tuple[float | None, np.ndarray | None]]:
    out = {}
    with np.load(path) as f:
        offsets = np.concatenate([[0], np.cumsum(f["sizes"])])
        for i, (c, e) in enumerate(zip(f["codes"].tolist(), f["eps"].tolist(), strict=True)):
            # No automatic eps (NaN): the parent picks a fallback eps and clusters it.
            out[c] = (None, None) if np.isnan(e) else \
                (e, f["labels"][offsets[i]:offsets[i + 1]])
    return out


def _split(work: list[ClassWork], starts: np.ndarray, shards: int) -> list[list[ClassWork]]:
    """``shards`` shares of about equal point counts: largest class first, each to the
    lightest share so far."""
    size = {c: int(starts[c + 1] - starts[c]) for c, _, _ in work}
    parts: list[list[ClassWork]] = [[] for _ in range(max(1, min(shards, len(work))))]
    load = [0] * len(parts)
    for item in sorted(work, key=lambda w: -size[w[0]]):
        i = load.index(min(load))
        parts[i].append(item)
        load[i] += size[item[0]] + 1
    return parts


def celery_mapper(dispatcher: CeleryDispatcher, run_id: str, shards: int) -> ClassMapper:
    """A :data:`~worker.pipeline.curation.ClassMapper` that runs ``shards`` Celery jobs."""

    def mapper(run: RunDir, order: np.ndarray, starts: np.ndarray, work: list[ClassWork]
               ) -> dict[int, tuple[float | None, np.ndarray | None]]:
        if not work:
            return {}
        batch = uuid.uuid4().hex
        folder = _folder(run, batch)
        folder.mkdir(parents=True)
        try:
            with atomic_path(folder / "members.npz", ".npz") as tmp:
                np.savez(tmp, order=order, starts=starts)
            jobs = JobStore(run.store)
            ids = [dispatcher.submit(run_id, SHARD_KIND,
                                     {"batch": batch, "index": i, "work": part})
                   for i, part in enumerate(_split(work, starts, shards))]
            _wait(run, jobs, ids, dispatcher)
            out: dict[int, tuple[float | None, np.ndarray | None]] = {}
            for job_id in ids:
                out.update(_read_shard(folder / jobs.get(job_id)["result"]["file"]))
            return out
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    return mapper


def _wait(run: RunDir, jobs: JobStore, ids: list[str], dispatcher: CeleryDispatcher) -> None:
    """Until every shard has succeeded; claims and runs here the ones nobody runs."""
    started = time.monotonic()
    me = worker_name()
    poll = min(0.2, heartbeat_interval(dispatcher.settings))
    while True:
        records = [jobs.get(i) for i in ids]
        failed = [r for r in records if r["status"] in ("failed", "cancelled")]
        if failed:
            raise InputError(f"cluster shard {failed[0]['id']} {failed[0]['status']}: "
                             f"{failed[0]['error'] or 'cancelled'}")
        if all(r["status"] == "succeeded" for r in records):
            return
        late = time.monotonic() - started > dispatcher.settings.stale_after_s
        stale = stale_cutoff(dispatcher.settings)
        for r in records:
            orphan = r["status"] == "running" and (r["heartbeat_at"] or "") < stale
            if (late and r["status"] == "queued" or orphan) and jobs.claim(
                    r["id"], me, r["heartbeat_at"] if orphan else None):
                try:
                    result = run_shard(run, r["params"])
                except Exception as exc:
                    jobs.finish(r["id"], "failed", error=str(exc).splitlines()[0][:500])
                    raise
                jobs.finish(r["id"], "succeeded", result=result)
        time.sleep(poll)
