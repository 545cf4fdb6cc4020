"""worker, jobs, cancel: the workers and their jobs (``curator serve`` is the app's:
    app/cli.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from worker.cli.arguments import Add, rundir

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import cli_type
from worker.settings import load_settings


def cmd_worker(a: argparse.Namespace) -> None:
    from worker.jobs.dispatchers import check_broker
    from worker.jobs.recovery import recover_stale_jobs, watch_stale_jobs
    from worker.run_catalog import check_runs_root

    settings = load_settings()
    if not settings.broker_url:
        raise InputError("curator worker needs CURATOR_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    check_broker(settings.broker_url)
    queues = [q for q in a.queues.split(",") if q]
    if not queues or set(queues) - {"gpu", "cpu"}:
        raise InputError(f"--queues must name gpu and/or cpu, got {a.queues!r}")
    check_runs_root(settings.runs_root)
    for line in recover_stale_jobs(settings):
        print(line, file=sys.stderr)
    # Not only at start-up: a replacement started the moment after a crash must still
    # re-queue the dead worker's job once its heartbeat goes stale.
    watch_stale_jobs(settings)
    from worker.jobs.celery_app import make_celery
    from worker.jobs.handlers import preload

    preload()

    argv = ["worker", "-Q", ",".join(queues), "--concurrency", str(a.concurrency),
            "--loglevel", a.loglevel, "--hostname", a.name or f"curator-{os.getpid()}@%h"]
    make_celery(settings).worker_main(argv)


def cmd_jobs(a: argparse.Namespace) -> None:
    from worker.jobs.recovery import fail_dead_jobs
    from worker.pipeline.storage.job_store import JobStore

    run = rundir(a.run).require_jobs()
    fail_dead_jobs(load_settings(), run)
    jobs = JobStore(run.store).list()
    if a.json:
        print(json.dumps(jobs, indent=2))
        return
    print(f"{'id':<14}{'kind':<10}{'status':<11}{'progress':>16}  {'worker':<24}message / error")
    for j in jobs:
        prog = f"{j['done']}/{j['total']}" if j["total"] else "-"
        note = j["error"] or j["message"]
        print(f"{j['id']:<14}{j['kind']:<10}{j['status']:<11}{prog:>16}  "
              f"{(j['worker'] or '-')[:23]:<24}{note[:80]}")


def cmd_cancel(a: argparse.Namespace) -> None:
    from worker.jobs.client import find_job
    from worker.jobs.dispatchers import get_dispatcher

    settings = load_settings()
    if a.run:
        path = rundir(a.run).require_jobs().path.resolve()  # never creates the folder
        settings = settings.changed(runs_root=path.parent)
        run_id = path.name
    else:
        run_id, _ = find_job(settings.runs_root, a.job)
    status = get_dispatcher(settings).cancel(run_id, a.job)
    if status is None:
        raise InputError(f"no job {a.job} in run {run_id}")
    note = " (stops at its next progress step)" if status == "running" else ""
    print(f"job {a.job}: {status}{note}")


def register(add: Add) -> None:
    """worker, jobs, cancel: the workers and their jobs (``curator serve`` is the app's:
    app/cli.py)."""
    sp = add("worker", cmd_worker, "start a Celery worker (needs CURATOR_BROKER_URL)")
    sp.add_argument("--queues", default="gpu,cpu", help="comma-separated: gpu, cpu")
    sp.add_argument("--concurrency", type=cli_type("concurrency"), default=1, help="jobs at a time")
    sp.add_argument("--loglevel", default="INFO", help="Celery log level")
    sp.add_argument("--name", help="worker node name (default curator-PID@host)")

    sp = add("jobs", cmd_jobs, "list a run's jobs")
    sp.add_argument("run", type=Path)
    sp.add_argument("--json", action="store_true")

    sp = add("cancel", cmd_cancel, "cancel a job (it stops at its next progress step)")
    sp.add_argument("job")
    sp.add_argument("--run", type=Path, help="the job's run (default: search the runs root)")
