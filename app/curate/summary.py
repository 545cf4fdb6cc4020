"""The Summary tab: every class's counts and reduction, while the tab is open (the table
is taken down when the tab is left: its cells are ~150 mounted components, and each costs
every store update of a class switch a selector run, docs/benchmarks.md)."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, ctx, html
from dash.exceptions import PreventUpdate

from app.app_context import settings
from app.curate import RUN, SHOWN_REV, TABS, Page, page_actions
from app.run_data import RunData, RunState, current_state, run_data
from worker.pipeline.choices import DEFAULT_PRUNING, SHOWN_FRACTIONS
from worker.train.data import pruned_sizes, training_pool

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
    state = current_state(data)
    rows = page_actions.class_counts(data, state)
    return [table(rows), pruning_table(data, state, rows[-1]["kept"])]


def table(rows: list[dict]) -> dbc.Table:
    """``rows`` (:func:`~app.curate.page_actions.class_counts`, the total last) as a table."""
    keys = (*page_actions.COUNT_KEYS, *page_actions.FINDING_KEYS)
    head = html.Thead(html.Tr([html.Th(h) for h in ("class", *keys, "reduction")]))
    body = html.Tbody([html.Tr([html.Td(r["class"]), *[html.Td(r.get(k, 0)) for k in keys],
                                html.Td(f"{r['reduction_pct']:.2f}%")],
                               className="fw-semibold" if r["class"] == "total" else None)
                       for r in rows])
    return dbc.Table([head, body], size="sm", striped=True, hover=True, class_name="w-auto")


PRUNING = "curate-summary-pruning"


def pruning_table(data: RunData, state: RunState, kept: int) -> html.Div:
    """What ``pruned@F`` would train and leave out at 70/50/30%: F of each class of what
    the curation keeps (outside any hold-out), ranked by value, and the command that
    compares each with its random control."""
    labels = data.samples.labels
    sizes = pruned_sizes(data.run, labels, state.decisions.kept, state.train_labels(labels),
                         SHOWN_FRACTIONS)
    pool = training_pool(data.run, labels)
    trained = int(state.decisions.kept[pool].sum())
    head = html.Thead(html.Tr([html.Th(h) for h in ("subset", "trains", "leaves out",
                                                     "of the training pool")]))
    body = html.Tbody([html.Tr([
        html.Td(f"pruned@{f:g}"), html.Td(f"{n:,}"), html.Td(f"{trained - n:,} more"),
        html.Td(f"{n / len(pool):.0%}" if len(pool) else "-")]) for f, n in sizes.items()])
    cmd = ("curator experiment RUN --subsets full,"
           + ",".join(f"pruned@{f:g},random@{f:g}" for f in SHOWN_FRACTIONS[1:]))
    return html.Div([
        html.H6("Pruning by value", className="mt-3 mb-1"),
        html.Div(f"After the curation ({kept:,} kept; {trained:,} in the training pool), "
                 f"pruned@F trains the fraction F of each class, chosen by "
                 f"{DEFAULT_PRUNING} sampling on the distance to the class's prototype in "
                 "the run's features (no training needed). Compare it with random@F, the "
                 "same size at random:", className="small text-muted"),
        dbc.Table([head, body], size="sm", striped=True, class_name="w-auto small mb-1"),
        html.Code(cmd, className="small"),
    ], id=PRUNING)
