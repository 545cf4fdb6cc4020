"""The Summary tab: every class's counts and reduction, while the tab is open (the table
is taken down when the tab is left: its cells are ~150 mounted components, and each costs
every store update of a class switch a selector run, docs/benchmarks.md)."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, ctx, html
from dash.exceptions import PreventUpdate

from app.app_context import settings
from app.curate import RUN, SHOWN_REV, TABS, Page, logic
from app.run_data import current_state, run_data

PART = "summary"
SLOT = "tab"
TITLE = "Summary"
TABLE = "curate-summary"


def layout(_page: Page) -> html.Div:
    return html.Div(id=TABLE, className="mt-2 curate-summary")


def register() -> None:
    """The tab's callback, for the page module to call as Dash imports it."""
    callback(Output(TABLE, "children"), Input(SHOWN_REV, "data"), Input(TABS, "active_tab"),
             State(RUN, "data"), prevent_initial_call=True)(on_summary)


def on_summary(_revision, tab, run_id):
    """The table for the revision the page shows while the tab is open; none once left
    (a tab change takes it down; a new revision while it is closed changes nothing)."""
    if tab != "summary":
        if ctx.triggered_id != TABS:
            raise PreventUpdate
        return None
    data = run_data(settings().runs_root, run_id)
    return table(logic.class_counts(data, current_state(data)))


def table(rows: list[dict]) -> dbc.Table:
    """``rows`` (:func:`~app.curate.logic.class_counts`, the total last) as a table."""
    keys = (*logic.COUNT_KEYS, *logic.FINDING_KEYS)
    head = html.Thead(html.Tr([html.Th(h) for h in ("class", *keys, "reduction")]))
    body = html.Tbody([html.Tr([html.Td(r["class"]), *[html.Td(r.get(k, 0)) for k in keys],
                                html.Td(f"{r['reduction_pct']:.2f}%")],
                               className="fw-semibold" if r["class"] == "total" else None)
                       for r in rows])
    return dbc.Table([head, body], size="sm", striped=True, hover=True, class_name="w-auto")
