"""Curate one run: per-class t-SNE/DBSCAN view, hover previews, overrides, export, retrain."""

from __future__ import annotations

from pathlib import Path

import dash
import dash_bootstrap_components as dbc
import numpy as np
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

from app import curate_logic as logic
from app import ids, review
from app import review_panel as rp
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

RUN = "curate-run"
SHOWN = "curate-shown"
ALERT = "curate-alert"
CLASS_PICK = ids.CLASS_PICK
GRAPH = ids.GRAPH
TOOLTIP = "curate-tooltip"
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
STATUS = "curate-status"
SUMMARY = "curate-summary"
CLASS_SEARCH = "curate-class-search"
CLASS_SORT = "curate-class-sort"
CLASS_MORE = "curate-class-more"  # "12 of 1,000 classes match"
CLASS_ROWS = "curate-class-rows"  # the class list's order and counts (assets/classlist.js)
CLASS_NAMES = "curate-class-names"  # class names, once per page
CLASS_LIST = ids.CLASS_LIST  # the virtually scrolled list itself
CLASS_DRAWN = "curate-class-drawn"  # the list's drawing callback has no real output
TABS = "curate-tabs"
MODEL = "curate-model"  # what assets/recluster.js needs to re-cluster the shown class
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
        dcc.Store(id=RUN, data=run_id), dcc.Store(id=SHOWN),
        dcc.Store(id=MODEL), dcc.Store(id=PARAMS), dcc.Store(id=REVISION),
        # The shown class: a code, or "all". A store, written by the class list's rows.
        dcc.Store(id=CLASS_PICK, data=0), dcc.Store(id=CLASS_ROWS), dcc.Store(id=CLASS_DRAWN),
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
                dcc.Tooltip(id=TOOLTIP, direction="right"),
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
    """The class list: search, sort, and the virtually scrolled rows with their counts."""
    return dbc.Card(dbc.CardBody([
        html.H6("Classes", className="card-title"),
        dbc.Row([
            dbc.Col(dbc.Input(id=CLASS_SEARCH, type="search", size="sm",
                              placeholder="search classes", debounce=0.3)),
            dbc.Col(dbc.Select(
                id=CLASS_SORT, value="code", size="sm",
                options=[{"label": f"sort: {text}", "value": key}
                         for key, text in logic.CLASS_SORTS.items()]), width=6),
        ], class_name="g-1 mb-1"),
        html.Div(" · ".join(logic.COUNT_KEYS), className="text-muted small mb-1"),
        html.Div(id=CLASS_MORE, className="text-muted small mb-1"),
        # Drawn by assets/classlist.js from CLASS_ROWS: only the rows in view.
        html.Div(id=CLASS_LIST, className="class-list"),
    ]), class_name="mb-3")


# --------------------------------------------------------------------------- callbacks
# One callback per intent. Every callback that changes something also repaints, in the
# same round trip, through the shared view outputs (the first owner is on_class, which
# also runs on load). Values pass by name: the view outputs are a dict returned by
# _render, and what the page shows now arrives as a dict of States, read into a PageView.
# Outputs whose value the page already shows go back as no_update: each updated component
# costs the Dash renderer a store update that re-runs every component's selector, which
# on this page took more time than Plotly's repaint.
VIEW_OUT = {"figure": (GRAPH, "figure"), "shown": (SHOWN, "data"),
            "rows": (CLASS_ROWS, "data"), "summary": (SUMMARY, "children"),
            "undo_disabled": (UNDO_BTN, "disabled"), "redo_disabled": (REDO_BTN, "disabled"),
            "status": (STATUS, "children"), "model": (MODEL, "data"),
            "more": (CLASS_MORE, "children"), "revision": (REVISION, "data")}
CONTROLS_OUT = {"eps": (EPS_SLIDER, "value"), "eps_box": (EPS_INPUT, "value"),
                "eps_max": (EPS_SLIDER, "max"), "eps_step": (EPS_SLIDER, "step"),
                "ms": (MS_SLIDER, "value"), "ms_box": (MS_INPUT, "value")}
# PageView's fields and where they are read from.
VIEW_IN = {"show_background": (BG_SWITCH, "value"), "shown": (SHOWN, "data"),
           "tab": (TABS, "active_tab"), "undo_disabled": (UNDO_BTN, "disabled"),
           "redo_disabled": (REDO_BTN, "disabled"),
           "selection": (GRAPH, "selectedData"), "class_search": (CLASS_SEARCH, "value"),
           "class_sort": (CLASS_SORT, "value"), "more": (CLASS_MORE, "children"),
           "revision": (REVISION, "data")}


def _outputs(spec: dict, duplicate: bool = True) -> dict[str, Output]:
    return {name: Output(c, p, allow_duplicate=duplicate) for name, (c, p) in spec.items()}


def _changing_outputs(controls: bool = True) -> dict:
    """The outputs of a callback that changes the store: the alert and the view, and the
    parameter controls (``controls``)."""
    out = {"alert": Output(ALERT, "children", allow_duplicate=True), "view": _outputs(VIEW_OUT)}
    return {"controls": _outputs(CONTROLS_OUT), **out} if controls else out


def _page_inputs(**triggers) -> dict:
    """A callback's inputs: its own ``triggers`` (and States), then the shown class, the
    run and what the page shows (VIEW_IN), all by name."""
    return {**triggers, "class_value": State(CLASS_PICK, "data"), "run_id": State(RUN, "data"),
            "view": _view_in()}


def _view_in(*triggers: str) -> dict:
    """VIEW_IN as States, except the fields named in ``triggers``, which are Inputs."""
    return {name: (Input if name in triggers else State)(c, p)
            for name, (c, p) in VIEW_IN.items()}


def _code(value) -> int | None:
    return None if value in (None, "all") else int(value)


def _changed(new, old):
    return no_update if new == old else new


# eps / min_samples changes: assets/recluster.js re-clusters the shown class in the browser
# and repaints it at once (live while a slider is dragged), then, for a typed value or a
# released slider, writes the change into PARAMS for on_params to store.
clientside_callback(
    ClientsideFunction(namespace="curate", function_name="recluster"),
    Output(PARAMS, "data"), Output(STATUS, "children", allow_duplicate=True),
    Output(CLASS_ROWS, "data", allow_duplicate=True),
    Input(EPS_SLIDER, "value"), Input(EPS_INPUT, "value"), Input(MS_SLIDER, "value"),
    Input(MS_INPUT, "value"), Input(EPS_SLIDER, "drag_value"), Input(MS_SLIDER, "drag_value"),
    State(MODEL, "data"), State(CLASS_ROWS, "data"),
    State(EPS_SLIDER, "step"),
    prevent_initial_call=True,
)

# The class list: assets/classlist.js draws the rows in view whenever the rows, or the
# shown class, change.
clientside_callback(
    ClientsideFunction(namespace="classlist", function_name="show"),
    Output(CLASS_DRAWN, "data"),
    Input(CLASS_ROWS, "data"), Input(CLASS_PICK, "data"), State(CLASS_NAMES, "data"),
)


def _respond(run_id: str, class_value, view: dict, action=None, *, controls: bool = True,
             figure: str = "draw") -> dict:
    """Run ``action()`` (a store change), then answer with the alert, the view and (if
    ``controls``) the class's parameter controls.

    An InputError from the action becomes the alert; the page is repainted either way.
    """
    root = settings().runs_root
    alert = None
    if action is not None:
        try:
            action(root)
        except InputError as exc:
            alert = error_alert(str(exc))
    data = run_data(root, run_id)
    state = current_state(data)
    out = {"alert": alert if action is not None else no_update,
           "view": _render(run_id, class_value, logic.PageView.read(view), state, figure)}
    if controls:
        code = _code(class_value)
        if code is None:
            out["controls"] = dict.fromkeys(CONTROLS_OUT, no_update)
        else:
            v = logic.control_values(data, state, code)
            out["controls"] = {"eps": v.eps, "eps_box": v.eps, "eps_max": v.eps_max,
                               "eps_step": v.eps_max / 200, "ms": v.min_samples,
                               "ms_box": v.min_samples}
    return out


@callback(
    output={"controls": _outputs(CONTROLS_OUT, False), "alert": Output(ALERT, "children"),
            "view": _outputs(VIEW_OUT, False)},
    inputs={"class_value": Input(CLASS_PICK, "data"), "run_id": State(RUN, "data"),
            "view": _view_in()},
)
def on_class(class_value, run_id, view):
    """A class picked (and the page's first paint): its plot, counts and parameters."""
    return _respond(run_id, class_value, view)


@callback(
    output=_changing_outputs(),
    inputs=_page_inputs(request=Input(PARAMS, "data"), eps_max=State(EPS_SLIDER, "max")),
    prevent_initial_call=True,
)
def on_params(request, class_value, run_id, eps_max, view):
    """Store an eps / min_samples change that assets/recluster.js sent.

    ``request``: the new eps and min_samples, whether they were typed (else slid), the
    class, and whether the browser already repainted it from the store revision ``base``.
    If so, and nothing else was stored since, the plot is left as it is.
    """
    code = _code(class_value)
    if not request or code is None:
        raise PreventUpdate
    typed = bool(request.get("typed"))
    target = request.get("class", code)  # the class the browser tuned, even if another
    root = settings().runs_root           # was picked since
    painted = (bool(request.get("painted")) and target == code
               and logic.store_for(root, run_id).revision() == request.get("base"))
    out = _respond(run_id, class_value, view, lambda root: logic.set_params(
        root, run_id, target, request.get("eps"), request.get("ms"),
        tolerance=1e-4 if typed else 0.0))
    if out["alert"] is None:
        out["view"]["figure"] = no_update if painted else out["view"]["figure"]
        c = out["controls"]
        if c["eps"] <= (eps_max or 0):
            # The control the user moved already shows its value: only its twin follows.
            # After a refused value (an alert) both go back to the stored one.
            out["controls"] = {**dict.fromkeys(CONTROLS_OUT, no_update),
                               "eps": c["eps"] if typed else no_update,
                               "eps_box": no_update if typed else c["eps"],
                               "ms": c["ms"] if typed else no_update,
                               "ms_box": no_update if typed else c["ms"]}
    return out


@callback(
    output=_changing_outputs(),
    inputs=_page_inputs(_clicks=Input(AUTO_BTN, "n_clicks"), ms=State(MS_INPUT, "value")),
    prevent_initial_call=True,
)
def on_auto_eps(_clicks, class_value, ms, run_id, view):
    """Set the class's eps from its k-distance knee at the shown min_samples."""
    code = _code(class_value)
    if code is None:
        raise PreventUpdate
    return _respond(run_id, class_value, view,
                    lambda root: logic.auto_eps_for(root, run_id, code, ms))


@callback(
    output=_changing_outputs(),
    inputs=_page_inputs(_clicks=Input(APPLY_ALL_BTN, "n_clicks"), eps=State(EPS_INPUT, "value"),
                        ms=State(MS_INPUT, "value")),
    # Re-clustering 1,000 classes takes seconds: say so on the button meanwhile.
    running=[(Output(APPLY_ALL_BTN, "disabled"), True, False),
             (Output(APPLY_ALL_BTN, "children"), "Re-clustering every class…",
              "Apply to all classes")],
    prevent_initial_call=True,
)
def on_apply_all(_clicks, class_value, eps, ms, run_id, view):
    """Store the shown eps and min_samples for every class."""
    return _respond(run_id, class_value, view, lambda root: logic.set_params(
        root, run_id, _code(class_value), eps, ms, all_classes=True))


@callback(
    output=_changing_outputs(),
    inputs=_page_inputs(_undo=Input(UNDO_BTN, "n_clicks"), _redo=Input(REDO_BTN, "n_clicks")),
    prevent_initial_call=True,
)
def on_undo_redo(_undo, _redo, class_value, run_id, view):
    """Undo or redo the last stored change, whatever it was (parameters or overrides)."""
    redo = ctx.triggered_id == REDO_BTN

    def step(root: Path) -> None:
        if logic.undo_redo(root, run_id, redo=redo)[1] is None:
            raise InputError(f"nothing to {'redo' if redo else 'undo'}")

    return _respond(run_id, class_value, view, step)


@callback(
    output=_changing_outputs(controls=False),
    inputs=_page_inputs(_keep=Input(KEEP_BTN, "n_clicks"), _drop=Input(DROP_BTN, "n_clicks"),
                        _clear=Input(CLEAR_BTN, "n_clicks")),
    prevent_initial_call=True,
)
def on_override(_keep, _drop, _clear, class_value, run_id, view):
    """The toolbar's buttons: keep, drop or clear the points selected on the map (lasso or
    box), in one step."""
    if not ctx.triggered or not ctx.triggered[0]["value"]:
        raise PreventUpdate
    samples = logic.selected_samples(view["selection"])
    decision = {KEEP_BTN: "keep", DROP_BTN: "drop", CLEAR_BTN: None}[ctx.triggered_id]
    return _respond(run_id, class_value, view,
                    lambda root: logic.bulk(root, run_id, samples, decision), controls=False)


@callback(
    output=_changing_outputs(controls=False),
    inputs=_page_inputs(_more=Input(CUT_MORE, "n_clicks"), _fewer=Input(CUT_FEWER, "n_clicks"),
                        _reset=Input(CUT_RESET, "n_clicks")),
    prevent_initial_call=True,
)
def on_cut(_more, _fewer, _reset, class_value, run_id, view):
    """Flag more or fewer in the shown class (its cut along the score ranking), or put the
    cut back where the rule put it: one undoable step."""
    direction = {CUT_MORE: 1, CUT_FEWER: -1, CUT_RESET: 0}[ctx.triggered_id]
    return _respond(run_id, class_value, view, lambda root: logic.move_cut(
        root, run_id, _code(class_value), direction), controls=False)


@callback(
    output={"view": _outputs(VIEW_OUT)},
    inputs={"class_value": State(CLASS_PICK, "data"), "run_id": State(RUN, "data"),
            "view": _view_in("tab", "class_search", "class_sort")},
    prevent_initial_call=True,
)
def on_view(class_value, run_id, view):
    """Tab switches, the class list's search and sort: nothing is written, and the plot
    stays as it is."""
    return {"view": _respond(run_id, class_value, view, controls=False, figure="keep")["view"]}


@callback(
    output={"view": _outputs(VIEW_OUT)},
    inputs={"class_value": State(CLASS_PICK, "data"), "run_id": State(RUN, "data"),
            "view": _view_in("show_background")},
    prevent_initial_call=True,
)
def on_background(class_value, run_id, view):
    """The other classes' background on or off: only its visibility changes."""
    return {"view": _respond(run_id, class_value, view, controls=False,
                             figure="background")["view"]}


def _render(run_id, class_value, view: logic.PageView, state, figure: str = "draw") -> dict:
    """Repaint what changed: Patch colours/symbols on edits; trace 1 on class switch.

    ``figure``: ``draw`` (what changed), ``background`` (only its visibility), or ``keep``
    (the plot is current). The summary is only rendered while its tab is open.
    """
    root = settings().runs_root
    data = run_data(root, run_id)
    code = _code(class_value)
    d = state.decisions
    shown = view.shown

    def trace() -> dict:
        return cached_figure(data, state, ("class", code), lambda: class_trace(
            data.embedding, data.members[code], d, state.marks))

    if figure == "keep" or (figure == "background" and shown != code):
        fig = no_update
    elif code is None:
        fig = cached_figure(data, state, ("overview",), lambda: overview_figure(
            data.embedding, data.samples.labels, data.samples.classes, d,
            f"/background/{run_id}.png"))
    elif shown in (None, "all"):
        fig = class_figure(data.embedding, trace(), f"/background/{run_id}.png",
                           bool(view.show_background), data.bounds)
    elif figure == "background":  # a layout change costs a full relayout: only when asked
        fig = Patch()
        fig["layout"]["images"][0]["visible"] = bool(view.show_background)
    else:
        fig = Patch()
        if shown != code:
            fig["data"][1] = trace()
        else:
            marker = trace()["marker"]
            for key in ("color", "symbol", "size"):
                fig["data"][1]["marker"][key] = marker[key]
    rows = logic.class_counts(data, state)
    listed, matched = logic.class_list(rows, view.class_search, view.class_sort, code)
    list_rows = {"order": ["all", *listed],
                 "counts": [[r[k] for k in logic.COUNT_KEYS] for r in rows]}
    more = f"{matched} of {len(rows) - 1} classes match" if view.class_search else ""
    summary = _summary_table(rows) if view.tab == "summary" else no_update
    store = logic.store_for(root, run_id)
    noise = logic.noise_per_class(data, state)
    model = None if code is None else logic.client_model(data, state, code, rows, noise)
    return {"figure": fig, "shown": _changed("all" if code is None else code, shown),
            "rows": list_rows, "summary": summary,
            "undo_disabled": _changed(not store.can_undo(), view.undo_disabled),
            "redo_disabled": _changed(not store.can_redo(), view.redo_disabled),
            "status": logic.status_text(rows, noise, state.rule), "model": model,
            "more": _changed(more, view.more),
            "revision": _changed(store.revision(), view.revision)}


@callback(
    Output(RULE_INFO, "children"), Output(CUT_ROW, "hidden"),
    Input(CLASS_PICK, "data"), Input(REVISION, "data"), State(RUN, "data"),
)
def on_rule_facts(class_value, _revision, run_id):
    """What the rule makes of the shown class, in words, whenever the class or the store
    changes: its own request, so a class switch repaints the map without waiting for it."""
    code = _code(class_value)
    if code is None:
        return html.P("Pick a class to see what the rule makes of it.", className="mb-1"), True
    data = run_data(settings().runs_root, run_id)
    facts = logic.rule_facts(data, current_state(data), code)
    return [html.P(line, className="mb-1") for line in facts.sentences()], not facts.can_cut


def _summary_table(rows: list[dict]) -> dbc.Table:
    head = html.Thead(html.Tr([html.Th(h) for h in
                               ("class", *logic.COUNT_KEYS, "reduction")]))
    body = html.Tbody([html.Tr([html.Td(r["class"]), *[html.Td(r[k]) for k in logic.COUNT_KEYS],
                                html.Td(f"{r['reduction_pct']:.2f}%")],
                               className="fw-semibold" if r["class"] == "total" else None)
                       for r in rows])
    return dbc.Table([head, body], size="sm", striped=True, hover=True, class_name="w-auto")


@callback(
    Output(TOOLTIP, "show"), Output(TOOLTIP, "bbox"), Output(TOOLTIP, "children"),
    Output(TOOLTIP, "direction"),
    Input(GRAPH, "hoverData"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_hover(hover, run_id):
    """Tooltip with the image, its facts, and its 5 nearest neighbours' labels."""
    if not hover or not hover.get("points"):
        return False, no_update, no_update, no_update
    point = hover["points"][0]
    if point.get("customdata") is None:
        return False, no_update, no_update, no_update
    sample = int(np.ravel(point["customdata"])[0])
    data = run_data(settings().runs_root, run_id)
    info = logic.hover_info(data, current_state(data), sample)
    state = "kept" if info["kept"] else "dropped"
    lines = [
        html.Img(src=f"/thumb/{run_id}/{sample}.png", className="hover-img"),
        html.Div(f"#{sample} · {info['path']}", className="small text-muted text-break"),
        html.Div([html.B(info["label"]), " · ",
                  html.Span(state, className="text-success" if info["kept"] else "text-danger")],
                  className="small"),
        html.Div(info["why"], className="small hover-why"),
        html.Div("5 nearest: " + ", ".join(info["neighbours"]), className="small text-muted"),
    ]
    if info["score"] is not None:
        suggestion = f" · suggested: {info['suggested']}" if info["suggested"] else ""
        lines.append(html.Div(f"mislabel score {info['score']:.2f}{suggestion}",
                              className="small hover-score"))
    if info["true_label"] is not None and info["true_label"] != info["label"]:
        lines.append(html.Div(f"true label: {info['true_label']}", className="small text-danger"))
    return (True, point["bbox"], html.Div(lines, className="hover-card"),
            logic.tooltip_side(data, sample))


# --------------------------------------------------------------------------- review list
# The grid (app/review_panel.py) holds every flagged or decided sample; it sorts and
# filters in the browser. Its rows follow the store revision the page shows.
@callback(
    Output(rp.GRID, "rowData"), Output(rp.PAIRS, "children"), Output(rp.PAIR_DATA, "data"),
    Output(rp.GRID, "filterModel", allow_duplicate=True),
    Input(REVISION, "data"), Input(TABS, "active_tab"), State(RUN, "data"),
    State(rp.PAIR_DATA, "data"), State(CLASS_PICK, "data"), State(CLASS_NAMES, "data"),
    prevent_initial_call="initial_duplicate",
)
def on_queue(_revision, tab, run_id, filled, class_value, names):
    """The review list's rows and its confusion table, while its tab is open. The first
    rows come filtered to the class the map shows (a filter set before the grid has rows
    did not always hold)."""
    if tab != "review":
        raise PreventUpdate
    data = run_data(settings().runs_root, run_id)
    rows = review.queue_rows(data, current_state(data), run_id)
    pairs = review.confusion(rows)
    first = no_update if filled is not None else _shown_class_filter(class_value, names)
    return rows, rp.pair_buttons(pairs), pairs, first


def _shown_class_filter(class_value, names: list[str]) -> dict:
    """The review list's filter for the class the map shows: none for "all"."""
    code = _code(class_value)
    return {} if code is None else rp.class_filter(names[code])


@callback(
    Output(rp.GRID, "filterModel"),
    Input(CLASS_PICK, "data"), Input({"type": rp.PAIR_BTN, "index": ALL}, "n_clicks"),
    Input(rp.CLEAR_FILTERS, "n_clicks"), State(rp.PAIR_DATA, "data"),
    State(CLASS_NAMES, "data"), prevent_initial_call=True,
)
def on_grid_filter(class_value, _pairs, _clear, pairs, names):
    """Filter the review list: to the class the map shows, to a confusion table's pair, or
    back to every row (Clear filters, or "All classes"). The first rows come with their
    filter from on_queue."""
    trigger = ctx.triggered_id
    if isinstance(trigger, dict):  # a pair's button (pattern-matching id)
        if not ctx.triggered[0]["value"]:
            raise PreventUpdate  # the buttons were just drawn
        pair = (pairs or [])[trigger["index"]]
        return rp.class_filter(pair["given"], pair["suggested"])
    return {} if trigger == rp.CLEAR_FILTERS else _shown_class_filter(class_value, names)


clientside_callback(
    """function (rows) {
        const ids = (rows || []).map(function (r) { return r.sample; });
        return [ids, ids.length + " listed"];
    }""",
    Output(rp.LISTED, "data"), Output(rp.COUNT, "children"),
    Input(rp.GRID, "virtualRowData"),
)


@callback(
    Output(rp.PENDING, "data"), Output(rp.CONFIRM_TEXT, "children"),
    Output(rp.CONFIRM_BOX, "is_open"),
    Input({"type": rp.BULK_BTN, "action": ALL}, "n_clicks"), Input(rp.CANCEL, "n_clicks"),
    State(rp.LISTED, "data"), State(rp.MIN_SCORE, "value"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_bulk_preview(_clicks, _cancel, listed, min_score, run_id):
    """A bulk button asks first: how many samples the action would change, with Confirm."""
    trigger = ctx.triggered_id
    if trigger == rp.CANCEL or not ctx.triggered[0]["value"]:
        return None, "", False
    action = trigger["action"]
    data = run_data(settings().runs_root, run_id)
    try:
        plan = review.bulk_plan(data, current_state(data), listed or [], action, min_score)
    except InputError as exc:
        return None, str(exc), True
    what = review.BULK[action]
    if not plan.changes:
        return None, f"{what}: nothing to change among the {len(listed or [])} listed.", True
    return ({"action": action, "samples": listed, "min_score": min_score},
            f"{what} changes {plan.changes} of the {len(listed or [])} listed samples "
            "(one step, undoable).", True)


@callback(
    output=_changing_outputs(controls=False),
    inputs=_page_inputs(_keep=Input(rp.KEEP, "n_clicks"), _drop=Input(rp.DROP, "n_clicks"),
                        _relabel=Input(rp.RELABEL, "n_clicks"),
                        selected=State(rp.GRID, "selectedRows"),
                        label=State(rp.RELABEL_TO, "value")),
    prevent_initial_call=True,
)
def on_review_edit(_keep, _drop, _relabel, selected, label, class_value, run_id, view):
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

    return _respond(run_id, class_value, view, action, controls=False)


@callback(
    output=_changing_outputs(controls=False),
    inputs=_page_inputs(key=Input(rp.KEY, "data")),
    prevent_initial_call=True,
)
def on_review_key(key, class_value, run_id, view):
    """A key on the focused row (assets/review.js): keep, drop, or relabel to the
    suggestion."""
    if not key:
        raise PreventUpdate
    return _respond(run_id, class_value, view,
                    lambda root: review.key_action(root, run_id, key), controls=False)


@callback(
    output={**_changing_outputs(controls=False),
            "pending": Output(rp.PENDING, "data", allow_duplicate=True),
            "confirm_open": Output(rp.CONFIRM_BOX, "is_open", allow_duplicate=True)},
    inputs=_page_inputs(_confirm=Input(rp.CONFIRM, "n_clicks"),
                        pending=State(rp.PENDING, "data")),
    prevent_initial_call=True,
)
def on_bulk_confirm(_confirm, pending, class_value, run_id, view):
    """Store the confirmed bulk action on the listed rows: one undoable step."""
    if not ctx.triggered[0]["value"]:
        raise PreventUpdate

    def action(root: Path) -> int:
        if not pending:
            raise InputError("nothing to confirm: choose a bulk action first")
        return review.bulk_apply(root, run_id, pending["samples"], pending["action"],
                                 pending.get("min_score"))

    out = _respond(run_id, class_value, view, action, controls=False)
    return {**out, "pending": None, "confirm_open": False}


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
    Output(rp.DETAIL, "children"), Input(rp.FOCUS, "data"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_focus(sample, run_id):
    """Why the focused row is flagged or decided, in the reviewer's words."""
    if sample is None:
        raise PreventUpdate
    data = run_data(settings().runs_root, run_id)
    s, i = data.samples, int(sample)
    if not 0 <= i < len(s):
        raise PreventUpdate
    why = logic.why(data, current_state(data), i)
    return [html.B(f"#{i} · {s.classes[s.labels[i]]}"), html.Span(f" · {why}")]
