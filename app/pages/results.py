"""Results of one run: per-epoch curves of every training, and the paper's comparison."""

from __future__ import annotations

import csv

import dash
import dash_bootstrap_components as dbc
import plotly.graph_objects as go
from dash import Input, Output, State, callback, dcc, html

from app.layout import error_alert
from app.server import settings
from worker.jobs import resolve_run
from worker.pipeline.errors import InputError
from worker.train.launch import read_metrics

dash.register_page(__name__, path_template="/results/<run_id>", title="Results · tsne-curator")

RUN = "results-run"
POLL = "results-poll"
CURVES = "results-curves"
EXPERIMENTS = "results-experiments"


def training_curves(run_path) -> go.Figure:
    """Test accuracy per epoch of every training under ``<run>/train``."""
    fig = go.Figure()
    for out in sorted((run_path / "train").glob("*/metrics.jsonl")):
        rows = read_metrics(out.parent)
        if rows:
            fig.add_trace(go.Scatter(x=[r["epoch"] + 1 for r in rows],
                                     y=[100 * r["test_acc"] for r in rows],
                                     mode="lines+markers", name=out.parent.name))
    fig.update_layout(margin=dict(l=40, r=10, t=10, b=40), xaxis_title="epoch",
                      yaxis_title="test accuracy (%)", plot_bgcolor="white", height=380,
                      legend=dict(font=dict(size=10)))
    fig.update_xaxes(gridcolor="#eee")
    fig.update_yaxes(gridcolor="#eee")
    return fig


def experiment_view(folder) -> html.Div:
    with open(folder / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    fig = go.Figure()
    for subset in sorted({r["subset"] for r in rows}):
        pts = sorted((r for r in rows if r["subset"] == subset), key=lambda r: int(r["batch_size"]))
        fig.add_trace(go.Scatter(
            x=[int(p["batch_size"]) for p in pts], y=[100 * float(p["mean_test_acc"]) for p in pts],
            error_y=dict(array=[100 * float(p["std_test_acc"]) for p in pts]),
            mode="lines+markers", name=subset))
    fig.update_layout(xaxis_type="log", xaxis_title="global batch size", height=340,
                      yaxis_title="test accuracy (%)", plot_bgcolor="white",
                      margin=dict(l=40, r=10, t=10, b=40))
    head = html.Thead(html.Tr([html.Th(h) for h in ("subset", "batch", "runs", "mean acc",
                                                     "std")]))
    body = html.Tbody([html.Tr([html.Td(r["subset"]), html.Td(r["batch_size"]), html.Td(r["n"]),
                                html.Td(f"{100 * float(r['mean_test_acc']):.2f}%"),
                                html.Td(f"{100 * float(r['std_test_acc']):.2f}")]) for r in rows])
    return html.Div([html.H6(f"Experiment {folder.name}"),
                     dbc.Row([dbc.Col(dcc.Graph(figure=fig), md=7),
                              dbc.Col(dbc.Table([head, body], size="sm", striped=True), md=5)])])


def layout(run_id: str | None = None, **_query) -> html.Div:
    try:
        resolve_run(settings().runs_root, run_id or "").require()
    except InputError as exc:
        return html.Div([html.H4("Results"), error_alert(str(exc))])
    return html.Div([
        dcc.Store(id=RUN, data=run_id), dcc.Interval(id=POLL, interval=2000),
        html.Div([html.H4(f"Results · {run_id}", className="me-3 mb-0"),
                  dcc.Link("← curate", href=f"/curate/{run_id}")],
                 className="d-flex align-items-baseline mb-2"),
        dbc.Card(dbc.CardBody([html.H6("Training curves"),
                               dcc.Graph(id=CURVES, config={"displaylogo": False})]),
                 class_name="mb-3"),
        html.Div(id=EXPERIMENTS),
    ])


@callback(Output(CURVES, "figure"), Output(EXPERIMENTS, "children"),
          Input(POLL, "n_intervals"), State(RUN, "data"))
def refresh(_n, run_id):
    run = resolve_run(settings().runs_root, run_id)
    experiments = [experiment_view(f.parent) for f in
                   sorted((run.path / "experiments").glob("*/summary.csv"))]
    return training_curves(run.path), experiments or html.Div(
        "No experiment yet: run 'curator experiment RUN' to compare subsets across batch sizes.",
        className="text-muted small")
