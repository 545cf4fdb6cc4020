"""Jobs: every job of every run, live, with a cancel button."""

from __future__ import annotations

import dash
import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, callback, ctx, dcc, html, no_update

from app.access import require
from app.app_context import dispatcher, settings
from app.job_view import job_duration, job_progress
from app.layout import error_alert, info_alert, live_table
from worker.jobs.recovery import fail_dead_jobs
from worker.pipeline.errors import InputError
from worker.pipeline.storage.job_store import FINAL, JobStore
from worker.run_catalog import list_runs

dash.register_page(__name__, path="/jobs", title="Jobs · tsne-curator")

TABLE = "jobs-table"
POLL = "jobs-poll"
ALERT = "jobs-alert"
CANCEL = "jobs-cancel"


def all_jobs(limit: int = 200) -> list[dict]:
    """Jobs of every readable run under the runs root (worker.run_catalog.list_runs), newest
    first; runs that cannot be read are shown on the Runs page with the reason."""
    if not settings().broker_url:
        fail_dead_jobs(settings())  # jobs of a process that died show as failed, not running
    jobs = []
    for entry in list_runs(settings().runs_root):
        if entry.error is None and entry.store.is_file():
            jobs.extend({**job, "run": entry.id} for job in JobStore(entry.store).list())
    jobs.sort(key=lambda j: j["created_at"], reverse=True)
    return jobs[:limit]


def layout(**_query) -> html.Div:
    return html.Div([
        html.H4("Jobs"), html.Div(id=ALERT), dcc.Interval(id=POLL, interval=1000),
        live_table(("created", "run", "kind", "by", "progress", "duration", "worker", ""),
                   TABLE),
    ])


@callback(Output(TABLE, "children"), Input(POLL, "n_intervals"))
def refresh(_n):
    jobs = all_jobs()
    if not jobs:
        return html.Tr(html.Td("No jobs yet.", colSpan=8, className="text-muted"))
    return [html.Tr([
        html.Td(j["created_at"].replace("T", " ")[:19], className="small text-nowrap"),
        html.Td(dcc.Link(j["run"], href=f"/curate/{j['run']}")), html.Td(j["kind"]),
        html.Td(j.get("submitted_by") or "-", className="small",
                title="who queued it (with a token: checked again when a worker runs it)"),
        html.Td(job_progress(j), style={"minWidth": "320px"}),
        html.Td(job_duration(j), className="small text-nowrap"),
        html.Td(j["worker"] or "-", className="small"),
        html.Td(dbc.Button("Cancel", id={"type": CANCEL, "run": j["run"], "job": j["id"]},
                           size="sm", color="danger", outline=True)
                if j["status"] not in FINAL else ""),
    ]) for j in jobs]


@callback(Output(ALERT, "children"), Input({"type": CANCEL, "run": ALL, "job": ALL}, "n_clicks"),
          prevent_initial_call=True)
def cancel(_clicks):
    if not ctx.triggered or not ctx.triggered[0]["value"]:
        return no_update
    target = ctx.triggered_id
    try:
        require("cancel")
        status = dispatcher().cancel(target["run"], target["job"])
    except InputError as exc:
        return error_alert(str(exc))
    return info_alert(f"job {target['job']}: {status}", color="secondary")
