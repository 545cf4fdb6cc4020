"""Curate one run: per-class t-SNE/DBSCAN view, hover previews, overrides, export, retrain."""

from __future__ import annotations

from pathlib import Path

import dash
import dash_bootstrap_components as dbc
from dash import (
    ALL,
    ClientsideFunction,
    Input,
    Output,
    Patch,
    State,
    callback,
    clientside_callback,
    ctx,
    dcc,
    html,
    no_update,
)
from dash.exceptions import PreventUpdate

from app import class_panel as cp
from app import curate_logic as logic
from app import ids, review
from app import review_panel as rp
from app.actions import run_action
from app.curate import RUN, hover_card
from app.data import cached_figure, current_state, run_data
from app.figures import LEGEND, class_figure, class_trace, overview_figure
from app.layout import (
    GRAPH_CONFIG,
    LOCAL_ONLY,
    error_alert,
    feature_advice,
    feature_badges,
    small_button,
)
from app.panels import export_panel, retrain_panel
from app.server import settings
from worker.pipeline.errors import InputError

dash.register_page(__name__, path_template="/curate/<run_id>", title="Curate · tsne-curator")

SHOWN = "curate-shown"  # the class the page shows: a code or "all"
SHOWN_REV = "curate-shown-rev"  # the store revision the page shows
ALERT = "curate-alert"
CLASS_PICK = ids.CLASS_PICK
GRAPH = ids.GRAPH
EPS_SLIDER = ids.EPS_SLIDER
EPS_INPUT = ids.EPS_INPUT
MS_SLIDER = ids.MS_SLIDER
MS_INPUT = ids.MS_INPUT
AUTO_BTN = "curate-auto"
APPLY_ALL_BTN = "curate-apply-all"
UNDO_BTN = ids.UNDO
REDO_BTN = ids.REDO
KEEP_BTN = "curate-keep"
DROP_BTN = "curate-drop"
CLEAR_BTN = "curate-clear"
BG_SWITCH = "curate-background"
STATUS = ids.STATUS
SUMMARY = "curate-summary"
CLASS_NAMES = "curate-class-names"  # class names, once per page
CLASS_DRAWN = "curate-class-drawn"  # the class list's marking callback has no real output
TABS = "curate-tabs"
MODEL = ids.MODEL
PARAMS = "curate-params"  # an eps / min_samples change, written by assets/recluster.js
REVISION = "curate-revision"  # the store revision the page shows (the review list follows)
RULE_INFO = "curate-rule-info"  # what the rule makes of the shown class, in words
CUT_ROW = "curate-cut"  # the per-class cut's buttons (hidden where the rule has no ranking)
CUT_MORE = "curate-cut-more"
CUT_FEWER = "curate-cut-fewer"
CUT_RESET = "curate-cut-reset"


def _controls() -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        html.H6("DBSCAN for this class", className="card-title"),
        dbc.Label("eps", html_for=EPS_INPUT, class_name="small mb-0"),
        dbc.Row([
            dbc.Col(dcc.Slider(id=EPS_SLIDER, min=0, max=5, step=0.025, value=1,
                               updatemode="mouseup",
                               marks=None, tooltip={"placement": "bottom"}), width=8),
            dbc.Col(dbc.Input(id=EPS_INPUT, type="number", min=0, step="any", size="sm",
                              debounce=True), width=4),
        ], class_name="g-1 align-items-center"),
        dbc.Label("min_samples", html_for=MS_INPUT, class_name="small mb-0 mt-2"),
        dbc.Row([
            dbc.Col(dcc.Slider(id=MS_SLIDER, min=1, max=50, step=1, value=5,
                               updatemode="mouseup", marks=None,
                               tooltip={"placement": "bottom"}), width=8),
            dbc.Col(dbc.Input(id=MS_INPUT, type="number", min=1, step=1, size="sm",
                              debounce=True), width=4),
        ], class_name="g-1 align-items-center"),
        dbc.ButtonGroup([
            dbc.Button("Auto eps", id=AUTO_BTN, color="secondary", outline=True, size="sm"),
            dbc.Button("Apply to all classes", id=APPLY_ALL_BTN, color="secondary",
                       outline=True, size="sm"),
        ], class_name="mt-3 w-100"),
        html.H6("The rule in this class", className="card-title mt-3"),
        html.Div(id=RULE_INFO, className="small rule-info"),
        # The ranked rule's own control: where the class's cut lies along its score ranking.
        html.Div(dbc.ButtonGroup([
            small_button("Flag fewer", CUT_FEWER,
                         title="Move the cut up the score ranking by 1% of the class: fewer "
                               "samples are flagged whatever DBSCAN says. Undoable."),
            small_button("Flag more", CUT_MORE,
                         title="Move the cut down the score ranking by 1% of the class: more "
                               "samples are flagged whatever DBSCAN says. Undoable."),
            small_button("Rule's cut", CUT_RESET,
                         title="Put the cut back where the rule put it. Undoable."),
        ], class_name="w-100"), id=CUT_ROW, className="mt-1"),
    ]), class_name="mb-3")


def _toolbar() -> dbc.Row:
    return dbc.Row([
        dbc.Col(dbc.ButtonGroup([
            small_button("Keep", KEEP_BTN, "success"),
            small_button("Drop", DROP_BTN, "danger"),
            small_button("Clear override", CLEAR_BTN),
        ]), width="auto"),
        dbc.Col(dbc.ButtonGroup([
            small_button("↶ Undo", UNDO_BTN, title="Ctrl+Z"),
            small_button("↷ Redo", REDO_BTN, title="Ctrl+Shift+Z"),
        ]), width="auto"),
        dbc.Col(dbc.Switch(id=BG_SWITCH, label="other classes", value=True,
                           class_name="mb-0 small"), width="auto"),
    ], class_name="g-2 align-items-center mb-2")


def _legend() -> html.Div:
    """What the map's marks mean, in the same symbols and colours."""
    def marks(symbols: str, colours) -> list[html.Span]:  # noqa: ANN001 - str or list
        colours = [colours] * len(symbols) if isinstance(colours, str) else colours
        return [html.Span(s, style={"color": c}) for s, c in zip(symbols, colours, strict=True)]

    return html.Div([html.Span([*marks(sym, col), html.Span(text, className="ms-1")],
                               className="me-3 text-nowrap legend-item")
                     for sym, col, text in LEGEND],
                    className="d-flex flex-wrap curate-legend text-muted mt-1")


def layout(run_id: str | None = None, **_query) -> html.Div:
    try:
        data = run_data(settings().runs_root, run_id or "")
        current_state(data)
    except InputError as exc:
        return html.Div([html.H4("Curate"), error_alert(str(exc)),
                         dcc.Link("← back to runs", href="/")])
    return html.Div([
        dcc.Store(id=RUN, data=run_id), dcc.Store(id=SHOWN), dcc.Store(id=SHOWN_REV),
        dcc.Store(id=MODEL), dcc.Store(id=PARAMS), dcc.Store(id=REVISION),
        # The shown class: a code, or "all". A store, written by the class list's rows.
        dcc.Store(id=CLASS_PICK, data=0), dcc.Store(id=CLASS_DRAWN),
        dcc.Store(id=CLASS_NAMES, data=list(data.samples.classes)),
        html.Div([html.H4(f"Curate · {run_id}", className="mb-0 me-3"),
                  html.Span(feature_badges(data.run.read_meta()), id="feature-badges",
                            className="me-3"),
                  html.Span(id=STATUS, className="text-muted small me-3"),
                  dcc.Link("results →", href=f"/results/{run_id}", className="small ms-auto")],
                 className="d-flex align-items-baseline mb-2"),
        feature_advice(data.run.read_meta()),
        html.Div(id=ALERT),
        # One screen from 1200 px wide (1366×768 included): parameters and classes, the
        # map, and the review list side by side, each scrolling on its own; Summary,
        # Export and Retrain are tabs over the list. Narrower, they stack.
        dbc.Row([
            dbc.Col([_controls(), _classes()], xl=3, class_name="curate-side"),
            dbc.Col([
                _toolbar(),
                dcc.Graph(id=GRAPH, style={"height": "clamp(340px, calc(100vh - 240px), 900px)"},
                          clear_on_unhover=True,
                          config={**GRAPH_CONFIG, "scrollZoom": True,
                                  "modeBarButtonsToRemove": [*LOCAL_ONLY, "toImage"]}),
                _legend(),
                hover_card.layout(run_id),
            ], xl=4, class_name="curate-map"),
            dbc.Col(dbc.Tabs([
                dbc.Tab(rp.review_panel(list(data.samples.classes)), label="Review list",
                        tab_id="review"),
                dbc.Tab(html.Div(id=SUMMARY, className="mt-2 curate-summary"), label="Summary",
                        tab_id="summary"),
                dbc.Tab(export_panel(), label="Export", tab_id="export"),
                dbc.Tab(retrain_panel(), label="Retrain", tab_id="retrain"),
            ], id=TABS, active_tab="review"), xl=5, class_name="curate-review"),
        ], class_name="g-3"),
    ])


def _classes() -> dbc.Card:
    """The class list (app/class_panel.py): click a row to show its class."""
    return dbc.Card(dbc.CardBody([html.H6("Classes", className="card-title"),
                                  cp.class_panel()]), class_name="mb-3")


# --------------------------------------------------------------------------- callbacks
# One view model. The page's state is two values: the shown class (CLASS_PICK, written by
# the class list) and the store revision (REVISION). A callback that changes something
# writes the store, then only the new revision and its alert (CHANGE_OUT). One render
# path, on_render, derives the map, counts, class list and controls from the store's
# snapshot whenever either value changes, and says what the page now shows (SHOWN, the
# class; SHOWN_REV, the revision). The review list, the rule panel and the summary follow
# those, so their requests start once the map's answer is in instead of competing with
# it, and only when what they show changed.
# Outputs whose value the page already shows go back as no_update: each updated
# component costs the Dash renderer a store update that re-runs every component's
# selector, which on this page took more time than Plotly's repaint.
CHANGE_OUT = {"alert": Output(ALERT, "children", allow_duplicate=True),
              "revision": Output(REVISION, "data", allow_duplicate=True)}
CONTROLS = {"eps": (EPS_SLIDER, "value"), "eps_box": (EPS_INPUT, "value"),
            "eps_max": (EPS_SLIDER, "max"), "ms": (MS_SLIDER, "value"),
            "ms_box": (MS_INPUT, "value")}


def _code(value) -> int | None:
    return None if value in (None, "all") else int(value)


def _changed(new, old):
    return no_update if new == old else new


def _change(run_id: str, action, painted: int | None = None) -> dict:
    """Run ``action(root)`` (a store change); answer with the alert (the InputError's
    line, or none) and the store revision, which every view follows.

    ``painted``: the class the browser already repainted for this change (an eps change
    it re-clustered itself), so the render path leaves its plot as it is.
    """
    root = settings().runs_root
    try:
        action(root)
        alert = None
    except InputError as exc:
        alert, painted = error_alert(str(exc)), None
    # Written even when nothing changed: a refused value puts the controls back.
    return {"alert": alert, "revision": {"rev": logic.store_for(root, run_id).revision(),
                                         "painted": painted}}


# eps / min_samples changes: assets/recluster.js re-clusters the shown class in the browser
# and repaints it at once (live while a slider is dragged), then, for a typed value or a
# released slider, writes the change into PARAMS for on_params to store.
clientside_callback(
    ClientsideFunction(namespace="curate", function_name="preview"),
    Output(STATUS, "children", allow_duplicate=True),
    Input(EPS_SLIDER, "drag_value"), Input(MS_SLIDER, "drag_value"), State(MODEL, "data"),
    State(EPS_SLIDER, "value"), State(MS_SLIDER, "value"), prevent_initial_call=True,
)
clientside_callback(
    ClientsideFunction(namespace="curate", function_name="slid"),
    Output(PARAMS, "data", allow_duplicate=True), Output(STATUS, "children", allow_duplicate=True),
    Input(EPS_SLIDER, "value"), Input(MS_SLIDER, "value"), State(MODEL, "data"),
    State(EPS_SLIDER, "step"), prevent_initial_call=True,
)
clientside_callback(
    ClientsideFunction(namespace="curate", function_name="typed"),
    Output(PARAMS, "data", allow_duplicate=True), Output(STATUS, "children", allow_duplicate=True),
    Input(EPS_INPUT, "value"), Input(MS_INPUT, "value"), State(MODEL, "data"),
    prevent_initial_call=True,
)
# The model, kept in the page for the boxes' Enter key, which repaints before Dash hears
# of the new value (assets/recluster.js onEnter).
clientside_callback(
    ClientsideFunction(namespace="curate", function_name="remember"), Input(MODEL, "data"),
)

# The class list (assets/classlist.js): a clicked row picks its class; the shown class's
# row is marked and scrolled into view; "N of M classes" while its name filter is set.
clientside_callback(
    ClientsideFunction(namespace="classlist", function_name="pick"),
    Output(CLASS_PICK, "data"), Input(cp.GRID, "cellClicked"), prevent_initial_call=True,
)
clientside_callback(
    ClientsideFunction(namespace="classlist", function_name="show"),
    Output(CLASS_DRAWN, "data"), Input(CLASS_PICK, "data"), Input(cp.GRID, "rowData"),
)
clientside_callback(
    ClientsideFunction(namespace="classlist", function_name="matched"),
    Output(cp.MATCHED, "children"), Input(cp.GRID, "virtualRowData"), State(cp.GRID, "rowData"),
)


@callback(
    output={"figure": Output(GRAPH, "figure"), "shown": Output(SHOWN, "data"),
            "shown_rev": Output(SHOWN_REV, "data"),
            "rows": Output(cp.GRID, "rowData"), "pinned": Output(cp.GRID, "dashGridOptions"),
            "status": Output(STATUS, "children"), "model": Output(MODEL, "data"),
            "undo_disabled": Output(UNDO_BTN, "disabled"),
            "redo_disabled": Output(REDO_BTN, "disabled"),
            "controls": {**{k: Output(c, p) for k, (c, p) in CONTROLS.items()},
                         "eps_step": Output(EPS_SLIDER, "step")}},
    inputs={"class_value": Input(CLASS_PICK, "data"), "revision": Input(REVISION, "data"),
            "run_id": State(RUN, "data"), "shown": State(SHOWN, "data"),
            "shown_rev": State(SHOWN_REV, "data"), "background": State(BG_SWITCH, "value"),
            "undo_disabled": State(UNDO_BTN, "disabled"),
            "redo_disabled": State(REDO_BTN, "disabled"),
            "controls": {k: State(c, p) for k, (c, p) in CONTROLS.items()}},
)
def on_render(class_value, revision, run_id, shown, shown_rev, background, undo_disabled,
              redo_disabled, controls):
    """The one render path: the shown class and the store's snapshot → what the page
    shows. A class switch alone leaves the run-wide counts and the class list as they
    are; a new revision whose change the browser already painted leaves the plot."""
    root = settings().runs_root
    data = run_data(root, run_id)
    state = current_state(data)
    code = _code(class_value)
    fired = set(ctx.triggered_prop_ids.values())
    switched = shown != ("all" if code is None else code)
    # The counts and history follow the store: a new revision (the first paint, or one
    # stored elsewhere before a class switch), or an answer that may have refused what the
    # browser previewed.
    stored = REVISION in fired or state.revision != shown_rev
    painted = (not switched and fired == {REVISION} and code is not None
               and (revision or {}).get("painted") == code)
    out = {"figure": no_update if painted else _figure(run_id, data, state, code, shown,
                                                       background),
           "shown": _changed("all" if code is None else code, shown),
           "shown_rev": _changed(state.revision, shown_rev),
           "controls": _controls_for(data, state, code, switched, controls)}
    noise = logic.noise_per_class(data, state)
    out["model"] = None if code is None else logic.client_model(data, state, code, noise)
    if not stored:  # a class switch alone: the counts and the history are as they were
        return {**out, **dict.fromkeys(("rows", "pinned", "status", "undo_disabled",
                                        "redo_disabled"), no_update)}
    rows = logic.class_counts(data, state)
    grid_rows, total = cp.grid_rows(rows)
    pinned = Patch()
    pinned["pinnedTopRowData"] = [total]
    store = logic.store_for(root, run_id)
    return {**out, "rows": grid_rows, "pinned": pinned,
            "status": logic.status_text(rows, noise, state.rule),
            "undo_disabled": _changed(not store.can_undo(), undo_disabled),
            "redo_disabled": _changed(not store.can_redo(), redo_disabled)}


def _figure(run_id: str, data, state, code: int | None, shown, background: bool):
    """The map for class ``code`` (None: every class), as a new figure or as a Patch of
    what the page shows (``shown``): the class trace on a switch, colours and symbols on
    an edit."""
    d = state.decisions

    def trace() -> dict:
        return cached_figure(data, state, ("class", code), lambda: class_trace(
            data.embedding, data.members[code], d, state.marks))

    if code is None:
        return cached_figure(data, state, ("overview",), lambda: overview_figure(
            data.embedding, data.samples.labels, data.samples.classes, d,
            f"/background/{run_id}.png"))
    if shown in (None, "all"):
        return class_figure(data.embedding, trace(), f"/background/{run_id}.png",
                            bool(background), data.bounds)
    fig = Patch()
    if shown != code:
        fig["data"][1] = trace()
    else:
        marker = trace()["marker"]
        for key in ("color", "symbol", "size"):
            fig["data"][1]["marker"][key] = marker[key]
    return fig


def _controls_for(data, state, code: int | None, switched: bool, shows: dict) -> dict:
    """The parameter controls for class ``code`` at its stored values: only those that
    show something else (``shows``) change, and the slider's range only on a class
    switch or when the stored eps lies past it (not under the user's hand)."""
    keys = (*CONTROLS, "eps_step")
    if code is None:
        return dict.fromkeys(keys, no_update)
    v = logic.control_values(data, state, code)
    update = logic.control_updates(v, shows, rescale=switched)
    return {k: update.get(k, no_update) for k in keys}


@callback(
    output=CHANGE_OUT,
    inputs={"request": Input(PARAMS, "data"), "class_value": State(CLASS_PICK, "data"),
            "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_params(request, class_value, run_id):
    """Store an eps / min_samples change that assets/recluster.js sent.

    ``request``: the new eps and min_samples, whether they were typed (else slid), the
    class, and whether the browser already repainted it from the store revision ``base``.
    If so, and nothing else was stored since, the render path leaves the plot as it is.
    """
    code = _code(class_value)
    if not request or code is None:
        raise PreventUpdate
    target = request.get("class", code)  # the class the browser tuned, even if another
    root = settings().runs_root           # was picked since
    painted = (bool(request.get("painted")) and target == code
               and logic.store_for(root, run_id).revision() == request.get("base"))
    return _change(run_id, lambda root: logic.set_params(
        root, run_id, target, request.get("eps"), request.get("ms"),
        tolerance=1e-4 if request.get("typed") else 0.0), painted=code if painted else None)


@callback(
    output=CHANGE_OUT,
    inputs={"_clicks": Input(AUTO_BTN, "n_clicks"), "class_value": State(CLASS_PICK, "data"),
            "ms": State(MS_INPUT, "value"), "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_auto_eps(_clicks, class_value, ms, run_id):
    """Set the class's eps from its k-distance knee at the shown min_samples."""
    code = _code(class_value)
    if code is None:
        raise PreventUpdate
    return _change(run_id, lambda root: logic.auto_eps_for(root, run_id, code, ms))


@callback(
    output=CHANGE_OUT,
    inputs={"_clicks": Input(APPLY_ALL_BTN, "n_clicks"),
            "class_value": State(CLASS_PICK, "data"), "eps": State(EPS_INPUT, "value"),
            "ms": State(MS_INPUT, "value"), "run_id": State(RUN, "data")},
    # Re-clustering 1,000 classes takes seconds: say so on the button meanwhile.
    running=[(Output(APPLY_ALL_BTN, "disabled"), True, False),
             (Output(APPLY_ALL_BTN, "children"), "Re-clustering every class…",
              "Apply to all classes")],
    prevent_initial_call=True,
)
def on_apply_all(_clicks, class_value, eps, ms, run_id):
    """Store the shown eps and min_samples for every class."""
    return _change(run_id, lambda root: logic.set_params(
        root, run_id, _code(class_value), eps, ms, all_classes=True))


@callback(
    output=CHANGE_OUT,
    inputs={"_undo": Input(UNDO_BTN, "n_clicks"), "_redo": Input(REDO_BTN, "n_clicks"),
            "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_undo_redo(_undo, _redo, run_id):
    """Undo or redo the last stored change, whatever it was (parameters or overrides)."""
    redo = ctx.triggered_id == REDO_BTN

    def step(root: Path) -> None:
        if logic.undo_redo(root, run_id, redo=redo)[1] is None:
            raise InputError(f"nothing to {'redo' if redo else 'undo'}")

    return _change(run_id, step)


@callback(
    output=CHANGE_OUT,
    inputs={"_keep": Input(KEEP_BTN, "n_clicks"), "_drop": Input(DROP_BTN, "n_clicks"),
            "_clear": Input(CLEAR_BTN, "n_clicks"), "selection": State(GRAPH, "selectedData"),
            "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_override(_keep, _drop, _clear, selection, run_id):
    """The toolbar's buttons: keep, drop or clear the points selected on the map (lasso or
    box), in one step."""
    if not ctx.triggered or not ctx.triggered[0]["value"]:
        raise PreventUpdate
    samples = logic.selected_samples(selection)
    decision = {KEEP_BTN: "keep", DROP_BTN: "drop", CLEAR_BTN: None}[ctx.triggered_id]
    return _change(run_id, lambda root: logic.bulk(root, run_id, samples, decision))


@callback(
    output=CHANGE_OUT,
    inputs={"_more": Input(CUT_MORE, "n_clicks"), "_fewer": Input(CUT_FEWER, "n_clicks"),
            "_reset": Input(CUT_RESET, "n_clicks"), "class_value": State(CLASS_PICK, "data"),
            "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_cut(_more, _fewer, _reset, class_value, run_id):
    """Flag more or fewer in the shown class (its cut along the score ranking), or put the
    cut back where the rule put it: one undoable step."""
    direction = {CUT_MORE: 1, CUT_FEWER: -1, CUT_RESET: 0}[ctx.triggered_id]
    return _change(run_id, lambda root: logic.move_cut(
        root, run_id, _code(class_value), direction))


@callback(
    Output(GRAPH, "figure", allow_duplicate=True),
    Input(BG_SWITCH, "value"), State(SHOWN, "data"), prevent_initial_call=True,
)
def on_background(show, shown):
    """The other classes' background on or off: only its visibility changes (a layout
    change costs a full relayout, so only when asked)."""
    if shown in (None, "all"):
        raise PreventUpdate
    fig = Patch()
    fig["layout"]["images"][0]["visible"] = bool(show)
    return fig


@callback(
    Output(SUMMARY, "children"),
    Input(SHOWN_REV, "data"), Input(TABS, "active_tab"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_summary(_revision, tab, run_id):
    """The Summary tab's table, while it is open."""
    if tab != "summary":
        raise PreventUpdate
    data = run_data(settings().runs_root, run_id)
    return _summary_table(logic.class_counts(data, current_state(data)))


@callback(
    Output(RULE_INFO, "children"), Output(CUT_ROW, "hidden"),
    Input(SHOWN, "data"), Input(SHOWN_REV, "data"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_rule_facts(shown, _revision, run_id):
    """What the rule makes of the shown class, in words, whenever the class or the store
    changes: after the map's answer, so a class switch repaints without waiting for it."""
    code = _code(shown)
    if code is None:
        return html.P("Pick a class to see what the rule makes of it.", className="mb-1"), True
    data = run_data(settings().runs_root, run_id)
    facts = logic.rule_facts(data, current_state(data), code)
    return [html.P(line, className="mb-1") for line in facts.sentences()], not facts.can_cut


def _summary_table(rows: list[dict]) -> dbc.Table:
    keys = (*logic.COUNT_KEYS, *logic.FINDING_KEYS)
    head = html.Thead(html.Tr([html.Th(h) for h in ("class", *keys, "reduction")]))
    body = html.Tbody([html.Tr([html.Td(r["class"]), *[html.Td(r.get(k, 0)) for k in keys],
                                html.Td(f"{r['reduction_pct']:.2f}%")],
                               className="fw-semibold" if r["class"] == "total" else None)
                       for r in rows])
    return dbc.Table([head, body], size="sm", striped=True, hover=True, class_name="w-auto")


hover_card.register()


# --------------------------------------------------------------------------- review list
# The grid (app/review_panel.py) holds every flagged or decided sample; it sorts and
# filters in the browser. Its rows follow the revision the page shows (SHOWN_REV), once
# the map's answer is in: what changed since the revision the grid shows, as a row
# transaction.
@callback(
    output={"rows": Output(rp.GRID, "rowData"), "changes": Output(rp.GRID, "rowTransaction"),
            "pairs": Output(rp.PAIRS, "children"), "pair_data": Output(rp.PAIR_DATA, "data"),
            "findings": Output(rp.FINDINGS, "children"),
            "rev": Output(rp.REV, "data"),
            "first_filter": Output(rp.GRID, "filterModel", allow_duplicate=True)},
    inputs={"shown_rev": Input(SHOWN_REV, "data"), "tab": Input(TABS, "active_tab"),
            "shown": State(SHOWN, "data"), "run_id": State(RUN, "data"),
            "grid_rev": State(rp.REV, "data"), "names": State(CLASS_NAMES, "data")},
    prevent_initial_call=True,
)
def on_queue(shown_rev, tab, shown, run_id, grid_rev, names):
    """The review list's rows and its confusion table, while its tab is open. The first
    rows come filtered to the class the map shows (a filter set before the grid has rows
    did not always hold); later ones come as the rows added, changed and removed."""
    if tab != "review" or shown_rev is None or shown_rev == grid_rev:
        raise PreventUpdate
    data = run_data(settings().runs_root, run_id)
    state = current_state(data)
    rows = review.cached_rows(data, state, run_id)
    before = None if grid_rev is None else review.rows_at(data, run_id, grid_rev)
    pairs = review.confusion(rows)
    out = {"pairs": rp.pair_buttons(pairs), "pair_data": pairs, "rev": state.revision,
           "findings": rp.finding_buttons(review.finding_counts(rows)),
           "rows": no_update, "changes": no_update, "first_filter": no_update}
    if before is None:
        code = _code(shown)
        return {**out, "rows": rows,
                "first_filter": {} if code is None else rp.class_filter(names[code])}
    return {**out, "changes": review.row_changes(before, rows)}


# A pair's button or Clear filters filter the list at once; a class switch filters it to
# the shown class after the map has painted (assets/review.js followClass).
@callback(
    Output(rp.GRID, "filterModel"),
    Input({"type": rp.PAIR_BTN, "index": ALL}, "n_clicks"), Input(rp.CLEAR_FILTERS, "n_clicks"),
    Input({"type": rp.FINDING_BTN, "kind": ALL}, "n_clicks"),
    State(rp.PAIR_DATA, "data"), prevent_initial_call=True,
)
def on_grid_filter(_pairs, _clear, _kinds, pairs):
    """Filter the review list to a confusion table's pair, to one finding kind, or back to
    every row."""
    trigger = ctx.triggered_id
    if isinstance(trigger, dict):  # a pair's or a kind's button (pattern-matching id)
        if not ctx.triggered[0]["value"]:
            raise PreventUpdate  # the buttons were just drawn
        if trigger["type"] == rp.FINDING_BTN:
            return rp.finding_filter(trigger["kind"])
        pair = (pairs or [])[trigger["index"]]
        return rp.class_filter(pair["given"], pair["suggested"])
    return {}


clientside_callback(
    ClientsideFunction(namespace="review", function_name="followClass"),
    Output(rp.FOLLOWED, "data"), Input(SHOWN, "data"), State(rp.CLASS_FILTERS, "data"),
    prevent_initial_call=True,
)


# The listed rows' ids are read from the grid only when a bulk button asks (review.listed),
# and "N listed" is written by assets/review.js after the grid has painted: a callback on
# the grid's virtualRowData ran Dash's callback machinery on every sort of 17,000 rows.
clientside_callback(
    ClientsideFunction(namespace="review", function_name="listed"),
    Output(rp.LISTED, "data"), Input({"type": rp.BULK_BTN, "action": ALL}, "n_clicks"),
    prevent_initial_call=True,
)


@callback(
    Output(rp.PENDING, "data"), Output(rp.CONFIRM_TEXT, "children"),
    Output(rp.CONFIRM_BOX, "is_open"),
    Input(rp.LISTED, "data"), Input(rp.CANCEL, "n_clicks"),
    State(rp.MIN_SCORE, "value"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_bulk_preview(request, _cancel, min_score, run_id):
    """A bulk button asks first: how many samples the action would change, with Confirm.
    ``request`` is ``{"action", "samples"}``: the button and the rows listed when it was
    clicked (assets/review.js ``listed``)."""
    if ctx.triggered_id == rp.CANCEL or not request:
        return None, "", False
    action, listed = request["action"], request["samples"]
    data = run_data(settings().runs_root, run_id)
    try:
        plan = review.bulk_plan(data, current_state(data), listed, action, min_score)
    except InputError as exc:
        return None, str(exc), True
    what = review.BULK[action]
    if not plan.changes:
        return None, f"{what}: nothing to change among the {len(listed)} listed.", True
    return ({"action": action, "samples": listed, "min_score": min_score},
            f"{what} changes {plan.changes} of the {len(listed)} listed samples "
            "(one step, undoable).", True)


@callback(
    output=CHANGE_OUT,
    inputs={"_keep": Input(rp.KEEP, "n_clicks"), "_drop": Input(rp.DROP, "n_clicks"),
            "_relabel": Input(rp.RELABEL, "n_clicks"), "selected": State(rp.GRID, "selectedRows"),
            "label": State(rp.RELABEL_TO, "value"), "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_review_edit(_keep, _drop, _relabel, selected, label, run_id):
    """The review list's buttons: keep, drop or relabel the selected rows, one step."""
    trigger = ctx.triggered_id
    if not ctx.triggered[0]["value"]:
        raise PreventUpdate
    samples = [int(r["sample"]) for r in selected or []]

    def action(root: Path) -> int:
        if trigger == rp.RELABEL:
            if not label:
                raise InputError("pick the class to relabel to first (press l)")
            return review.relabel_to(root, run_id, samples, label)
        if not samples:
            raise InputError("select rows first (click, Shift/Ctrl-click), then Keep or Drop")
        return logic.bulk(root, run_id, samples, "keep" if trigger == rp.KEEP else "drop")

    return _change(run_id, action)


@callback(
    output=CHANGE_OUT,
    inputs={"key": Input(rp.KEY, "data"), "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_review_key(key, run_id):
    """A key on the focused row (assets/review.js): keep, drop, or relabel to the
    suggestion."""
    if not key:
        raise PreventUpdate
    return _change(run_id, lambda root: run_action(root, run_id, key))


@callback(
    output={**CHANGE_OUT, "pending": Output(rp.PENDING, "data", allow_duplicate=True),
            "confirm_open": Output(rp.CONFIRM_BOX, "is_open", allow_duplicate=True)},
    inputs={"_confirm": Input(rp.CONFIRM, "n_clicks"), "pending": State(rp.PENDING, "data"),
            "run_id": State(RUN, "data")},
    prevent_initial_call=True,
)
def on_bulk_confirm(_confirm, pending, run_id):
    """Store the confirmed bulk action on the listed rows: one undoable step."""
    if not ctx.triggered[0]["value"]:
        raise PreventUpdate

    def action(root: Path) -> int:
        if not pending:
            raise InputError("nothing to confirm: choose a bulk action first")
        return review.bulk_apply(root, run_id, pending["samples"], pending["action"],
                                 pending.get("min_score"))

    return {**_change(run_id, action), "pending": None, "confirm_open": False}


# The map and the list, linked in the browser (assets/review.js): a lasso or box filters
# the list, a clicked point scrolls to its row.
clientside_callback(
    ClientsideFunction(namespace="review", function_name="filterBySelection"),
    Output(rp.SELECTION, "children"), Input(GRAPH, "selectedData"),
)
clientside_callback(
    ClientsideFunction(namespace="review", function_name="goToPoint"),
    Output(rp.SELECTION, "children", allow_duplicate=True), Input(GRAPH, "clickData"),
    prevent_initial_call=True,
)


@callback(
    Output(rp.DETAIL, "children"), Output(rp.RELATED, "children"),
    Input(rp.FOCUS, "data"), Input(SHOWN_REV, "data"), State(RUN, "data"),
    prevent_initial_call=True,
)
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
    why = logic.why(data, state, i)
    return ([html.B(f"#{i} · {s.classes[s.labels[i]]}"), html.Span(f" · {why}")],
            rp.side_by_side(review.related_images(data, state, i, run_id)))
