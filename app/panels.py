"""Export and Retrain panels of the Curate page: submit a job, follow it live."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, callback, ctx, dcc, html, no_update

from app.forms import train_form
from app.layout import error_alert
from app.server import dispatcher, settings
from worker.jobs.params import ExportParams
from worker.pipeline.errors import InputError
from worker.pipeline.jobstore import FINAL, JobStore
from worker.pipeline.names import SUBSETS
from worker.runs import resolve_run

RUN = "curate-run"  # the Curate page's run id store
EXPORT_FORMAT = "export-format"
EXPORT_NAME = "export-name"
EXPORT_BTN = "export-go"
EXPORT_JOB = "export-job"
EXPORT_STATUS = "export-status"
EXPORT_POLL = "export-poll"
# The Retrain form's fields share one pattern-matching id type, {"type": TRAIN_FIELD,
# "name": <a train job's param>}, so a callback reads or follows all of them as one.
TRAIN_FIELD = "train-field"
TRAIN_PLAN = "train-plan"
TRAIN_BTN = "train-go"
TRAIN_JOB = "train-job"
TRAIN_STATUS = "train-status"
TRAIN_POLL = "train-poll"


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


def export_panel() -> html.Div:
    return html.Div([
        dbc.Row([
            dbc.Col(dbc.Select(id=EXPORT_FORMAT, value="csv", size="sm", options=[
                {"label": "CSV manifest: every sample, with kept, reason, score",
                 "value": "csv"},
                {"label": "Image folder: the kept images only", "value": "imagefolder"},
                {"label": "Index list: the kept samples' indices", "value": "indices"}]),
                width=4),
            dbc.Col(dbc.Input(id=EXPORT_NAME, placeholder="export name (default: time)",
                              size="sm"), width=4),
            dbc.Col(dbc.Button("Export", id=EXPORT_BTN, color="primary",
                               size="sm"), width="auto"),
        ], class_name="g-2 mt-2"),
        dcc.Store(id=EXPORT_JOB), dcc.Interval(id=EXPORT_POLL, interval=500, disabled=True),
        html.Div(id=EXPORT_STATUS, className="mt-2"),
    ])


def train_field(name: str) -> dict:
    """The id of the Retrain form's field for the train job's param ``name``."""
    return {"type": TRAIN_FIELD, "name": name}


def retrain_panel() -> html.Div:
    def field(label: str, component) -> dbc.Col:
        return dbc.Col([dbc.Label(label, class_name="small mb-0"), component], width=2)

    return html.Div([
        dbc.Row([
            field("subset", dbc.Select(
                id=train_field("subset"), value="filtered", size="sm",
                options=[{"label": s, "value": s} for s in SUBSETS])),
            field("model", dbc.Select(
                id=train_field("model"), value="resnet18", size="sm",
                options=[{"label": m, "value": m}
                         for m in ("resnet18", "resnet34", "resnet50", "cifar-resnet20")])),
            # Empty batch size and epochs: chosen from the subset's size (worker.train.plan).
            field("batch size", dbc.Input(id=train_field("batch_size"), type="number", min=1,
                                          size="sm", placeholder="auto")),
            field("epochs", dbc.Input(id=train_field("epochs"), type="number", min=1,
                                      size="sm", placeholder="auto")),
            field("processes", dbc.Input(id=train_field("nproc"), type="number", value=1,
                                         min=1, size="sm")),
            dbc.Col(dbc.Button("Retrain", id=TRAIN_BTN, color="primary", size="sm",
                               class_name="mt-3"), width="auto"),
        ], class_name="g-2 mt-2 align-items-end"),
        html.Div(id=TRAIN_PLAN, className="mt-2"),
        dcc.Store(id=TRAIN_JOB), dcc.Interval(id=TRAIN_POLL, interval=1000, disabled=True),
        html.Div(id=TRAIN_STATUS, className="mt-2"),
    ])


def _submit(run_id: str, kind: str, params: object) -> tuple:
    """Submit a job of typed ``params`` (worker.jobs.params); an error is an alert."""
    try:
        job_id = dispatcher().submit(run_id, kind, params)
    except InputError as exc:
        return no_update, error_alert(str(exc)), True
    return job_id, html.Div(f"{kind} job {job_id} queued…", className="small"), False


def _poll(run_id: str, job_id: str | None, describe) -> tuple:
    if not job_id:
        return no_update, True
    job = JobStore(resolve_run(settings().runs_root, run_id).store).get(job_id)
    if job is None:
        return error_alert(f"job {job_id} vanished"), True
    body = [job_progress(job)]
    if job["status"] == "succeeded":
        body.append(describe(job))
    return html.Div(body), job["status"] in FINAL


@callback(
    Output(EXPORT_JOB, "data"), Output(EXPORT_STATUS, "children"),
    Output(EXPORT_POLL, "disabled"),
    Input(EXPORT_BTN, "n_clicks"), State(EXPORT_FORMAT, "value"), State(EXPORT_NAME, "value"),
    State(RUN, "data"), prevent_initial_call=True,
)
def on_export(_n, fmt, name, run_id):
    name = (name or "").strip() or time.strftime("export-%Y%m%d-%H%M%S")
    return _submit(run_id, "export", ExportParams(name, fmt))


def _export_result(run_id: str):
    def describe(job: dict) -> html.Div:
        rel = job["result"]["export"]
        name = rel.split("/", 1)[1]
        files = {"csv": "manifest.csv", "imagefolder": "manifest.csv",
                 "indices": "kept_indices.txt"}
        fname = files[job["params"]["format"]]
        path = resolve_run(settings().runs_root, run_id).path / rel
        return html.Div([
            html.Div(["written to ", html.Code(str(path))], className="small"),
            html.A(f"download {fname}", href=f"/download/{run_id}/exports/{name}/{fname}",
                   className="small", id="export-download"),
        ])
    return describe


@callback(
    Output(EXPORT_STATUS, "children", allow_duplicate=True),
    Output(EXPORT_POLL, "disabled", allow_duplicate=True),
    Input(EXPORT_POLL, "n_intervals"), State(EXPORT_JOB, "data"), State(RUN, "data"),
    prevent_initial_call=True,
)
def poll_export(_n, job_id, run_id):
    return _poll(run_id, job_id, _export_result(run_id))


ALL_FIELDS = {"type": TRAIN_FIELD, "name": ALL}


@callback(
    Output(TRAIN_JOB, "data"), Output(TRAIN_STATUS, "children"), Output(TRAIN_POLL, "disabled"),
    Input(TRAIN_BTN, "n_clicks"), State(ALL_FIELDS, "value"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_retrain(_n, _fields, run_id):
    if ctx.triggered_id != TRAIN_BTN:
        return no_update, no_update, no_update
    try:
        cfg = train_form(ctx.states_list[0])
    except InputError as exc:
        return no_update, error_alert(str(exc)), True
    return _submit(run_id, "train", cfg)


@callback(
    Output(TRAIN_PLAN, "children"),
    Input(ALL_FIELDS, "value"), Input(TRAIN_JOB, "data"), State(RUN, "data"),
)
def show_plan(_fields, _job, run_id):
    """What Retrain will do with the fields as they are: images, batch, epochs, steps, and a
    warning when that is too few optimizer steps to train."""
    from app.data import current_state, run_data
    from worker.train.launch import plan_for

    try:
        cfg = train_form(ctx.inputs_list[0])
        # The page's cached state: no second clustering of every class for a preview.
        data = run_data(settings().runs_root, run_id)
        plan = plan_for(data.run, cfg, data.samples.labels,
                        current_state(data).decisions.kept)
    except InputError as exc:
        return error_alert(str(exc))
    return html.Div([html.Div(f"Will train on {plan.describe()}.", className="small text-muted"),
                     *[dbc.Alert(w, color="warning", class_name="small py-1 mt-1 mb-0")
                       for w in plan.warnings]], id="train-plan-text")


@callback(
    Output(TRAIN_STATUS, "children", allow_duplicate=True),
    Output(TRAIN_POLL, "disabled", allow_duplicate=True),
    Input(TRAIN_POLL, "n_intervals"), State(TRAIN_JOB, "data"), State(RUN, "data"),
    prevent_initial_call=True,
)
def poll_train(_n, job_id, run_id):
    def describe(job: dict) -> html.Div:
        r = job["result"]
        reused = f"{r['reused']}: " if r.get("reused") else ""
        return html.Div([f"{reused}training finished: test accuracy "
                         f"{100 * r['final_test_acc']:.2f}% "
                         f"({r['test_source']}, {r['train_size']} images) · ",
                         dcc.Link("see the curves on the Results page",
                                  href=f"/results/{run_id}", id="train-results-link")],
                        className="small")

    return _poll(run_id, job_id, describe)
