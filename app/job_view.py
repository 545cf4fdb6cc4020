"""A job's progress as the pages show it (the Runs, Jobs and Curate pages), and the
Curate page's submit and poll of one job."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import dash_bootstrap_components as dbc
from dash import html, no_update

from app.access import require_job
from app.app_context import dispatcher, settings
from app.layout import error_alert
from worker.pipeline.errors import InputError
from worker.pipeline.storage.job_store import FINAL, JobStore
from worker.run_catalog import resolve_run


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def _since(stamp: str | None, now: datetime) -> float | None:
    return (now - datetime.fromisoformat(stamp)).total_seconds() if stamp else None


def job_duration(job: dict, now: datetime | None = None) -> str:
    """How long the job ran (final) or has been running, as m:ss; empty before it starts."""
    if not job["started_at"]:
        return ""
    end = datetime.fromisoformat(job["finished_at"]) if job["finished_at"] else (
        now or datetime.now(UTC))
    return _clock((end - datetime.fromisoformat(job["started_at"])).total_seconds())


def job_timing(job: dict, now: datetime | None = None) -> str:
    """``elapsed 0:42 · about 1:10 left`` while running (the ETA extrapolates the current
    phase's rate), ``took 0:49`` once final, empty before it starts."""
    now = now or datetime.now(UTC)
    if not job["started_at"]:
        return ""
    if job["status"] in FINAL:
        return f"took {job_duration(job)}" if job["finished_at"] else ""
    text = f"elapsed {job_duration(job, now)}"
    phase = _since(job.get("phase_started_at"), now)
    if job["status"] == "running" and phase and 0 < job["done"] < job["total"]:
        text += f" · about {_clock(phase * (job['total'] - job['done']) / job['done'])} left"
    return text


def job_status_text(job: dict) -> str:
    """The line under a job's bar: the error of a failed job, "done" for one that succeeded
    (its last progress message was a step in flight, e.g. "ingest: decoding images"),
    else its latest message."""
    if job["status"] == "failed":
        return job["error"] or ""
    return "done" if job["status"] == "succeeded" else job["message"] or ""


def job_progress(job: dict) -> html.Div:
    """A progress bar and one status line for a job record: status, timing, message."""
    pct = 100.0 * job["done"] / job["total"] if job["total"] else 0.0
    colour = {"succeeded": "success", "failed": "danger", "cancelled": "secondary"}.get(
        job["status"], "primary")
    text = job_status_text(job)
    return html.Div([
        # Striped but not animated: the stripes' CSS animation repaints every frame, which
        # without GPU compositing kept the browser near a core busy beside a CPU training.
        dbc.Progress(value=100 if job["status"] in FINAL else pct, color=colour,
                     striped=job["status"] == "running", style={"height": "8px"}),
        html.Div(" · ".join(part for part in (f"{job['kind']} {job['id']}: {job['status']}",
                                              job_timing(job), text) if part),
                 className="small text-muted mt-1 text-break"),
    ], className="job-progress")


def submit(run_id: str, kind: str, params: object) -> tuple:
    """Submit a job of typed ``params`` (worker.jobs.job_params); an error is an alert."""
    try:
        require_job(kind)
        job_id = dispatcher().submit(run_id, kind, params)
    except InputError as exc:
        return no_update, error_alert(str(exc)), True
    return job_id, html.Div(f"{kind} job {job_id} queued…", className="small"), False


def poll(run_id: str, job_id: str | None, describe: Callable[[dict], html.Div]) -> tuple:
    """The job's progress (and ``describe(job)`` once it succeeded), and whether polling
    stops (the job is final)."""
    if not job_id:
        return no_update, True
    job = JobStore(resolve_run(settings().runs_root, run_id).store).get(job_id)
    if job is None:
        return error_alert(f"job {job_id} vanished"), True
    body = [job_progress(job)]
    if job["status"] == "succeeded":
        body.append(describe(job))
    return html.Div(body), job["status"] in FINAL
