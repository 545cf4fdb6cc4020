"""Results of one run: every training's curves and table, and each experiment's verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dash
import dash_bootstrap_components as dbc
import plotly.graph_objects as go
from dash import Input, Output, State, callback, dcc, html
from plotly.subplots import make_subplots

from app.app_context import settings
from app.layout import GRAPH_CONFIG as LOCAL_GRAPH_CONFIG
from app.layout import error_alert
from app.result_figures import accuracy_vs_batch, accuracy_vs_fraction
from app.version_effects import experiment_version, read_experiments, version_effects
from worker.pipeline.errors import InputError
from worker.run_catalog import resolve_run
from worker.train.convergence import RULE, convergence
from worker.train.experiment import read_results
from worker.train.launch import read_metrics
from worker.train.verdict import compare, mean_without_leaks, verdict

dash.register_page(__name__, path_template="/results/<run_id>", title="Results · tsne-curator")

RUN = "results-run"
POLL = "results-poll"
CURVES = "results-curves"
TRAININGS = "results-trainings"
EXPERIMENTS = "results-experiments"
GRAPH_CONFIG = {**LOCAL_GRAPH_CONFIG, "displayModeBar": "hover"}


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def trainings(run_path: Path) -> list[dict]:
    """Every training under ``<run>/train``: its config, summary (empty while it runs)
    and per-epoch metrics, oldest first."""
    out = []
    for cfg_path in sorted((run_path / "train").glob("*/config.json"),
                           key=lambda p: p.stat().st_mtime):
        folder = cfg_path.parent
        out.append({"name": folder.name, "config": _read_json(cfg_path),
                    "summary": _read_json(folder / "summary.json"),
                    "metrics": read_metrics(folder)})
    return out


def training_curves(items: list[dict], n_classes: int) -> go.Figure:
    """Test accuracy (0–100%, with the chance line) and training loss per epoch."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.08,
                        subplot_titles=("test accuracy (%)", "training loss"))
    most = 1
    for k, t in enumerate(i for i in items if i["metrics"]):
        epochs = [r["epoch"] + 1 for r in t["metrics"]]
        most = max(most, t["config"].get("epochs") or epochs[-1])
        colour = f"hsl({(k * 67) % 360},60%,45%)"
        fig.add_trace(go.Scatter(x=epochs, y=[100 * r["test_acc"] for r in t["metrics"]],
                                 mode="lines+markers", name=t["name"], legendgroup=t["name"],
                                 line=dict(color=colour)), row=1, col=1)
        fig.add_trace(go.Scatter(x=epochs, y=[r["loss"] for r in t["metrics"]],
                                 mode="lines+markers", name=t["name"], legendgroup=t["name"],
                                 showlegend=False, line=dict(color=colour)), row=1, col=2)
    chance = 100.0 / max(1, n_classes)
    fig.add_hline(y=chance, line=dict(dash="dot", color="#888"), row=1, col=1,
                  annotation_text=f"chance {chance:.0f}%", annotation_position="top left")
    # Integer epoch ticks, about ten of them at most.
    ticks = dict(tick0=1, dtick=max(1, math.ceil(most / 10)), tickformat="d",
                 range=[0.5, most + 0.5], title_text="epoch", gridcolor="#eee")
    fig.update_xaxes(**ticks)
    fig.update_yaxes(range=[0, 100], row=1, col=1, gridcolor="#eee")
    fig.update_yaxes(rangemode="tozero", row=1, col=2, gridcolor="#eee")
    # The legend sits under the plots, where the mode bar (top right) cannot cover it.
    fig.update_layout(margin=dict(l=40, r=10, t=30, b=40), plot_bgcolor="white", height=420,
                      legend=dict(orientation="h", yanchor="top", y=-0.18, x=0,
                                  font=dict(size=10)))
    return fig


def trainings_table(items: list[dict]) -> dbc.Table:
    head = html.Thead(html.Tr([html.Th(h, title=tip) for h, tip in (
        ("training", None), ("subset", None), ("images", None), ("batch", None),
        ("epochs", None), ("status", None), ("test acc", "on the whole test split"),
        ("without leaks", "on the test split without the test images a train image nearly "
                          "copies (leak findings): comparable with published numbers"))]))
    body = []

    def pct(acc: float | None) -> str:
        return f"{100 * acc:.2f}%" if acc is not None else "-"

    for t in reversed(items):
        c, s = t["config"], t["summary"]
        status = s.get("status") or f"running (epoch {len(t['metrics'])}/{c.get('epochs')})"
        # A finished training still learning at its end is marked (the plateau rule,
        # worker/train/convergence.py): comparing it measures speed, not the subset.
        lag = convergence(t["metrics"], s.get("test_size")) \
            if s.get("status") == "completed" else None
        status_cell = html.Td(status) if lag is None or lag.converged else html.Td(
            [status, " · ", html.Span("not converged", className="text-danger fw-semibold")],
            title=lag.reason("it") + f"; run with --epochs {2 * len(t['metrics'])}",
            className="training-not-converged")
        leaked = s.get("test_leaked")
        clean = pct(s.get("final_test_acc_without_leaks")) + (f" ({leaked} left out)"
                                                                if leaked else "")
        body.append(html.Tr([html.Td(t["name"], className="small"), html.Td(c.get("subset")),
                             html.Td(f"{c.get('subset_size', 0):,}"), html.Td(c.get("batch_size")),
                             html.Td(c.get("epochs")), status_cell,
                             html.Td(pct(s.get("final_test_acc"))), html.Td(clean)]))
    return dbc.Table([head, html.Tbody(body)], size="sm", striped=True, class_name="small",
                     id="results-trainings-table")


def experiment_view(folder: Path) -> html.Div:
    """The verdict table of one experiment: per batch size and subset, images, seeds, test
    accuracy mean ± sd, difference against full and random with its standard error, and
    one verdict line per batch size."""
    rows = read_results(folder)
    results = compare(rows)
    head = html.Thead(html.Tr([html.Th(h) for h in (
        "batch", "subset", "images", "epochs · steps", "seeds", "test acc (mean ± sd)",
        "without leaks", "vs full", html.Span("vs random", title=(
            "against the random control of the same size and class counts: random for "
            "filtered and corrected, random@F for pruned@F")), "converged")]))

    def converged_cell(r) -> html.Td:  # noqa: ANN001 - SubsetResult
        if r.converged is None:
            return html.Td("-", title="not recorded (an experiment from before the rule)")
        if r.converged:
            return html.Td("yes")
        return html.Td("no", className="text-danger fw-semibold", title=r.still_learning())

    def without_leaks(subset: str, batch: int) -> str:
        acc = mean_without_leaks(rows, subset, batch)
        return f"{100 * acc:.2f}%" if acc is not None else "-"

    def diff_cell(d) -> html.Td:  # noqa: ANN001 - Difference | None
        if d is None:
            return html.Td("-")
        cls = ("text-success" if d.diff > 0 else "text-danger") if d.clear else "text-muted"
        return html.Td(d.text(), className=cls,
                       title=f"p = {d.p:.3f}" if d.p is not None else "one seed: no spread")

    body = html.Tbody([html.Tr([
        html.Td(r.batch_size), html.Td(r.subset), html.Td(f"{r.images:,}"),
        html.Td(f"{r.epochs} · {r.steps:,}" if r.steps else f"{r.epochs or '-'}"),
        html.Td(len(r.accs)), html.Td(f"{100 * r.mean:.2f}% ± {100 * r.sd:.2f}"),
        html.Td(without_leaks(r.subset, r.batch_size)),
        diff_cell(r.vs_full), diff_cell(r.vs_random), converged_cell(r)]) for r in results])
    lines = [html.Li(verdict(results, b)) for b in sorted({r.batch_size for r in results})]
    batches = sorted({r.batch_size for r in results})
    figure = [dcc.Graph(figure=accuracy_vs_batch(results), config=GRAPH_CONFIG,
                        className="experiment-figure")] if len(batches) > 1 else []
    pruning = accuracy_vs_fraction(results, rows)
    if pruning is not None:
        figure.append(dcc.Graph(figure=pruning, config=GRAPH_CONFIG,
                                className="experiment-pruning"))
    version = experiment_version(rows)
    return dbc.Card(dbc.CardBody([
        html.H6([f"Experiment {folder.name}", html.Span(
            f" · version {version}" if version else " · no saved version",
            className="text-muted experiment-version",
            title="the curation version its curated subsets trained on")]), *figure,
        dbc.Table([head, body], size="sm", striped=True, class_name="small experiment-table"),
        html.Ul(lines, className="small mb-0 experiment-verdict"),
        html.Div("Differences are in percentage points ± their standard error; a difference "
                 "is called outside the noise when Welch's t-test over seeds gives p < 0.05. "
                 f"Converged: {RULE}; no winner is named while a training was still "
                 "learning.", className="small text-muted mt-1"),
    ]), class_name="mb-3")


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
        html.Div(id=EXPERIMENTS),
        dbc.Card(dbc.CardBody([html.H6("Trainings"),
                               dcc.Graph(id=CURVES, config=GRAPH_CONFIG),
                               html.Div(id=TRAININGS)]), class_name="mb-3"),
    ])


@callback(Output(CURVES, "figure"), Output(TRAININGS, "children"),
          Output(EXPERIMENTS, "children"), Input(POLL, "n_intervals"), State(RUN, "data"))
def refresh(_n, run_id):
    run = resolve_run(settings().runs_root, run_id)
    items = trainings(run.path)
    folders = [f.parent for f in sorted((run.path / "experiments").glob("*/results.csv"),
                                        key=lambda p: p.stat().st_mtime)]
    experiments = [experiment_view(f) for f in folders]
    effects = effects_view(version_effects(run, read_experiments(folders, read_results)))
    table = trainings_table(items) if items else html.Div(
        "No training yet: use Retrain on the Curate page, or 'curator retrain RUN'.",
        className="text-muted small")
    return (training_curves(items, len(run.read_meta().get("classes", []))), table,
            [*effects, *experiments] or html.Div(
                "No experiment yet: 'curator experiment RUN' compares filtered, full and random "
                "over seeds and gives a verdict.", className="text-muted small mb-3"))


def effects_view(effects: list[dict]) -> list:
    """What each version did (app/version_effects.py): one item per experiment set beside
    the earlier one on another version; nothing while there is no such pair."""
    if not effects:
        return []
    items = [html.Li([html.B(f"{e['versions']}"), f" ({e['before']} → {e['after']}): ",
                      e["changes"], html.Br(),
                      "; ".join(e["accuracy"]) or "no curated subset trained in both"])
             for e in effects]
    return [dbc.Card(dbc.CardBody([
        html.H6("What each version did"),
        html.Ul(items, className="small mb-0 version-effects"),
        html.Div("Accuracy: the later experiment minus the earlier one, Welch's t-test over "
                 "their seeds; changes: 'curator diff RUN A B'.",
                 className="small text-muted mt-1")]), class_name="mb-3")]
