"""Curate one run: the page put together from its components (app/curate/).

The page owns its stores (app/curate/__init__.py), the header, and where each component
sits. Its state is two values: the class to show (CLASS_PICK, written by the class list)
and the store's newest revision (REVISION, written by the change channel,
app/curate/changes.py). The one render path (app/curate/render.py) draws every
component's part from the store's snapshot when either changes, and says what the page
now shows (SHOWN, SHOWN_REV); the rule panel, the review list and the summary follow
those, so their requests start once the map's answer is in.
"""

from __future__ import annotations

import dash
import dash_bootstrap_components as dbc
from dash import dcc, html

from app.curate import (
    CLASS_PICK,
    REVISION,
    RUN,
    SHOWN,
    SHOWN_REV,
    TABS,
    changes,
    class_list,
    export,
    hover_card,
    params,
    render,
    retrain,
    review_list,
    summary,
)
from app.curate import map as curate_map
from app.data import current_state, run_data
from app.layout import error_alert, feature_advice, feature_badges
from app.server import settings
from worker.pipeline.errors import InputError

dash.register_page(__name__, path_template="/curate/<run_id>", title="Curate · tsne-curator")


def layout(run_id: str | None = None, **_query) -> html.Div:
    try:
        data = run_data(settings().runs_root, run_id or "")
        current_state(data)
    except InputError as exc:
        return html.Div([html.H4("Curate"), error_alert(str(exc)),
                         dcc.Link("← back to runs", href="/")])
    meta = data.run.read_meta()
    classes = list(data.samples.classes)
    return html.Div([
        dcc.Store(id=RUN, data=run_id), dcc.Store(id=CLASS_PICK, data=0),
        dcc.Store(id=REVISION), dcc.Store(id=SHOWN), dcc.Store(id=SHOWN_REV),
        html.Div([html.H4(f"Curate · {run_id}", className="mb-0 me-3"),
                  html.Span(feature_badges(meta), id="feature-badges", className="me-3"),
                  curate_map.status_line(),
                  dcc.Link("results →", href=f"/results/{run_id}", className="small ms-auto")],
                 className="d-flex align-items-baseline mb-2"),
        feature_advice(meta),
        changes.layout(),
        # One screen from 1200 px wide (1366×768 included): parameters and classes, the
        # map, and the review list side by side, each scrolling on its own; Summary,
        # Export and Retrain are tabs over the list. Narrower, they stack.
        dbc.Row([
            dbc.Col([params.layout(), class_list.layout()], xl=3, class_name="curate-side"),
            dbc.Col([curate_map.layout(run_id), hover_card.layout(run_id)], xl=4,
                    class_name="curate-map"),
            dbc.Col(dbc.Tabs([
                dbc.Tab(review_list.layout(classes), label="Review list", tab_id="review"),
                dbc.Tab(summary.layout(), label="Summary", tab_id="summary"),
                dbc.Tab(export.layout(), label="Export", tab_id="export"),
                dbc.Tab(retrain.layout(), label="Retrain", tab_id="retrain"),
            ], id=TABS, active_tab="review"), xl=5, class_name="curate-review"),
        ], class_name="g-3"),
    ])


# Dash runs a page module again for every app it builds (a module imported once would
# register its callbacks for the first app only): the components register from here.
render.register({"map": curate_map, "params": params, "class_list": class_list})
changes.register()
for component in (curate_map, params, class_list, hover_card, review_list, summary, export,
                  retrain):
    component.register()
