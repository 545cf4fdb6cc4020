"""The Retrain tab: train on the filtered subset (or the full set, or a random one of the
same size) as a job, with the plan it will follow, and follow it live."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, callback, ctx, dcc, html, no_update

from app.app_context import settings
from app.curate import RUN, Page
from app.forms import train_form
from app.job_view import poll, submit
from app.layout import error_alert
from worker.pipeline.choices import SHOWN_FRACTIONS, SUBSETS
from worker.pipeline.errors import InputError
from worker.train.launch import plan_for

# The form's fields share one pattern-matching id type, {"type": FIELD, "name": <a train
# job's param>}, so a callback reads or follows all of them as one.
PART = "retrain"
SLOT = "tab"
BUILT_ON_OPEN = True  # its layout: built when the tab is first opened
TITLE = "Retrain"
FIELD = "train-field"
PLAN = "train-plan"
GO = "train-go"
JOB = "train-job"
STATUS = "train-status"
POLL = "train-poll"


def train_field(name: str) -> dict:
    """The id of the Retrain form's field for the train job's param ``name``."""
    return {"type": FIELD, "name": name}

PANEL_PRUNED = tuple(f"{head}@{f}" for f in SHOWN_FRACTIONS for head in ("pruned", "random"))


def layout(_page: Page) -> html.Div:
    def field(label: str, component) -> dbc.Col:
        return dbc.Col([dbc.Label(label, class_name="small mb-0"), component], width=2)

    return html.Div([
        dbc.Row([
            field("subset", dbc.Select(
                id=train_field("subset"), value="filtered", size="sm",
                options=[{"label": s, "value": s} for s in (*SUBSETS, *PANEL_PRUNED)])),
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
            dbc.Col(dbc.Button("Retrain", id=GO, color="primary", size="sm",
                               class_name="mt-3"), width="auto"),
        ], class_name="g-2 mt-2 align-items-end"),
        html.Div(id=PLAN, className="mt-2"),
        dcc.Store(id=JOB), dcc.Interval(id=POLL, interval=1000, disabled=True),
        html.Div(id=STATUS, className="mt-2"),
    ])


ALL_FIELDS = {"type": FIELD, "name": ALL}


def register() -> None:
    """The tab's callbacks, for the page module to call as Dash imports it."""
    callback(Output(JOB, "data"), Output(STATUS, "children"), Output(POLL, "disabled"),
             Input(GO, "n_clicks"), State(ALL_FIELDS, "value"), State(RUN, "data"),
             prevent_initial_call=True)(on_retrain)
    callback(Output(PLAN, "children"), Input(ALL_FIELDS, "value"), Input(JOB, "data"),
             State(RUN, "data"))(show_plan)
    callback(Output(STATUS, "children", allow_duplicate=True),
             Output(POLL, "disabled", allow_duplicate=True),
             Input(POLL, "n_intervals"), State(JOB, "data"), State(RUN, "data"),
             prevent_initial_call=True)(poll_train)


def on_retrain(_n, _fields, run_id):
    if ctx.triggered_id != GO:
        return no_update, no_update, no_update
    try:
        cfg = train_form(ctx.states_list[0])
    except InputError as exc:
        return no_update, error_alert(str(exc)), True
    return submit(run_id, "train", cfg)


def show_plan(_fields, _job, run_id):
    """What Retrain will do with the fields as they are: images, batch, epochs, steps, and a
    warning when that is too few optimizer steps to train."""
    from app.run_data import current_state, run_data

    try:
        cfg = train_form(ctx.inputs_list[0])
        # The page's cached state: no second clustering of every class for a preview.
        data = run_data(settings().runs_root, run_id)
        state = current_state(data)
        plan = plan_for(data.run, cfg, data.samples.labels, state.decisions.kept,
                        state.train_labels(data.samples.labels))
    except InputError as exc:
        return error_alert(str(exc))
    return html.Div([html.Div(f"Will train on {plan.describe()}.", className="small text-muted"),
                     *[dbc.Alert(w, color="warning", class_name="small py-1 mt-1 mb-0")
                       for w in plan.warnings]], id="train-plan-text")


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

    return poll(run_id, job_id, describe)
