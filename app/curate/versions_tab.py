"""The Versions tab: save the curation as a named version, list the run's versions, and
show how two of them differ, sample by sample, with thumbnails.

A version is frozen in the run's store (worker/pipeline/curation/versions.py: the same as
``curator version``, signed by the request's person); the difference is
``curator diff``'s (worker/pipeline/curation/version_diff.py): the samples dropped, kept
back and relabelled from A to B, counted by change, finding kind and author, then listed.
Either side may be ``current``, the live curation. Saving needs a reviewer's role.
"""

from __future__ import annotations

from urllib.parse import quote

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, dcc, html, no_update
from dash.exceptions import PreventUpdate

from app import access
from app.app_context import settings
from app.curate import RUN, TABS, Page
from app.layout import error_alert, info_alert, small_button
from worker.pipeline.curation.version_diff import diff_summary, diff_versions
from worker.pipeline.curation.versions import CURRENT, list_versions, save_version
from worker.pipeline.errors import InputError
from worker.run_catalog import resolve_run

PART = "versions"
SLOT = "tab"
BUILT_ON_OPEN = True  # its layout: built when the tab is first opened
TITLE = "Versions"
NAME = "versions-name"
NOTE = "versions-note"
SAVE = "versions-save"
SAVED = "versions-saved"  # the save's one line
LISTED = "versions-list"
SIDE_A = "versions-a"
SIDE_B = "versions-b"
COMPARE = "versions-compare"  # compare again: the live side may have changed since
SUMMARY = "versions-summary"
DIFF = "versions-diff"  # the changed samples (dash-ag-grid)
MAX_ROWS = 2000  # the changed samples listed on the page; `curator diff --json` has all
# The list's columns: (header, key of list_versions' rows).
LIST_COLUMNS = (("version", "name"), ("saved", "created_at"), ("by", "author"),
                ("note", "note"), ("kept", "n_kept"), ("dropped", "dropped"),
                ("relabelled", "relabelled"))
DIFF_COLUMNS = [
    {"field": "thumb", "headerName": "", "width": 48, "cellClass": "grid-thumb",
     "cellStyle": {"function": "thumbStyle(params)"}, "valueFormatter": {"function": "''"},
     "sortable": False, "filter": False},
    {"field": "sample", "headerName": "#", "width": 80},
    {"field": "change", "headerName": "change", "width": 110},
    {"field": "from", "headerName": "from", "width": 100},
    {"field": "to", "headerName": "to", "width": 100},
    {"field": "kinds", "headerName": "finding", "flex": 1, "minWidth": 100},
    {"field": "reason", "headerName": "reason", "flex": 1, "minWidth": 100},
    {"field": "decided_by", "headerName": "decided by", "width": 120},
]


def layout(page: Page) -> html.Div:
    """Save version (name, note), the versions listed, and A → B with their difference
    (B: the live curation at first, A: the newest version)."""
    rows = run_versions(page.run_id)
    options = version_options(rows)
    newest = rows[-1]["name"] if rows else CURRENT
    return html.Div([
        dbc.Row([
            dbc.Col(dbc.Input(id=NAME, placeholder="version name (e.g. v2)", size="sm",
                              maxLength=100), width=3),
            dbc.Col(dbc.Input(id=NOTE, placeholder="note: why this version", size="sm",
                              maxLength=2000), width=6),
            dbc.Col(small_button("Save version", SAVE, "primary",
                                 "Freeze the curation as it is now under this name"),
                    width="auto"),
        ], class_name="g-2 mt-2"),
        html.Div(id=SAVED),
        html.Div(_table(rows), id=LISTED, className="mt-2"),
        dbc.Row([
            dbc.Col(html.Span("compare", className="small"), width="auto"),
            dbc.Col(dcc.Dropdown(id=SIDE_A, options=options, value=newest, clearable=False),
                    width=3),
            dbc.Col(html.Span("→", className="small"), width="auto"),
            dbc.Col(dcc.Dropdown(id=SIDE_B, options=options, value=CURRENT, clearable=False),
                    width=3),
            dbc.Col(small_button("Compare", COMPARE, "secondary",
                                 "Compare again (the live curation may have changed)"),
                    width="auto"),
        ], class_name="g-2 mt-2 align-items-center"),
        html.Div(id=SUMMARY, className="mt-2"),
        dag.AgGrid(id=DIFF, columnDefs=DIFF_COLUMNS, rowData=[],
                   defaultColDef={"sortable": True, "resizable": True, "filter": True},
                   dashGridOptions={"rowHeight": 40, "animateRows": False},
                   style={"height": "360px"}, className="ag-theme-alpine"),
    ])


def register() -> None:
    """The tab's callbacks, for the page module to call as Dash imports it."""
    callback(Output(SAVED, "children"), Output(LISTED, "children"),
             Output(SIDE_A, "options"), Output(SIDE_B, "options"), Output(SIDE_A, "value"),
             Input(SAVE, "n_clicks"), State(NAME, "value"), State(NOTE, "value"),
             State(RUN, "data"), prevent_initial_call=True)(on_save)
    # Versions saved elsewhere (the CLI, another reviewer) are listed when it opens again.
    callback(Output(LISTED, "children", allow_duplicate=True),
             Output(SIDE_A, "options", allow_duplicate=True),
             Output(SIDE_B, "options", allow_duplicate=True),
             Input(TABS, "active_tab"), State(RUN, "data"), prevent_initial_call=True)(on_open)
    callback(Output(SUMMARY, "children"), Output(DIFF, "rowData"),
             Input(SIDE_A, "value"), Input(SIDE_B, "value"), Input(COMPARE, "n_clicks"),
             State(RUN, "data"))(on_compare)


def on_save(_n, name, note, run_id):
    """Save version: the version frozen, listed and compared with the live curation, or
    one line that says why not."""
    try:
        access.require("version")
        saved = save_version(resolve_run(settings().runs_root, run_id), (name or "").strip(),
                             (note or "").strip(), settings().min_free_mb)
    except InputError as exc:
        return error_alert(str(exc)), no_update, no_update, no_update, no_update
    rows = run_versions(run_id)
    line = info_alert(f"saved {saved['name']}: {saved['n_kept']:,} of "
                      f"{saved['n_samples']:,} samples kept, by {saved['author']}")
    return line, _table(rows), version_options(rows), version_options(rows), saved["name"]


def on_open(tab, run_id):
    if tab != PART:
        raise PreventUpdate
    rows = run_versions(run_id)
    return _table(rows), version_options(rows), version_options(rows)


def on_compare(a, b, _n, run_id):
    """A → B: the changes counted by change, kind and author, and the samples listed with
    their thumbnails."""
    if not a or not b:
        return "", []
    try:
        rows = diff_versions(resolve_run(settings().runs_root, run_id), a, b)
    except InputError as exc:
        return error_alert(str(exc)), []
    thumbs = f"/thumb/{quote(run_id, safe='')}/"
    listed = [{**r, "thumb": f"{thumbs}{r['sample']}.png"} for r in rows[:MAX_ROWS]]
    summary = _summary(a, b, diff_summary(rows))
    if len(rows) > MAX_ROWS:
        summary = html.Div([summary, html.Div(
            f"the first {MAX_ROWS:,} of {len(rows):,} changed samples are listed: "
            f"'curator diff RUN {a} {b} --json' gives them all", className="small text-muted")])
    return summary, listed


def run_versions(run_id: str) -> list[dict]:
    """The run's versions, oldest first; none where the run cannot be read (the page
    says why elsewhere)."""
    try:
        return list_versions(resolve_run(settings().runs_root, run_id))
    except InputError:
        return []


def version_options(rows: list[dict]) -> list[dict]:
    """A picker's choices: the live curation (``current``), then the versions ``rows``
    (:func:`run_versions`), newest first."""
    return [{"label": "current (the live curation)", "value": CURRENT},
            *({"label": f"version {r['name']}", "value": r["name"]} for r in reversed(rows))]


def _table(rows: list[dict]) -> html.Div | dbc.Table:
    if not rows:
        return html.Div("no version saved yet: name one above and press Save version",
                        className="small text-muted")
    head = html.Thead(html.Tr([html.Th(h) for h, _ in LIST_COLUMNS]))
    body = html.Tbody([html.Tr([html.Td(_cell(r.get(key))) for _, key in LIST_COLUMNS])
                       for r in rows])
    return dbc.Table([head, body], size="sm", bordered=False, hover=True,
                     class_name="small mb-0")


def _cell(value) -> str:  # noqa: ANN001 - a version row's value
    return f"{value:,}" if isinstance(value, int) else str(value or "")


def _summary(a: str, b: str, groups: list[dict]) -> html.Div:
    """``a`` → ``b`` in one line, then its changes counted by change, kind and author."""
    if not groups:
        return html.Div(f"{a} → {b}: no sample changed", className="small")
    total = sum(g["samples"] for g in groups)
    head = html.Thead(html.Tr([html.Th(h) for h in ("change", "finding or reason",
                                                     "decided by", "samples")]))
    body = html.Tbody([html.Tr([html.Td(g["change"]), html.Td(g["kind"]),
                                html.Td(g["decided_by"] or "the rule"),
                                html.Td(f"{g['samples']:,}")]) for g in groups])
    return html.Div([html.Div(f"{a} → {b}: {total:,} changes", className="small fw-bold"),
                     dbc.Table([head, body], size="sm", class_name="small mb-1")])
