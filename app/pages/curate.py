"""Curate one run: the page put together from its components (app/curate/).

The page owns its stores (app/curate/__init__.py), the header, and where each component
sits. Its state is the class to show (CLASS_PICK, written by the class list) and the
store, which components change through their change stores (app/curate/changes.py). The
one render path (app/curate/render.py) draws every component's part from the store's
snapshot when the class or a change store changes, and says what the page now shows
(SHOWN, SHOWN_REV); the rule panel, the review list and the summary follow
those, so their requests start once the map's answer is in. Tabs marked BUILT_ON_OPEN
(Export, Retrain) are put on the page the first time they are opened.
"""

from __future__ import annotations

import dash
import dash_bootstrap_components as dbc
from dash import (
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    dcc,
    html,
    no_update,
)
from dash.exceptions import PreventUpdate

from app.app_context import settings
from app.curate import (
    CLASS_PICK,
    RUN,
    SHOWN,
    SHOWN_REV,
    TABS,
    Page,
    changes,
    class_map,
    overridden_notice,
    render,
)
from app.curate.components import COMPONENTS, render_parts
from app.layout import error_alert, feature_advice, feature_badges
from app.run_data import current_state, run_data
from worker.pipeline.errors import InputError
from worker.pipeline.storage.curation_store import open_store

dash.register_page(__name__, path_template="/curate/<run_id>", title="Curate · tsne-curator")


def layout(run_id: str | None = None, **_query) -> html.Div:
    try:
        data = run_data(settings().runs_root, run_id or "")
        current_state(data)
    except InputError as exc:
        return html.Div([html.H4("Curate"), error_alert(str(exc)),
                         dcc.Link("← back to runs", href="/")])
    page = _page(run_id, data)

    def slot(name: str) -> list:
        return [c.layout(page) for c in COMPONENTS if c.SLOT == name]

    return html.Div([
        dcc.Store(id=RUN, data=run_id), dcc.Store(id=CLASS_PICK, data=0),
        dcc.Store(id=SHOWN), dcc.Store(id=SHOWN_REV), dcc.Store(id=BUILT),
        html.Div([html.H4(f"Curate · {run_id}", className="mb-0 me-3"),
                  html.Span(feature_badges(page.meta), id="feature-badges", className="me-3"),
                  class_map.status_line(),
                  dcc.Link("results →", href=f"/results/{run_id}", className="small ms-auto")],
                 className="d-flex align-items-baseline mb-2"),
        feature_advice(page.meta),
        overridden_notice.notice(open_store(data.run), page.classes),
        changes.layout(),
        # One screen from 1200 px wide (1366×768 included): parameters and classes, the
        # map, and the review list side by side, each scrolling on its own; Summary,
        # Export and Retrain are tabs over the list. Narrower, they stack.
        dbc.Row([
            dbc.Col(slot("side"), xl=3, class_name="curate-side"),
            dbc.Col(slot("map"), xl=4, class_name="curate-map"),
            dbc.Col(dbc.Tabs([dbc.Tab(html.Div(id=tab_body(c.PART)) if c in BUILT_ON_OPEN
                                      else c.layout(page), label=c.TITLE, tab_id=c.PART)
                              for c in COMPONENTS if c.SLOT == "tab"],
                             id=TABS, active_tab="review"), xl=5, class_name="curate-review"),
        ], class_name="g-3"),
    ])


def _page(run_id: str, data) -> Page:  # noqa: ANN001 - RunData
    return Page(run_id, list(data.samples.classes), data.run.read_meta())


# Tabs whose layout is built when first opened and kept after (a job followed there stays
# followed): until then they are not mounted, and every mounted component costs each store
# update of a class switch a selector run in Dash's renderer (docs/benchmarks.md).
BUILT_ON_OPEN = [c for c in COMPONENTS if getattr(c, "BUILT_ON_OPEN", False)]
BUILT = "curate-tabs-built"  # the parts of BUILT_ON_OPEN built so far


def tab_body(part: str) -> str:
    """The id of the element that holds a tab built on opening."""
    return f"curate-tab-{part}"


def on_tab(tab, run_id, built):
    """The opened tab's layout, the first time it is opened, and the tabs built so far."""
    built = built or []
    if tab in built or tab not in {c.PART for c in BUILT_ON_OPEN}:
        raise PreventUpdate
    page = _page(run_id, run_data(settings().runs_root, run_id))
    return [*[c.layout(page) if c.PART == tab else no_update for c in BUILT_ON_OPEN],
            [*built, tab]]


# Dash runs a page module again for every app it builds (a module imported once would
# register its callbacks for the first app only): the components register from here.
render.register(render_parts())
changes.register()
for component in COMPONENTS:
    component.register()
# The browser's one model of the page's state (assets/00-curate-store.js) hears what the
# page shows from here; its scripts read it there.
clientside_callback(ClientsideFunction(namespace="store", function_name="showing"),
                    Input(SHOWN, "data"), Input(SHOWN_REV, "data"))
callback(*[Output(tab_body(c.PART), "children") for c in BUILT_ON_OPEN],
         Output(BUILT, "data"), Input(TABS, "active_tab"), State(RUN, "data"),
         State(BUILT, "data"), prevent_initial_call=True)(on_tab)
