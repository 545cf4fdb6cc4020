"""Jobs: what each kind runs, how a job record follows it, and how jobs are submitted.

The same :func:`run_job` body serves a Celery worker and the embedded in-process worker,
so a job behaves identically with or without Redis. Job records live in the run's SQLite
store (:class:`~worker.pipeline.jobstore.JobStore`); Redis carries only the queue.
"""

from __future__ import annotations

import contextlib
import errno
import multiprocessing
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kinds import QUEUES
from .options import embedding_opts, feature_opts
from .pipeline.errors import InputError
from .pipeline.ingest import DatasetOptions
from .pipeline.jobstore import FINAL, JobStore
from .pipeline.progress import Cancelled, ProgressFn
from .pipeline.rundir import RunDir
from .pipeline.runlock import PIPELINE_LOCK, claim_out_dir, run_lock
from .runs import list_runs, resolve_run, run_id_for  # noqa: F401 - re-exported
from .settings import Settings

if TYPE_CHECKING:
    from .pipeline.datasets import Dataset
    from .train.launch import TrainConfig

HEARTBEAT_S = 10.0
# How long a step waits for another writer of its run (runlock.run_lock) before failing.
STEP_WAIT_S = 600.0


def heartbeat_interval(settings: Settings) -> float:
    """Seconds between heartbeats: at least three fit in the stale window, so a live job is
    never taken for a dead one."""
    return min(HEARTBEAT_S, settings.stale_after_s / 3)


def stale_cutoff(settings: Settings) -> str:
    """ISO time before which a running job's last heartbeat means its worker is gone."""
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC) - timedelta(seconds=settings.stale_after_s)).isoformat(
        timespec="seconds")


def _dataset(params: dict) -> DatasetOptions | None:
    return DatasetOptions.from_json(params["dataset"]) if params.get("dataset") else None


@contextlib.contextmanager
def _ingested(run: RunDir, params: dict, progress: ProgressFn, holder: str) -> Iterator[Dataset]:
    """The run's dataset, ingested first if need be, under the run's step lock."""
    from .pipeline.runner import ensure_ingested

    dataset = _dataset(params)
    claim_out_dir(run.path, dataset.spec.class_root if dataset else None)
    with run_lock(run, holder, wait=STEP_WAIT_S):
        yield ensure_ingested(run, dataset, progress)


def _do_ingest(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    """Ingest alone: what a shared-out extraction needs first (the images' count)."""
    with _ingested(run, params, progress, "an ingest job") as ds:
        return {"samples": len(ds.samples)}


def _do_extract(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    from .pipeline.features import extract

    with _ingested(run, params, progress, "an extract job") as ds:
        feats = extract(run, ds, feature_opts(params.get("features", {})), progress)
    return {"features": run.features.name, "shape": list(feats.shape)}


def _do_finetune(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    if int(params.get("features", {}).get("finetune_epochs", 0)) < 1:
        raise InputError("a finetune job needs finetune_epochs of at least 1")
    return _do_extract(run, params, progress)


def _do_embed(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    from .pipeline.runner import ensure_embedded

    with run_lock(run.require(), "an embed job", wait=STEP_WAIT_S):
        ensure_embedded(run, embedding_opts(params), progress)
    return {"embedding": run.embedding.name}


def _do_export(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    from .pipeline.export import export

    dest = export(run.require(), params.get("format", "csv"), params["name"], progress=progress)
    return {"export": dest.relative_to(run.path).as_posix()}


def _do_pipeline(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    """extract → embed → cluster in one job: what the app's "New run" form starts."""
    from .pipeline.runner import run_pipeline

    with run_lock(run, "a pipeline job", PIPELINE_LOCK):
        decisions = run_pipeline(run, _dataset(params), feature_opts(params.get("features", {})),
                                 embedding_opts(params.get("embedding", {})),
                                 progress=progress)
    return {"features": run.features.name, "embedding": run.embedding.name,
            "kept": int(decisions.kept.sum())}


def train_config(params: dict) -> TrainConfig:
    """A :class:`~worker.train.launch.TrainConfig` from JSON params (unknown keys refused)."""
    from .train.launch import TrainConfig

    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise InputError(f"unknown training settings: {', '.join(unknown)}")
    try:
        return TrainConfig(**params)
    except TypeError as exc:
        raise InputError(f"bad training settings: {exc}") from None


def _do_train(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    """DDP training under torchrun; a re-delivered job resumes from its checkpoint."""
    from .train.launch import launch

    summary = launch(run.require(), train_config(params), progress)
    return {k: v for k, v in summary.items() if k != "config"} | {
        "train_dir": f"train/{summary['config']['name']}"}


def _do_experiment(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    """Train every config of a comparison (worker.train.experiment) and write its tables."""
    from .train.experiment import run_experiment

    out = run_experiment(run.require(), params["name"],
                         [train_config(c) for c in params["configs"]], progress)
    return {"experiment": out.relative_to(run.path).as_posix()}


def _do_extract_shard(run: RunDir, params: dict, progress: ProgressFn) -> dict:
    # Imported here, as every handler's compute is: a worker's main process must not load
    # torch, or the pool process it forks to replace a killed one can hang.
    from .extract_shards import run_shard

    return run_shard(run, params, progress)


HANDLERS: dict[str, Callable[[RunDir, dict, ProgressFn], dict]] = {
    "ingest": _do_ingest, "extract": _do_extract, "extract-shard": _do_extract_shard,
    "finetune": _do_finetune, "embed": _do_embed, "export": _do_export, "train": _do_train,
    "experiment": _do_experiment, "pipeline": _do_pipeline,
}


# --------------------------------------------------------------------------- execution
def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def is_transient(exc: BaseException) -> bool:
    """I/O errors worth retrying: a locked database, a busy or stale shared filesystem."""
    if isinstance(exc, sqlite3.OperationalError):
        return "locked" in str(exc) or "busy" in str(exc)
    if isinstance(exc, TimeoutError | BlockingIOError | InterruptedError):
        return True
    return isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.EBUSY, errno.ESTALE,
                                                      errno.EIO)


class _Progress:
    """Progress callback writing to the job record (at most every 0.5 s) and a heartbeat
    thread, so a job whose worker died can be told apart from a slow one."""

    def __init__(self, jobs: JobStore, job_id: str, beat_s: float,
                 echo: ProgressFn | None = None) -> None:
        self.jobs, self.job_id, self.beat_s, self.echo = jobs, job_id, beat_s, echo
        self.last = 0.0
        self.cancel = False
        self.state = (0, 0, "starting")
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def __call__(self, done: int, total: int, message: str) -> bool:
        self.state = (done, total, message)
        if self.echo is not None and self.echo(done, total, message):
            self.cancel = True
        now = time.monotonic()
        if now - self.last >= 0.5 or done >= total:
            self.last = now
            self.cancel = self.jobs.progress(self.job_id, done, total, message)
        return self.cancel

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                self.cancel = self.jobs.progress(self.job_id, *self.state) or self.cancel
            except sqlite3.Error:
                continue

    def close(self) -> None:
        self._stop.set()


def run_job(runs_root: Path, run_id: str, kind: str, params: dict[str, Any],
            job_id: str, echo: ProgressFn | None = None) -> dict[str, Any] | None:
    """Run one job and keep its record current; ``echo`` also sees its progress (the CLI
    prints it when it runs a job in its own process, :func:`run_here`).

    Returns the job's result (None when it was cancelled, or had already finished before a
    re-delivery). Exceptions propagate so that the caller's failure hook records them.
    """
    if kind not in HANDLERS:
        raise InputError(f"unknown job kind {kind!r}")
    run = resolve_run(runs_root, run_id)
    jobs = JobStore(run.store)
    record = jobs.get(job_id)
    if record is None:
        jobs.create(kind, params, job_id)
    elif record["status"] in FINAL:
        return record["result"]  # a re-delivered message for a job that already ended
    if not jobs.start(job_id, worker_name()):
        return None
    from .settings import load_settings

    progress = _Progress(jobs, job_id, heartbeat_interval(load_settings()), echo)
    try:
        result = HANDLERS[kind](run, params, progress)
    except Cancelled:
        jobs.finish(job_id, "cancelled")
        return None
    finally:
        progress.close()
    jobs.finish(job_id, "succeeded", result=result)
    return result


def new_job(run: RunDir, kind: str, params: dict[str, Any]) -> str:
    """Record a queued job in the run's store and return its id; a clustered run whose
    store has gone is refused (curation.check_store), not given a fresh, empty one."""
    from .pipeline.curation import check_store

    check_store(run)
    return JobStore(run.store).create(kind, params)


def run_here(run: RunDir, kind: str, params: dict[str, Any], echo: ProgressFn) -> dict:
    """Run a job in this process, in the foreground, recorded in the run's job store like
    any other: the Jobs page lists a ``curator retrain``, ``experiment`` or ``export``
    started from a shell, shows its progress, and can cancel it. Ctrl-C cancels it too.

    Raises :class:`Cancelled` when it was cancelled; a failure is recorded, then raised."""
    job_id = new_job(run, kind, params)
    try:
        result = run_job(run.path.parent, run.path.name, kind, params, job_id, echo)
    except KeyboardInterrupt:
        JobStore(run.store).finish(job_id, "cancelled")
        raise
    except BaseException as exc:
        record_failure(run.path.parent, run.path.name, job_id, exc)
        raise
    if result is None:
        raise Cancelled(f"{kind} job {job_id} was cancelled")
    return result


def record_failure(runs_root: Path, run_id: str, job_id: str, exc: BaseException) -> None:
    """The failure hook: store a one-line error on the job."""
    try:
        run = resolve_run(runs_root, run_id)
    except InputError:
        return
    text = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
    JobStore(run.store).finish(job_id, "failed", error=text.splitlines()[0][:1000] if text
                               else type(exc).__name__)


# --------------------------------------------------------------------------- submission
class EmbeddedDispatcher:
    """Runs jobs on threads inside this process: no Redis, no separate worker.

    One thread per queue, so an export never waits behind an hour of extraction.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pools = {q: ThreadPoolExecutor(1, thread_name_prefix=f"curator-{q}")
                      for q in ("gpu", "cpu")}

    def submit(self, run_id: str, kind: str, params: dict[str, Any]) -> str:
        run = resolve_run(self.settings.runs_root, run_id)
        job_id = new_job(run, kind, params)
        self.pools[QUEUES[kind]].submit(self._run, run_id, kind, params, job_id)
        return job_id

    def _run(self, run_id: str, kind: str, params: dict, job_id: str) -> None:
        try:
            run_job(self.settings.runs_root, run_id, kind, params, job_id)
        except BaseException as exc:  # noqa: BLE001 - recorded on the job, as a worker would
            record_failure(self.settings.runs_root, run_id, job_id, exc)

    def cancel(self, run_id: str, job_id: str) -> str | None:
        return JobStore(resolve_run(self.settings.runs_root, run_id).store).request_cancel(
            job_id, stale_cutoff(self.settings))


class CeleryDispatcher:
    """Sends jobs to ``curator worker`` processes through the broker."""

    def __init__(self, settings: Settings) -> None:
        from .celery_app import make_celery

        self.settings = settings
        self.app = make_celery(settings)

    def check_broker(self) -> None:
        """Fail fast, in one line, when the broker cannot be reached."""
        check_broker(self.settings.broker_url)

    def consumers(self, queue: str) -> list[str]:
        """Names of the live workers that consume ``queue`` (asks them, ~1 s)."""
        try:
            active = self.app.control.inspect(timeout=1.0).active_queues() or {}
        except Exception:  # noqa: BLE001 - an unreachable broker: nobody consumes
            return []
        return [w for w, qs in active.items() if any(q.get("name") == queue for q in qs)]

    def submit(self, run_id: str, kind: str, params: dict[str, Any]) -> str:
        self.check_broker()
        run = resolve_run(self.settings.runs_root, run_id)
        job_id = new_job(run, kind, params)
        jobs = JobStore(run.store)
        try:
            self.app.send_task(f"curator.{kind}", args=[run_id, params, job_id],
                               task_id=job_id, queue=QUEUES[kind])
        except Exception as exc:  # noqa: BLE001 - any publish failure means "not queued"
            jobs.finish(job_id, "failed", error=f"could not queue the job: {exc}")
            raise InputError(f"cannot reach the broker at {self.settings.broker_url}: "
                             f"{exc}") from None
        return job_id

    def submit_group(self, run_id: str, kind: str, params: list[dict[str, Any]]) -> list[str]:
        """Record one ``kind`` job per ``params`` and send them as one Celery ``group``;
        returns their ids (each job's Celery task id too)."""
        from celery import group

        self.check_broker()
        run = resolve_run(self.settings.runs_root, run_id)
        ids = [new_job(run, kind, p) for p in params]
        try:
            group(self.app.signature(f"curator.{kind}", args=[run_id, p, job_id],
                                     options={"task_id": job_id, "queue": QUEUES[kind]})
                  for p, job_id in zip(params, ids, strict=True)).apply_async()
        except Exception as exc:  # noqa: BLE001 - any publish failure means "not queued"
            for job_id in ids:
                JobStore(run.store).finish(job_id, "failed", error=f"could not queue: {exc}")
            raise InputError(f"cannot reach the broker at {self.settings.broker_url}: "
                             f"{exc}") from None
        return ids

    def cancel(self, run_id: str, job_id: str) -> str | None:
        status = JobStore(resolve_run(self.settings.runs_root, run_id).store).request_cancel(
            job_id, stale_cutoff(self.settings))
        if status == "cancelled":
            try:
                self.app.control.revoke(job_id)
            except Exception:  # noqa: BLE001, S110 - the record already says cancelled
                pass
        return status


def check_broker(url: str, timeout: float = 2.0) -> None:
    """Raise a one-line :class:`InputError` unless the Redis broker at ``url`` answers."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=timeout,
                             socket_timeout=timeout).ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        raise InputError(f"cannot reach the broker at {url} ({exc}); start Redis or fix "
                         "CURATOR_BROKER_URL") from None


def get_dispatcher(settings: Settings) -> EmbeddedDispatcher | CeleryDispatcher:
    """Celery when ``CURATOR_BROKER_URL`` is set, else the embedded in-process worker."""
    return CeleryDispatcher(settings) if settings.broker_url else EmbeddedDispatcher(settings)


def wait_for(run: RunDir, job_id: str, on_progress: ProgressFn | None = None,
             poll_s: float = 0.3,
             on_wait: Callable[[dict[str, Any], float], None] | None = None) -> dict[str, Any]:
    """Poll a job record until it ends; returns the final record. ``on_wait(job, waited
    seconds)`` is called about every 2 s while it has not ended."""
    jobs = JobStore(run.store)
    last = None
    start = checked = time.monotonic()
    while True:
        job = jobs.get(job_id)
        if on_wait is not None and job is not None and job["status"] not in FINAL \
                and time.monotonic() - checked >= 2:
            checked = time.monotonic()
            on_wait(job, checked - start)
        if job is None:
            raise InputError(f"job {job_id} not found in {run.path}")
        state = (job["done"], job["total"], job["message"])
        if on_progress and job["total"] and state != last:
            on_progress(*state)
            last = state
        if job["status"] in FINAL:
            return job
        time.sleep(poll_s)


def find_job(runs_root: Path, job_id: str) -> tuple[str, dict[str, Any]]:
    """Search every readable run under the runs root for ``job_id``; returns (run id,
    record)."""
    for entry in list_runs(runs_root):
        if entry.error is None and entry.store.is_file():
            job = JobStore(entry.store).get(job_id)
            if job is not None:
                return entry.id, job
    raise InputError(f"no job {job_id} under {Path(runs_root).resolve()}")


def recover_stale_jobs(settings: Settings) -> list[str]:
    """Re-queue jobs left ``running`` by a worker that died (no heartbeat for
    ``stale_after_s``); returns one line per recovered job.

    Every worker runs this when it starts and then every few seconds
    (:func:`watch_stale_jobs`), so a job whose worker died is re-queued within about
    ``stale_after_s`` plus one check whenever any worker is alive, even one started the
    moment after the crash. Of several workers that notice it, one re-queues it
    (:meth:`JobStore.requeue`). A pool process killed mid-job is handed back by Celery at
    once (``task_reject_on_worker_lost``); this covers a whole worker killed, whose
    message Redis would only re-deliver after the visibility timeout.
    """
    dispatcher = CeleryDispatcher(settings)
    cutoff = stale_cutoff(settings)
    lines = []
    for entry in list_runs(settings.runs_root):
        if entry.error is not None or not entry.store.is_file():
            continue
        jobs = JobStore(entry.store)
        for job in jobs.list():
            beat = job["heartbeat_at"] or job["started_at"]
            if job["status"] != "running" or not beat or beat >= cutoff:
                continue
            if not jobs.requeue(job["id"], job["heartbeat_at"]):
                continue  # another worker got there first, or it came back to life
            dispatcher.app.send_task(f"curator.{job['kind']}",
                                     args=[entry.id, job["params"], job["id"]],
                                     queue=QUEUES[job["kind"]])
            lines.append(f"re-queued job {job['id']} ({job['kind']} of {entry.id}): its worker "
                         f"{job['worker']} stopped answering")
    return lines


def _stale_loop(settings: Settings, parent: int) -> None:
    """:func:`recover_stale_jobs` every half stale window while ``parent`` lives."""
    while os.getppid() == parent:
        time.sleep(max(1.0, min(5.0, settings.stale_after_s / 2)))
        try:
            lines = recover_stale_jobs(settings)
        except Exception as exc:  # noqa: BLE001 - a broker or disk hiccup; try again
            lines = [f"stale-job check failed, will retry: {str(exc).splitlines()[0][:200]}"]
        for line in lines:
            print(line, file=sys.stderr, flush=True)


def watch_stale_jobs(settings: Settings) -> multiprocessing.process.BaseProcess:
    """Run :func:`recover_stale_jobs` every half stale window, in a process of its own.

    Not a thread of the worker's main process: a thread there could hold SQLite's lock at
    the moment Celery forks a pool process to replace a killed one, and that process
    would hang on its first connect (seen with extraction shards)."""
    proc = multiprocessing.get_context("spawn").Process(
        target=_stale_loop, args=(settings, os.getpid()), name="curator-stale-jobs",
        daemon=True)
    proc.start()
    return proc


def fail_dead_jobs(settings: Settings, run: RunDir | None = None) -> list[str]:
    """Without a broker, a running job with a stale heartbeat belonged to a process that
    died (jobs run on that process's threads): mark it failed, in ``run`` or in every run
    under the runs root. Returns their ids."""
    if settings.broker_url:
        return []
    cutoff = stale_cutoff(settings)
    stores = [run.store] if run is not None else [
        e.store for e in list_runs(settings.runs_root) if e.error is None]
    return [job for store in stores if store.is_file()
            for job in JobStore(store).fail_stale(cutoff)]


def waiting_notice(settings: Settings, job: dict[str, Any], waited_s: float) -> str | None:
    """What a client waiting on ``job`` should be told, if anything: no worker consumes
    its queue, or the worker running it stopped answering."""
    if settings.broker_url and job["status"] == "queued" and waited_s >= 3:
        queue = QUEUES.get(job["kind"], "gpu")
        if not CeleryDispatcher(settings).consumers(queue):
            return (f"no worker is consuming the '{queue}' queue yet: start one with "
                    f"'curator worker --queues {queue}' (still waiting)")
    beat = job["heartbeat_at"] or job["started_at"]
    if job["status"] == "running" and beat and beat < stale_cutoff(settings):
        return (f"the worker running this job ({job['worker']}) stopped answering; "
                + ("a live worker will re-queue it" if settings.broker_url
                   else "the job is lost: run the command again"))
    if job["status"] == "queued" and (job["message"] or "").startswith("re-queued"):
        return (f"the worker running this job ({job['worker']}) stopped answering; the job "
                "was re-queued and will start again on a live worker")
    return None
