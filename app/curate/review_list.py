"""The review list: one queue across classes in a dash-ag-grid, with its actions.

The grid sorts and filters in the browser (its client-side row model), so a sort or a
filter of 17,000 rows never waits for the server. Rows come from ``app/curate/review_queue.py``. Its
script (assets/review.js, namespace ``review``) links the grid with the map (lasso
filters the list, a focused or hovered row rings its point, a clicked point scrolls to
its row) and gives it its keys (app/curate/key_actions.py). Its rows follow the revision the page
shows (SHOWN_REV), once the map's answer is in.
"""

from __future__ import annotations

from pathlib import Path

import dash_ag_grid as dag
import dash_bootstrap_components as dbc
from dash import (
    ALL,
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    ctx,
    dcc,
    html,
    no_update,
)
from dash.exceptions import PreventUpdate

from app import ids
from app.app_context import settings
from app.curate import (
    RUN,
    SHOWN,
    SHOWN_REV,
    TABS,
    Page,
    changes,
    code_of,
    page_actions,
    similar_panel,
)
from app.curate import review_queue as review
from app.curate.key_actions import key_help, run_action
from app.curate.review_columns import COLUMNS
from app.curate.review_queue import BULK, STATES
from app.layout import small_button
from app.run_data import current_state, run_data
from worker.pipeline.errors import InputError

PART = "review"
SLOT = "tab"
TITLE = "Review list"

GRID = ids.REVIEW_GRID
LISTED = "review-listed"  # a bulk button's request: its action and the listed rows' samples
PAIRS = "review-pairs"  # the confusion table of given → suggested pairs
PAIR_DATA = "review-pair-data"  # the pairs behind PAIRS' buttons, by index
PAIR_BTN = "review-pair"  # pattern-matching id type of a pair's button
KEEP = "review-keep"
DROP = "review-drop"
RELABEL_TO = ids.RELABEL_TO
RELABEL = "review-relabel"
MIN_SCORE = "review-min-score"
BULK_BTN = "review-bulk"  # pattern-matching id type: {"type": BULK_BTN, "action": ...}
PENDING = "review-pending"  # the bulk action waiting for confirmation
CONFIRM_TEXT = "review-confirm-text"
CONFIRM = "review-confirm"
CANCEL = "review-cancel"
CONFIRM_BOX = "review-confirm-box"
COUNT = ids.REVIEW_COUNT
CLEAR_FILTERS = "review-clear-filters"
KEY = ids.REVIEW_KEY  # a key's action on the focused row, written by assets/review.js
FOCUS = ids.REVIEW_FOCUS  # the focused row's sample, written by assets/review.js
DETAIL = "review-detail"  # why the focused row is flagged
SELECTION = "review-selection"  # "only the N points selected on the map" (assets/review.js)
# What the grid holds: {"rev": the store revision of its rows, "similar": the "similar
# to" listing's id, or None for the review queue; with the queue's first rows also
# "filtered": the class code ("all") they came filtered to}.
REV = "review-rev"
FOLLOWED = "review-followed"  # the class the grid's filter last followed (assets/review.js)
CLASS_FILTERS = "review-class-filters"  # each class's filter model (class_filter), by code
FINDINGS = "review-findings"  # a button per finding kind, filtering the list to it
# A button per finding kind ("duplicate · 62") and per state ("proposed · 9"), each
# filtering the list to its rows: one pattern, {"type", "column", "value"}.
FILTER_BTN = "review-filter-btn"
RELATED = "review-related"  # the focused row's duplicate group or leak pair, side by side

GRID_OUT = ("rows", "changes", "pairs", "pair_data", "findings", "rev", "first_filter")



def layout(page: Page) -> html.Div:
    """The grid with its actions: on the selected rows (keep, drop, relabel to any class)
    and on every listed row (accept suggestions above a score, keep all, drop all, each
    confirmed with the number it changes), and the confusion table whose cells filter."""
    classes = page.classes
    return html.Div([
        changes.store(PART), dcc.Store(id=LISTED), dcc.Store(id=PENDING), dcc.Store(id=PAIR_DATA),
        dcc.Store(id=KEY), dcc.Store(id=FOCUS), dcc.Store(id=REV), dcc.Store(id=FOLLOWED),
        # Built here once: assets/review.js only looks a class's model up.
        dcc.Store(id=CLASS_FILTERS,
                  data={str(code): class_filter(name) for code, name in enumerate(classes)}),
        html.Div(id=FINDINGS, className="mb-1 review-findings"),
        html.Div(id=PAIRS, className="mb-1 review-pairs"), _selected_row_actions(classes),
        _listed_row_actions(), _confirm_box(), similar_panel.layout(page),
        html.Div(id=SELECTION, className="small text-muted review-selection"), _review_grid(),
        similar_panel.asking(),
        html.Div(id=DETAIL, className="small mt-1 review-detail"),
        html.Div(id=RELATED, className="d-flex flex-wrap gap-2 mt-1 review-related"),
        _key_line(),
    ], className="mt-2")


def _selected_row_actions(classes: list[str]) -> dbc.Row:
    """Keep, Drop and Relabel (to any of ``classes``) for the rows selected in the grid."""
    return dbc.Row([
        dbc.Col(html.Span("Selected rows:", className="small text-muted"), width="auto"),
        dbc.Col(dbc.ButtonGroup([
            small_button("Keep", KEEP, "success",
                         "Keep the selected samples with the label they have now"),
            small_button("Drop", DROP, "danger",
                         "Leave the selected samples out of the exported subset"),
        ]), width="auto"),
        dbc.Col(dcc.Dropdown(id=RELABEL_TO, options=classes, placeholder="relabel to… (l)",
                             searchable=True, clearable=True, className="review-class-pick"),
                width="auto"),
        dbc.Col(small_button("Relabel", RELABEL, "primary",
                             "Give the selected samples the chosen class and keep them"),
                width="auto"),
    ], class_name="g-2 align-items-center mb-1")


def _listed_row_actions() -> dbc.Row:
    """The listed-row count and the bulk buttons that act on every listed row (each asks
    for confirmation first), with Clear filters."""
    return dbc.Row([
        dbc.Col(html.Span(id=COUNT, className="small text-muted"), width="auto"),
        dbc.Col(dbc.InputGroup([
            small_button(BULK["accept"], {"type": BULK_BTN, "action": "accept"}, "primary",
                         "Every listed sample whose score is at least this takes its "
                         "suggested class"),
            dbc.InputGroupText("score ≥", class_name="small"),
            dbc.Input(id=MIN_SCORE, type="number", min=0, max=1, step=0.05, value=0.9,
                      size="sm", style={"maxWidth": "5rem"}),
        ], size="sm"), width="auto"),
        dbc.Col(dbc.ButtonGroup([
            small_button(BULK["keep"], {"type": BULK_BTN, "action": "keep"}, "success",
                         "Keep every listed sample"),
            small_button(BULK["drop"], {"type": BULK_BTN, "action": "drop"}, "danger",
                         "Drop every listed sample"),
        ]), width="auto"),
        dbc.Col(dbc.ButtonGroup([
            small_button(BULK["drop_duplicates"], {"type": BULK_BTN,
                                                   "action": "drop_duplicates"}, "secondary",
                         "Every near-duplicate group with a listed member keeps one member "
                         "(the one you kept, else the representative) and drops the others"),
            small_button(BULK["drop_leaks"], {"type": BULK_BTN, "action": "drop_leaks"},
                         "secondary", "Drop every listed train image that nearly copies a "
                                      "test image"),
        ]), width="auto"),
        dbc.Col(dbc.Button("Clear filters", id=CLEAR_FILTERS, color="link", size="sm"),
                width="auto"),
    ], class_name="g-2 align-items-center mb-1")


def _confirm_box() -> dbc.Alert:
    """What a bulk action would change, with Confirm and Cancel (hidden until asked)."""
    return dbc.Alert([
        html.Span(id=CONFIRM_TEXT, className="me-2"),
        dbc.Button("Confirm", id=CONFIRM, color="primary", size="sm", class_name="me-1"),
        dbc.Button("Cancel", id=CANCEL, color="secondary", outline=True, size="sm"),
    ], id=CONFIRM_BOX, color="warning", is_open=False, class_name="py-1 px-2 my-1 small")


def _review_grid() -> dag.AgGrid:
    """The grid itself, empty until the queue's rows arrive (:func:`on_queue`)."""
    return dag.AgGrid(
        id=GRID, columnDefs=COLUMNS, rowData=[],
        getRowId="params.data.id",
        defaultColDef={"sortable": True, "resizable": True, "filter": True,
                       "floatingFilter": True, "suppressHeaderMenuButton": True},
        # No select-all box in the header: it recounted every row on each sort, and the
        # bulk buttons act on the listed rows, with a count to confirm first.
        dashGridOptions={"rowSelection": {"mode": "multiRow", "enableClickSelection": True,
                                          "headerCheckbox": False},
                         "rowHeight": 36, "headerHeight": 32, "floatingFiltersHeight": 30,
                         "animateRows": False, "rowBuffer": 4,
                         # Tooltips as title attributes: no tooltip component per cell.
                         "enableBrowserTooltips": True,
                         # The map's lasso or box selection (assets/dashAgGridFunctions.js).
                         "isExternalFilterPresent": {"function": "mapSelectionPresent()"},
                         "doesExternalFilterPass": {"function": "inMapSelection(params)"}},
        # Added by dash-ag-grid when the grid is ready, so no event is missed
        # (the functions are assets/review.js's).
        eventListeners={"cellFocused": ["reviewFocused(params)"],
                        "cellMouseOver": ["reviewHovered(params)"],
                        "modelUpdated": ["reviewCounted(params)"]},
        className="ag-theme-alpine review-grid",
        style={"height": "clamp(260px, calc(100vh - 390px), 900px)"})


def _key_line() -> html.Div:
    """The list's keys, as text between Kbd elements (a span each would be 9 more
    components)."""
    return html.Div(["keys:", *[part for k, what in key_help()
                                for part in (html.Kbd(k), f" {what}")]],
                    className="small text-muted review-keys")


def finding_buttons(counts: dict[str, int]) -> list:
    """A button per finding kind that marks listed rows, "duplicate · 62", each filtering
    the grid to that kind."""
    shown = {k: n for k, n in counts.items() if n}
    if not shown:
        return []
    return [html.Span("finding:", className="small text-muted me-2 text-nowrap"),
            *[dbc.Button(f"{kind} · {n}",
                         id={"type": FILTER_BTN, "column": "finding", "value": kind},
                         color="light", size="sm", class_name="me-1 mb-1 review-finding")
              for kind, n in shown.items()]]


def state_buttons(counts: dict[str, int]) -> list:
    """A button per state of the listed rows, "proposed · 9", each filtering the grid to
    it (the bulk actions then act on those rows: drop every proposed duplicate, …)."""
    if not counts:
        return []
    return [html.Span("state:", className="small text-muted ms-2 me-2 text-nowrap"),
            *[dbc.Button(f"{state} · {n}",
                         id={"type": FILTER_BTN, "column": "state", "value": state},
                         color="light", size="sm", title=STATES[state],
                         class_name=f"me-1 mb-1 review-state-btn review-state-{state}")
              for state, n in counts.items()]]


def column_filter(column: str, value: str) -> dict:
    """The grid's filter model for rows that kind ``value`` marks (``column`` "finding")
    or that are in state ``value`` (``column`` "state")."""
    how = "contains" if column == "finding" else "equals"
    return {column: {"filterType": "text", "type": how, "filter": value}}


def side_by_side(items: list[dict]) -> list:
    """The focused row's duplicate group or leak pair (review.related_images), each image
    with its caption and whether it is kept."""
    out = []
    for item in items:
        badge = "" if item["kept"] is None else (" · kept" if item["kept"] else " · dropped")
        out.append(html.Figure([
            html.Img(src=item["src"], className="review-related-img", alt=item["caption"]),
            html.Figcaption(item["caption"] + badge, className="small text-muted")],
            className="m-0 text-center review-related-item"))
    return out


def pair_buttons(pairs: list[dict]) -> list:
    """The confusion table as buttons, "cat → dog · 212", each filtering the grid to its
    pair (components, so class names stay text)."""
    if not pairs:
        return []
    return [html.Span("given → suggested:", className="small text-muted me-2 text-nowrap"),
            *[dbc.Button(f"{p['given']} → {p['suggested']} · {p['count']}",
                         id={"type": PAIR_BTN, "index": i}, color="light", size="sm",
                         class_name="me-1 mb-1 review-pair")
              for i, p in enumerate(pairs)]]


def class_filter(given: str, suggested: str | None = None) -> dict:
    """A grid filter model: rows given ``given`` (and, when set, suggested ``suggested``)."""
    model = {"given": {"filterType": "text", "type": "equals", "filter": given}}
    if suggested is not None:
        model["suggested"] = {"filterType": "text", "type": "equals", "filter": suggested}
    return model


# ---------------------------------------------------------------------------- callbacks
def register() -> None:
    """The list's callbacks, for the page module to call as Dash imports it."""
    _register_rows()
    _register_similar()
    _register_actions()
    _register_map_links()


def _register_rows() -> None:
    """The grid's rows and the filters its buttons set."""
    callback(
        output=_grid_outputs(),
        inputs={"shown_rev": Input(SHOWN_REV, "data"), "tab": Input(TABS, "active_tab"),
                "similar": State(similar_panel.SIMILAR, "data"), "shown": State(SHOWN, "data"),
                "run_id": State(RUN, "data"),
                "grid_rev": State(REV, "data"), "filters": State(CLASS_FILTERS, "data")},
        prevent_initial_call=True,
    )(on_queue)
    # A pair's button or Clear filters filter the list at once; a class switch filters it
    # to the shown class after the map has painted (assets/review.js followClass).
    callback(Output(GRID, "filterModel"),
             Input({"type": PAIR_BTN, "index": ALL}, "n_clicks"),
             Input(CLEAR_FILTERS, "n_clicks"),
             Input({"type": FILTER_BTN, "column": ALL, "value": ALL}, "n_clicks"),
             State(PAIR_DATA, "data"), prevent_initial_call=True)(on_grid_filter)
    clientside_callback(
        ClientsideFunction(namespace="review", function_name="followClass"),
        Output(FOLLOWED, "data"), Input(SHOWN, "data"), State(CLASS_FILTERS, "data"),
        prevent_initial_call=True,
    )


# Where each of :func:`grid_content`'s values goes: (component id, property).
GRID_PROPS = {"rows": (GRID, "rowData"), "changes": (GRID, "rowTransaction"),
              "pairs": (PAIRS, "children"), "pair_data": (PAIR_DATA, "data"),
              "findings": (FINDINGS, "children"), "rev": (REV, "data"),
              "first_filter": (GRID, "filterModel")}
# ... and each of :func:`listing_out`'s: the grid's, and the "similar to" line's.
LISTING_PROPS = {**GRID_PROPS, "similar": (similar_panel.SIMILAR, "data"),
                 "line": (similar_panel.LINE, "children"),
                 "back_hidden": (similar_panel.BACK_BOX, "hidden")}


def _grid_outputs(again: bool = False) -> dict:
    """The outputs of :func:`grid_content` (``again``: for the second callback that
    writes them)."""
    return {key: Output(*where, allow_duplicate=again or key == "first_filter")
            for key, where in GRID_PROPS.items()}


def _register_similar() -> None:
    """More like this (app/curate/similar_panel.py): an image file's listing and Back to
    the list, each one response with the list's rows; the listing sorted by distance and
    ringed on the map, and brought back when a late answer covered it (assets/review.js;
    the s key's own answer comes from app/script_routes.py ``similar_json``)."""
    similar_panel.register()
    outputs = {key: Output(*where, allow_duplicate=True)
               for key, where in LISTING_PROPS.items()}
    held = {"held": State(REV, "data"), "shown": State(SHOWN, "data")}
    callback(output=outputs,
             inputs={"_back": Input(similar_panel.BACK, "n_clicks"),
                     "run_id": State(RUN, "data"),
                     # What grid_content needs for the review queue, as one dict.
                     "grid": {**held, "filters": State(CLASS_FILTERS, "data")}},
             prevent_initial_call=True)(on_back)
    # The file in a callback of its own: a callback's requests carry all its inputs, and
    # the file (up to the server's body limit) would travel with every Back. It needs no
    # class filters (a listing is unfiltered), which at 1,000 classes are 90 KB.
    callback(output=outputs,
             inputs={"upload": Input(similar_panel.FILE, "data"),
                     "k": State(similar_panel.K, "value"), "run_id": State(RUN, "data"),
                     "grid": held},
             prevent_initial_call=True)(on_upload)
    clientside_callback(
        ClientsideFunction(namespace="review", function_name="similarShown"),
        Output(similar_panel.SHOWN, "data"), Input(similar_panel.SIMILAR, "data"),
        prevent_initial_call=True,
    )
    # A change made before an s that came back after its listing put the queue's rows
    # over it: the listing is asked for again (assets/review.js heldListing).
    clientside_callback(
        ClientsideFunction(namespace="review", function_name="heldListing"),
        Output(similar_panel.HELD, "data"), Input(REV, "data"),
        State(similar_panel.SIMILAR, "data"), prevent_initial_call=True,
    )


def _register_actions() -> None:
    """Keep, drop and relabel: on the selected rows, by key on the focused row, and on
    every listed row after a confirmation."""
    # The listed rows' ids are read from the grid only when a bulk button asks
    # (review.listed), and "N listed" is written by assets/review.js after the grid has
    # painted: a callback on the grid's virtualRowData ran Dash's callback machinery on
    # every sort of 17,000 rows.
    clientside_callback(
        ClientsideFunction(namespace="review", function_name="listed"),
        Output(LISTED, "data"), Input({"type": BULK_BTN, "action": ALL}, "n_clicks"),
        prevent_initial_call=True,
    )
    callback(Output(PENDING, "data"), Output(CONFIRM_TEXT, "children"),
             Output(CONFIRM_BOX, "is_open"),
             Input(LISTED, "data"), Input(CANCEL, "n_clicks"),
             State(MIN_SCORE, "value"), State(RUN, "data"),
             prevent_initial_call=True)(on_bulk_preview)
    callback(changes.output(PART), Input(KEEP, "n_clicks"), Input(DROP, "n_clicks"),
             Input(RELABEL, "n_clicks"), State(GRID, "selectedRows"),
             State(RELABEL_TO, "value"), State(RUN, "data"),
             prevent_initial_call=True)(on_review_edit)
    callback(changes.output(PART), Input(KEY, "data"), State(RUN, "data"),
             prevent_initial_call=True)(on_review_key)
    callback(output={"change": changes.output(PART),
                     "pending": Output(PENDING, "data", allow_duplicate=True),
                     "confirm_open": Output(CONFIRM_BOX, "is_open", allow_duplicate=True)},
             inputs={"_confirm": Input(CONFIRM, "n_clicks"),
                     "pending": State(PENDING, "data"), "run_id": State(RUN, "data")},
             prevent_initial_call=True)(on_bulk_confirm)


def _register_map_links() -> None:
    """The map and the list linked, and the focused row's detail."""
    # The map and the list, linked in the browser (assets/review.js): a lasso or box
    # filters the list, a clicked point scrolls to its row.
    clientside_callback(
        ClientsideFunction(namespace="review", function_name="filterBySelection"),
        Output(SELECTION, "children"), Input(ids.GRAPH, "selectedData"),
    )
    clientside_callback(
        ClientsideFunction(namespace="review", function_name="goToPoint"),
        Output(SELECTION, "children", allow_duplicate=True), Input(ids.GRAPH, "clickData"),
        prevent_initial_call=True,
    )
    callback(Output(DETAIL, "children"), Output(RELATED, "children"),
             Input(FOCUS, "data"), Input(SHOWN_REV, "data"), State(RUN, "data"),
             prevent_initial_call=True)(on_focus)


def on_queue(shown_rev, tab, similar, shown, run_id, grid_rev, filters):
    """The rows and the confusion table, while the list's tab is open, for the revision
    the page shows: the review queue's, or the "similar to" listing's (``similar``:
    app/curate/similar_panel.py) at that revision (:func:`grid_content`)."""
    held = grid_rev if isinstance(grid_rev, dict) else {}
    listing = similar["id"] if similar else None
    if tab != "review" or shown_rev is None or (
            held.get("rev") == shown_rev and held.get("similar") == listing):
        raise PreventUpdate
    data = run_data(settings().runs_root, run_id)
    return grid_content(data, current_state(data), run_id, similar, held, shown, filters)


def on_back(_back, run_id, grid):
    """Back to the list: the review queue again, in place of a "similar to" listing."""
    return listing_out(similar_panel.answer(similar_panel.BACK, None, None, None, run_id),
                       run_id, grid)


def on_upload(upload, k, run_id, grid):
    """An image file dropped on the page: its nearest samples listed, as the s key's
    answer lists a sample's (app/script_routes.py ``similar_json``)."""
    if not upload:
        raise PreventUpdate
    return listing_out(similar_panel.answer(similar_panel.FILE, None, upload, k, run_id),
                       run_id, {**grid, "filters": {}})


def listing_out(panel: dict, run_id: str, grid: dict) -> dict:
    """The list's new values (:data:`LISTING_PROPS`' keys) for the panel's answer
    (``similar_panel.answer``), given ``grid``: ``held`` (REV's value), ``shown`` and
    ``filters`` (the review queue's, for Back). A refused ask only says why."""
    if panel["refused"]:
        return {key: no_update for key in GRID_OUT} | {"line": panel["line"],
                                                       "similar": no_update,
                                                       "back_hidden": no_update}
    data = run_data(settings().runs_root, run_id)
    held = grid["held"] if isinstance(grid["held"], dict) else {}
    rows = grid_content(data, current_state(data), run_id, panel["similar"], held,
                        grid["shown"], grid["filters"])
    shown_back = not panel["back_hidden"]
    return rows | {"similar": panel["similar"], "line": panel["line"],
                   # Unchanged from one listing to the next: no renderer pass for it.
                   "back_hidden": no_update if shown_back and held.get("similar")
                   else panel["back_hidden"]}


def grid_content(data, state, run_id: str, similar: dict | None, held: dict, shown,  # noqa: ANN001
                 filters: dict) -> dict:
    """The grid's rows at ``state`` (:data:`GRID_OUT`'s keys), given what it holds now
    (``held``: REV's value). The queue's first rows come filtered to the class the map
    shows (a filter set before the grid has rows did not always hold); later ones come as
    the rows added, changed and removed. A listing's rows come whole (k of them) and
    unfiltered: its neighbours are of every class."""
    listing = similar["id"] if similar else None
    if similar:
        rows = review.sample_rows(data, state, run_id, similar["samples"],
                                  similar["distances"])
    else:
        rows = review.cached_rows(data, state, run_id)
    out = {"rev": {"rev": state.revision, "similar": listing}, "rows": no_update,
           "changes": no_update, "first_filter": no_update}
    if similar:
        # A listing of k rows needs no filter buttons; they are drawn once, empty, when
        # it starts (each redraw of the buttons is a renderer pass and a request).
        was_listing = held.get("similar") is not None
        return {**out, "rows": rows, "first_filter": no_update if was_listing else {},
                "pairs": no_update if was_listing else [],
                "pair_data": no_update if was_listing else [],
                "findings": no_update if was_listing else []}
    pairs = review.confusion(rows)
    out |= {"pairs": pair_buttons(pairs), "pair_data": pairs,
            "findings": [*finding_buttons(review.finding_counts(rows)),
                         *state_buttons(review.state_counts(rows))]}
    fresh = held.get("rev") is None or held.get("similar") is not None
    before = None if fresh else review.rows_at(data, run_id, held["rev"])
    if before is None:
        code = code_of(shown)
        # REV names the class these rows were filtered for: one picked while they were on
        # their way is followed again when they land (assets/review.js heldListing).
        return {**out, "rev": {**out["rev"], "filtered": "all" if code is None else str(code)},
                "rows": rows, "first_filter": {} if code is None else filters[str(code)]}
    return {**out, "changes": review.row_changes(before, rows)}


def on_grid_filter(_pairs, _clear, _filters, pairs):
    """Filter the list to a confusion table's pair, to one finding kind, to one state, or
    back to every row."""
    trigger = ctx.triggered_id
    if isinstance(trigger, dict):  # a pair's or a kind's button (pattern-matching id)
        if not ctx.triggered[0]["value"]:
            raise PreventUpdate  # the buttons were just drawn
        if trigger["type"] == FILTER_BTN:
            return column_filter(trigger["column"], trigger["value"])
        pair = (pairs or [])[trigger["index"]]
        return class_filter(pair["given"], pair["suggested"])
    return {}


def on_bulk_preview(request, _cancel, min_score, run_id):
    """A bulk button asks first: how many samples the action would change, with Confirm.
    ``request`` is ``{"action", "samples"}``: the button and the rows listed when it was
    clicked (assets/review.js ``listed``)."""
    if ctx.triggered_id == CANCEL or not request:
        return None, "", False
    action, listed = request["action"], request["samples"]
    data = run_data(settings().runs_root, run_id)
    try:
        plan = review.bulk_plan(data, current_state(data), listed, action, min_score)
    except InputError as exc:
        return None, str(exc), True
    what = BULK[action]
    if not plan.changes:
        return None, f"{what}: nothing to change among the {len(listed)} listed.", True
    return ({"action": action, "samples": listed, "min_score": min_score},
            f"{what} changes {plan.changes} of the {len(listed)} listed samples "
            "(one step, undoable).", True)


def on_review_edit(_keep, _drop, _relabel, selected, label, run_id):
    """Keep, drop or relabel the selected rows, one step."""
    trigger = ctx.triggered_id
    if not ctx.triggered[0]["value"]:
        raise PreventUpdate
    samples = [int(r["sample"]) for r in selected or []]

    def action(root: Path) -> int:
        if trigger == RELABEL:
            if not label:
                raise InputError("pick the class to relabel to first (press l)")
            return review.relabel_to(root, run_id, samples, label)
        if not samples:
            raise InputError("select rows first (click, Shift/Ctrl-click), then Keep or Drop")
        return page_actions.bulk(root, run_id, samples, "keep" if trigger == KEEP else "drop")

    return changes.apply(run_id, action)


def on_review_key(key, run_id):
    """A key on the focused row (assets/review.js): its action's store operation
    (app/curate/key_actions.py)."""
    if not key:
        raise PreventUpdate
    return changes.apply(run_id, lambda root: run_action(root, run_id, key))


def on_bulk_confirm(_confirm, pending, run_id):
    """Store the confirmed bulk action on the listed rows: one undoable step."""
    if not ctx.triggered[0]["value"]:
        raise PreventUpdate

    def action(root: Path) -> int:
        if not pending:
            raise InputError("nothing to confirm: choose a bulk action first")
        return review.bulk_apply(root, run_id, pending["samples"], pending["action"],
                                 pending.get("min_score"))

    return {"change": changes.apply(run_id, action), "pending": None, "confirm_open": False}


def on_focus(sample, _revision, run_id):
    """Why the focused row is flagged or decided, in the reviewer's words, and its
    near-duplicates or the test image it leaks to, side by side (again after an edit:
    which copy is kept may have changed)."""
    if sample is None:
        raise PreventUpdate
    data = run_data(settings().runs_root, run_id)
    s, i = data.samples, int(sample)
    if not 0 <= i < len(s):
        raise PreventUpdate
    state = current_state(data)
    why = page_actions.why(data, state, i)
    return ([html.B(f"#{i} · {s.classes[s.labels[i]]}"), html.Span(f" · {why}")],
            side_by_side(review.related_images(data, state, i, run_id)))
