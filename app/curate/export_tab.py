"""The Export tab: write the kept subset (CSV manifest, image folder or index list) of the
live curation or of a saved version (its frozen curation: the same files every time) as a
job, and follow it live."""

from __future__ import annotations

import time

import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from app.app_context import settings
from app.curate import RUN, TABS, Page
from app.curate.versions_tab import CURRENT, run_versions, version_options
from app.job_view import poll, submit
from worker.jobs.job_params import ExportParams
from worker.run_catalog import resolve_run

PART = "export"
SLOT = "tab"
BUILT_ON_OPEN = True  # its layout: built when the tab is first opened
TITLE = "Export"
FORMAT = "export-format"
NAME = "export-name"
VERSION = "export-version"
GO = "export-go"
JOB = "export-job"
STATUS = "export-status"
POLL = "export-poll"


def layout(page: Page) -> html.Div:
    return html.Div([
        dbc.Row([
            dbc.Col(dbc.Select(id=VERSION, value=CURRENT, size="sm",
                               options=version_options(run_versions(page.run_id))), width=4),
        ], class_name="g-2 mt-2"),
        dbc.Row([
            dbc.Col(dbc.Select(id=FORMAT, value="csv", size="sm", options=[
                {"label": "CSV manifest: every sample, with kept, reason, score",
                 "value": "csv"},
                {"label": "Image folder: the kept images only", "value": "imagefolder"},
                {"label": "Index list: the kept samples' indices", "value": "indices"}]),
                width=4),
            dbc.Col(dbc.Input(id=NAME, placeholder="export name (default: time)",
                              size="sm"), width=4),
            dbc.Col(dbc.Button("Export", id=GO, color="primary",
                               size="sm"), width="auto"),
        ], class_name="g-2 mt-2"),
        dcc.Store(id=JOB), dcc.Interval(id=POLL, interval=500, disabled=True),
        html.Div(id=STATUS, className="mt-2"),
    ])



def register() -> None:
    """The tab's callbacks, for the page module to call as Dash imports it."""
    callback(Output(JOB, "data"), Output(STATUS, "children"), Output(POLL, "disabled"),
             Input(GO, "n_clicks"), State(FORMAT, "value"), State(NAME, "value"),
             State(VERSION, "value"), State(RUN, "data"), prevent_initial_call=True)(on_export)
    # Versions saved since the tab was built are offered when it is opened again.
    callback(Output(VERSION, "options"), Input(TABS, "active_tab"), State(RUN, "data"),
             prevent_initial_call=True)(on_open)
    callback(Output(STATUS, "children", allow_duplicate=True),
             Output(POLL, "disabled", allow_duplicate=True),
             Input(POLL, "n_intervals"), State(JOB, "data"), State(RUN, "data"),
             prevent_initial_call=True)(poll_export)


def on_open(tab, run_id):
    if tab != PART:
        raise PreventUpdate
    return version_options(run_versions(run_id))


def on_export(_n, fmt, name, version, run_id):
    name = (name or "").strip() or time.strftime("export-%Y%m%d-%H%M%S")
    return submit(run_id, "export",
                  ExportParams(name, fmt, None if version in (None, CURRENT) else version))


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


def poll_export(_n, job_id, run_id):
    return poll(run_id, job_id, _export_result(run_id))
