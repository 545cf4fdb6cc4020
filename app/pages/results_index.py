"""Results (navigation bar): the runs that have trainings or experiments, with links."""

from __future__ import annotations

import dash
import dash_bootstrap_components as dbc
from dash import dcc, html

from app.app_context import settings
from worker.run_catalog import list_runs

dash.register_page(__name__, path="/results", title="Results · tsne-curator")


def layout(**_query) -> html.Div:
    rows = []
    for entry in list_runs(settings().runs_root):
        if entry.error is not None:
            continue
        n_train = len(list((entry.path / "train").glob("*/config.json")))
        n_exp = len(list((entry.path / "experiments").glob("*/results.csv")))
        if n_train or n_exp:
            rows.append(html.Tr([html.Td(dcc.Link(entry.id, href=f"/results/{entry.id}")),
                                 html.Td(n_train), html.Td(n_exp)]))
    if not rows:
        return html.Div([html.H4("Results"), html.Div(
            "No training yet: open a run on the Runs page and use its Retrain tab.",
            className="text-muted")])
    head = html.Thead(html.Tr([html.Th(h) for h in ("run", "trainings", "experiments")]))
    return html.Div([html.H4("Results"),
                     dbc.Table([head, html.Tbody(rows)], size="sm", hover=True,
                               id="results-index")])
