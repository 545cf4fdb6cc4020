"""Runs (home): every run in the runs root, and a form that starts a new one."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import dash
import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, dcc, html
from flask import current_app

from app.access import require
from app.app_context import dispatcher, settings
from app.job_view import job_progress
from app.layout import error_alert, feature_badges, live_table, number_input
from worker.jobs.job_params import PipelineParams
from worker.pipeline.choices import DEFAULT_IMAGE_MODEL, MODEL_HELP, MODEL_NAMES
from worker.pipeline.errors import InputError
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.map.embedding import DEFAULT_PERPLEXITY, EmbeddingOptions
from worker.pipeline.metrics import detection_scores
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions, check_dataset
from worker.pipeline.storage.job_store import FINAL, JobStore
from worker.pipeline.storage.rundir import step_record
from worker.pipeline.storage.runlock import claim_out_dir
from worker.run_catalog import list_runs, resolve_run
from worker.settings import data_roots_of

dash.register_page(__name__, path="/", title="Runs · tsne-curator")

TABLE = "runs-table"
POLL = "runs-poll"
ALERT = "runs-alert"
F_NAME, F_SPEC, F_SPLIT = "new-name", "new-spec", "new-split"
F_LABELS, F_COLUMN, F_TRUE = "new-labels", "new-label-column", "new-true-column"
F_MODEL, F_WEIGHTS, F_FINETUNE, F_PERPLEXITY = "new-model", "new-weights", "new-finetune", \
    "new-perplexity"
F_NOISE, F_GO = "new-noise", "new-go"
STEPS = ("ingest", "extract", "embed", "cluster")
DEFAULT_CHOICE = "default"  # the model for the dataset's kind (names.default_model)


def run_rows() -> list[dict]:
    """Every run under the runs root (worker.run_catalog.list_runs), newest first, with its step
    states; a run that cannot be read keeps its row, with the reason."""
    out = []
    for entry in list_runs(settings().runs_root):
        dataset = entry.meta.get("dataset", {})
        out.append({"id": entry.id, "error": entry.error, "store": entry.store,
                    "dataset": dataset.get("spec") if isinstance(dataset, dict) else None,
                    "model": step_record(entry.meta, "extract").get("model", "-"),
                    "badges": feature_badges(entry.meta),
                    "n": entry.meta.get("n_samples", 0),
                    "steps": {s: step_record(entry.meta, s).get("status") == "done"
                              for s in STEPS}})
    return out


def run_counts(run_id: str) -> dict:
    """Flagged, overridden and dropped counts of a clustered run as stored now, and the F1
    of what is dropped against the true noise when true labels are known. Uses the Curate
    page's caches (app.run_data). Raises InputError when a file of the run cannot be read."""
    from app.run_data import current_state, run_data

    data = run_data(settings().runs_root, run_id)
    state = current_state(data)
    d, samples = state.decisions, data.samples
    f1 = (detection_scores(~d.kept, samples.labels != samples.true_labels)["f1"]
          if samples.has_truth else None)
    return {"flagged": int(d.flagged.sum()), "overridden": len(state.overrides),
            "dropped": int((~d.kept).sum()), "f1": f1}


def _counts_cells(c: dict | None) -> list[html.Td]:
    if c is None:
        return [html.Td("-"), html.Td("-"), html.Td("-")]
    return [html.Td(f"{c['flagged']:,}"), html.Td(f"{c['overridden']:,}"),
            html.Td("-" if c["f1"] is None else f"{c['f1']:.3f}",
                    title=f"{c['dropped']:,} dropped, scored against the true labels")]


def _broken_row(run_id: str, error: str) -> html.Tr:
    return html.Tr([html.Td(run_id), html.Td(dbc.Badge("cannot be read", color="danger"),
                                             className="small"),
                    html.Td(error, colSpan=7, className="small text-danger")])


def _row(r: dict) -> html.Tr:
    """One run's row; a run whose files cannot be read is one broken row that says why."""
    if r["error"]:
        return _broken_row(r["id"], r["error"])
    ready = r["steps"]["cluster"]
    try:
        counts = run_counts(r["id"]) if ready else None
        recent = JobStore(r["store"]).list()[:3] if r["store"].is_file() else []
    except InputError as exc:
        return _broken_row(r["id"], str(exc))
    jobs = [j for j in recent if j["status"] not in FINAL or j["status"] == "failed"][:2]
    return html.Tr([
        html.Td(dcc.Link(r["id"], href=f"/curate/{r['id']}") if ready else r["id"]),
        html.Td(html.Code(r["dataset"] or "-", className="small")),
        html.Td([html.Span(r["model"], className="me-1"), *r["badges"]]),
        html.Td(f"{r['n']:,}"), *_counts_cells(counts),
        html.Td([dbc.Badge(s, color="success" if ok else "light",
                           text_color=None if ok else "secondary", class_name="me-1")
                 for s, ok in r["steps"].items()]),
        html.Td([job_progress(j) for j in jobs] or (
            dcc.Link("curate →", href=f"/curate/{r['id']}") if ready else "")),
    ])


def _form() -> html.Details:
    def field(label, comp, width=3):
        return dbc.Col([dbc.Label(label, class_name="small mb-0"), comp], md=width)

    body = dbc.CardBody([
        dbc.Row([
            field("run name", dbc.Input(id=F_NAME, placeholder="e.g. cifar10n", size="sm")),
            field("dataset", dbc.Input(id=F_SPEC, value="digits", size="sm",
                                       placeholder="digits | cifar10:DIR | folder:DIR")),
            field("split", dbc.Select(id=F_SPLIT, value="train", size="sm", options=[
                {"label": s, "value": s} for s in ("train", "test")]), 2),
            field("inject noise", number_input(F_NOISE, "inject_noise"), 2),
        ], class_name="g-2"),
        dbc.Row([
            field("labels CSV (optional)", dbc.Input(id=F_LABELS, size="sm")),
            field("label column", dbc.Input(id=F_COLUMN, value="label", size="sm"), 2),
            field("true label column", dbc.Input(id=F_TRUE, size="sm"), 2),
        ], class_name="g-2 mt-1"),
        dbc.Row([
            field("model", dbc.Select(id=F_MODEL, value=DEFAULT_CHOICE, size="sm", options=[
                {"label": f"recommended: {DEFAULT_IMAGE_MODEL} (pixels for digits)",
                 "value": DEFAULT_CHOICE},
                *({"label": m, "value": m, "title": MODEL_HELP[m]} for m in MODEL_NAMES)])),
            field("weights file (optional)", dbc.Input(id=F_WEIGHTS, size="sm")),
            field("fine-tune epochs", number_input(F_FINETUNE, "finetune"), 2),
            field("perplexity", number_input(F_PERPLEXITY, "perplexity"), 2),
            dbc.Col(dbc.Button("Start", id=F_GO, color="primary", size="sm",
                               class_name="mt-3"), md=2),
        ], class_name="g-2 mt-1 align-items-end"),
        html.Details([html.Summary("what each model means", className="small text-muted"),
                      html.Ul([html.Li([html.Code(m), f": {MODEL_HELP[m]}"])
                               for m in MODEL_NAMES], className="small text-muted mb-0",
                              id="model-help")], className="mt-1"),
    ])
    # Collapsed under the runs table: most visits open a run, few start one.
    return html.Details([html.Summary("New run…", id="new-run-toggle",
                                      className="h6 text-primary", style={"cursor": "pointer"}),
                         dbc.Card(body, class_name="mb-3")], id="new-run")


def layout(**_query) -> html.Div:
    return html.Div([
        html.H4("Runs"), html.Div(id=ALERT),
        dcc.Interval(id=POLL, interval=1000),
        live_table(("run", "dataset", "model", "samples", "flagged", "overridden", "F1",
                    "steps", ""), TABLE),
        _form(),
    ])


@callback(Output(TABLE, "children"), Input(POLL, "n_intervals"))
def refresh(_n):
    runs = run_rows()
    if not runs:
        return html.Tr(html.Td("No runs yet: start one with New run below, or run "
                               "'curator pipeline --dataset digits --out runs/demo'.",
                               colSpan=9, className="text-muted"))
    return [_row(r) for r in runs]


def inside_data_roots(what: str, path: Path) -> Path:
    """``path`` resolved, if it lies under one of the data roots (a browser may name only
    files there); otherwise an error that names the roots, not the file's contents."""
    roots = data_roots_of(settings())
    target = path.expanduser().resolve()
    if not any(target.is_relative_to(r) for r in roots):
        raise InputError(f"the {what} must be under a data root ({', '.join(map(str, roots))}); "
                         "set CURATOR_DATA_ROOTS to allow another folder")
    return target


# A NamedTuple, not a dataclass: Dash runs a page module before it is in sys.modules,
# where dataclasses look their module up.
class RunForm(NamedTuple):
    """The New-run form's fields as the browser sends them (None for an empty field)."""

    name: str | None
    spec: str | None
    split: str | None
    labels: str | None
    column: str | None
    true_column: str | None
    noise: float | None
    model: str | None
    weights: str | None
    finetune: float | None
    perplexity: float | None


# The form's fields by RunForm's names: start_run receives them as one dict.
FORM_FIELDS = {"name": F_NAME, "spec": F_SPEC, "split": F_SPLIT, "labels": F_LABELS,
               "column": F_COLUMN, "true_column": F_TRUE, "noise": F_NOISE, "model": F_MODEL,
               "weights": F_WEIGHTS, "finetune": F_FINETUNE, "perplexity": F_PERPLEXITY}


def new_run_params(form: RunForm) -> tuple[str, PipelineParams]:
    """Validate the form; returns (run id, pipeline job params)."""
    import re

    name = (form.name or "").strip()
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name) or ".." in name:
        raise InputError("give the run a name of letters, digits, '.', '_' or '-'")
    run = resolve_run(settings().runs_root, name)
    if run.exists():
        raise InputError(f"a run named {name!r} exists already; choose another name")
    parsed = parse_spec((form.spec or "").strip(), form.split or "train")
    labels, weights = form.labels, form.weights
    for what, path in (("dataset", parsed.root), ("labels CSV", labels), ("weights", weights)):
        if path:
            inside_data_roots(what, Path(path))
    opts = DatasetOptions(parsed,
                          Path(labels) if labels else None, form.column or "label",
                          form.true_column or None, form.noise or 0, 0)
    check_dataset(opts)  # a features file's values and labels, as the CLI and API check them
    model = form.model
    feats = FeatureOptions(model=None if model in (None, "", DEFAULT_CHOICE) else model,
                           weights=Path(weights) if weights else None,
                           finetune_epochs=form.finetune or 0, device=settings().device,
                           num_workers=settings().num_workers)
    return name, PipelineParams(opts, feats, EmbeddingOptions(
        perplexity=form.perplexity or DEFAULT_PERPLEXITY))


@callback(
    Output(ALERT, "children"),
    inputs={"_n": Input(F_GO, "n_clicks"),
            "form": {field: State(id_, "value") for field, id_ in FORM_FIELDS.items()}},
    prevent_initial_call=True,
)
def start_run(_n, form: dict):
    try:
        require("run")
        run_id, params = new_run_params(RunForm(**form))
        claim_out_dir(resolve_run(settings().runs_root, run_id).path)
        job = dispatcher().submit(run_id, "pipeline", params)
    except InputError as exc:
        return error_alert(str(exc))
    except Exception:  # noqa: BLE001 - a bug: logged in full, never raw text on the page
        current_app.logger.exception("could not start run %r", form.get("name"))
        return error_alert("could not start the run: an internal error, logged on the server")
    return dbc.Alert(f"run {run_id} started (job {job}); its progress shows below",
                     color="success", duration=6000, class_name="py-2")
