"""The class list: every class with its counts, in a dash-ag-grid.

The grid scrolls virtually, sorts by any column and filters by name in the browser, so
1,000 classes cost what 10 do and a sort never waits for the server. "All classes" is a
row pinned on top that no sort or filter moves. Clicking a row shows that class: its
script (assets/classlist.js, namespace ``classlist``) writes the code into the page's
CLASS_PICK store, of which it is the one writer, and marks the row. Names are the user's,
from a labels file: the grid renders them as text.
"""

from __future__ import annotations

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
from dash import (
    ClientsideFunction,
    Input,
    Output,
    Patch,
    State,
    clientside_callback,
    dcc,
    html,
    no_update,
)

from app import ids
from app.curate import CLASS_PICK, Page
from app.curate.page_actions import COUNT_KEYS, FINDING_KEYS
from app.curate.render import PageRequest
from worker.pipeline.findings import kinds

PART = "class_list"
SLOT = "side"
GRID = ids.CLASS_LIST
MATCHED = "curate-class-matched"  # "12 of 1,000 classes" while the name filter is set
MARKED = "curate-class-drawn"  # the marking callback's output, a placeholder (it returns none)
ALL = "all"  # the pinned row's code: every class at once

_COUNT = {"width": 58, "filter": False, "type": "rightAligned", "suppressSizeToFit": True,
          "sortingOrder": ["desc", "asc", None]}
COLUMNS = [
    {"field": "class", "headerName": "class", "flex": 1, "minWidth": 80,
     "filter": "agTextColumnFilter", "floatingFilter": True,
     "filterParams": {"filterOptions": ["contains"], "maxNumConditions": 1},
     "floatingFilterComponentParams": {"suppressFilterButton": True},
     "headerTooltip": "The class (its given label). Type in the box below to find one."},
    {"field": "size", **_COUNT, "headerTooltip": "Samples given this label"},
    {"field": "flagged", "headerName": "flag", **_COUNT,
     "headerTooltip": "Samples the rule flags (drops unless a reviewer decides)"},
    {"field": "share", "headerName": "%", **_COUNT, "width": 52,
     "headerTooltip": "Flagged share of the class, in percent"},
    {"field": "overridden", "headerName": "ovr", **_COUNT,
     "headerTooltip": "Kept or dropped by a reviewer, with the label as it is"},
    {"field": "relabelled", "headerName": "rel", **_COUNT,
     "headerTooltip": "Given another class by a reviewer"},
    {"field": "kept", **_COUNT, "headerTooltip": "Samples the exported subset keeps"},
    {"field": "proposed", "headerName": "prop", **_COUNT,
     "headerTooltip": "Kept, but a finding proposes to drop it (its evidence is below the "
                      "kind's drop cut): decide in the review list"},
    # One count per finding kind besides label (worker/pipeline/findings).
    *({"field": k.name, "headerName": k.name[:4], **_COUNT,
       "headerTooltip": f"Samples marked {k.title}"} for k in kinds() if k.name != "label"),
]


def layout(_page: Page) -> dbc.Card:
    """The card: the grid and its "N of M classes" line."""
    grid = dag.AgGrid(
        id=GRID, columnDefs=COLUMNS, rowData=[],
        getRowId="params.data.id",
        defaultColDef={"sortable": True, "resizable": False,
                       "suppressHeaderMenuButton": True},
        dashGridOptions={"rowHeight": 26, "headerHeight": 28, "floatingFiltersHeight": 28,
                         "animateRows": False, "suppressCellFocus": False,
                         "tooltipShowDelay": 300, "pinnedTopRowData": [],
                         # The shown class's row (assets/classlist.js keeps it current).
                         "rowClassRules": {"class-picked": {"function": "classPicked(params)"}}},
        className="ag-theme-alpine class-grid",
        style={"height": "max(180px, calc(100vh - 470px))"})
    return dbc.Card(dbc.CardBody([
        html.H6("Classes", className="card-title"), dcc.Store(id=MARKED),
        html.Div(id=MATCHED, className="text-muted small mb-1"), grid]), class_name="mb-3")


def grid_rows(rows: list[dict]) -> tuple[list[dict], dict]:
    """The grid's rows and its pinned "All classes" row from the per-class counts.

    Parameters
    ----------
    rows : per-class count rows (``worker.pipeline.curation.snapshot.summary_rows``), the total last

    Returns
    -------
    (rows, pinned): one dict per class with its ``code``, name, counts and flagged share
    (%, one decimal) and its ``id`` (the code as text, the grid's row id), in class
    order; and the total as the pinned row (code and id ``"all"``)
    """
    def row(code: int | str, r: dict, name: str) -> dict:
        share = round(100.0 * r["flagged"] / r["size"], 1) if r["size"] else 0.0
        return {"id": str(code), "code": code, "class": name, "share": share,
                **{k: r[k] for k in COUNT_KEYS}, **{k: r.get(k, 0) for k in FINDING_KEYS}}

    return ([row(c, r, str(r["class"])) for c, r in enumerate(rows[:-1])],
            row(ALL, rows[-1], "All classes"))


# ------------------------------------------------------------------------ render part
OUTPUTS = {"rows": Output(GRID, "rowData"), "pinned": Output(GRID, "dashGridOptions")}
STATES: dict = {}


def render(view: PageRequest, _states: dict) -> dict:
    """Every class's counts, when the store changed (a class switch leaves them)."""
    if not view.stored:
        return dict.fromkeys(OUTPUTS, no_update)
    rows, total = grid_rows(view.counts)
    pinned = Patch()
    pinned["pinnedTopRowData"] = [total]
    return {"rows": rows, "pinned": pinned}


def register() -> None:
    """The list's callbacks (assets/classlist.js), for the page module to call as Dash
    imports it: the shown class's row is marked and scrolled into view; "N of M classes"
    while its name filter is set. (A clicked row picks its class in the script itself.)"""
    clientside_callback(
        ClientsideFunction(namespace="classlist", function_name="show"),
        Output(MARKED, "data"), Input(CLASS_PICK, "data"), Input(GRID, "rowData"),
    )
    clientside_callback(
        ClientsideFunction(namespace="classlist", function_name="matched"),
        Output(MATCHED, "children"), Input(GRID, "virtualRowData"), State(GRID, "rowData"),
    )
