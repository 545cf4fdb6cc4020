"""The map: the shown class's t-SNE points with their DBSCAN outcome, its toolbar (keep,
drop or clear the lasso's points; undo, redo; the other classes' background), its legend
and the status line over the page.

Its script (assets/class_map.js, namespace ``map``) re-clusters the shown class in the
browser while eps or min_samples moves and repaints at once. It keeps the one model of a
parameter change in progress, the *draft* ``{class, eps, min_samples, base_revision,
painted}``, and publishes it in :data:`DRAFT` when a slider is released or a value typed;
the parameters' server callback stores it, and the render path leaves the plot as it is
when the browser has already painted what was stored. The script is also the status
line's one writer: the server's line comes to it in a hidden element, :data:`STATUS_DATA`,
which the script copies the moment React has written it (no Dash round between).

A class switch is painted by the browser when it can (assets/class_map.js, asked by the
class list through the page's store, assets/00-curate-store.js): the script fetches a
class's trace ahead (:func:`class_answer`, served at ``/map/<run>/<class>.json``) while the
pointer rests on its row in the class list, and at the click draws it from there and says
so in :data:`PAINTED`; the render path then leaves the plot as it is. A class it does not
hold at the revision the page shows (the store's) is drawn by the server, as before.
"""

from __future__ import annotations

import time
from urllib.parse import quote

import dash_bootstrap_components as dbc
from dash import (
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

from app import ids
from app.app_context import settings
from app.curate import RUN, SHOWN, Page, changes, page_actions
from app.curate.figures import LEGEND, class_figure, class_trace, overview_figure
from app.curate.render import PageRequest, changed
from app.layout import GRAPH_CONFIG, LOCAL_ONLY, small_button
from app.run_data import RunData, RunState, cached_figure, current_state, run_data
from worker.pipeline.errors import InputError

PART = "map"
SLOT = "map"
GRAPH = ids.GRAPH
UNDO = ids.UNDO
REDO = ids.REDO
KEEP = "curate-keep"
DROP = "curate-drop"
CLEAR = "curate-clear"
BACKGROUND = ids.BACKGROUND
STATUS = ids.STATUS  # the status line: written by assets/class_map.js only
STATUS_DATA = ids.STATUS_DATA  # the server's status line (hidden), for the script to show
MODEL = ids.MODEL  # what assets/class_map.js needs to re-cluster the shown class
DRAFT = ids.DRAFT  # the parameter change the script drew: written by assets/class_map.js
PAINTED = ids.PAINTED  # the switch assets/class_map.js drew: {class, revision}, or None
TRACES = "/map"  # where assets/class_map.js fetches a class's trace (see class_answer)


def status_line() -> html.Span:
    """The run's counts, one line (the page puts it in its header), and the server's line
    for the script to show: its ``title`` changes with every answer, so a line that reads
    as before is shown again (after a refused change, over a preview)."""
    return html.Span([html.Span(id=STATUS, className="text-muted small me-3"),
                      html.Span(id=STATUS_DATA, hidden=True)])


def layout(page: Page) -> html.Div:
    """The toolbar, the plot and its legend; the address of the run's class traces for the
    script, on the map's element (``data-traces``)."""
    toolbar = dbc.Row([
        dbc.Col(dbc.ButtonGroup([
            small_button("Keep", KEEP, "success"),
            small_button("Drop", DROP, "danger"),
            small_button("Clear override", CLEAR),
        ]), width="auto"),
        dbc.Col(dbc.ButtonGroup([
            small_button("↶ Undo", UNDO, title="Ctrl+Z"),
            small_button("↷ Redo", REDO, title="Ctrl+Shift+Z"),
        ]), width="auto"),
        dbc.Col(dbc.Switch(id=BACKGROUND, label="other classes", value=True,
                           class_name="mb-0 small"), width="auto"),
    ], class_name="g-2 align-items-center mb-2")
    graph = dcc.Graph(id=GRAPH, style={"height": "clamp(340px, calc(100vh - 240px), 900px)"},
                      clear_on_unhover=True,
                      config={**GRAPH_CONFIG, "scrollZoom": True, "plotGlPixelRatio": 1,
                              "modeBarButtonsToRemove": [*LOCAL_ONLY, "toImage"]})
    return html.Div([dcc.Store(id=MODEL), dcc.Store(id=DRAFT), dcc.Store(id=PAINTED),
                     changes.store(PART), toolbar, graph, _legend()],
                    id=ids.MAP, **{"data-traces": f"{TRACES}/{quote(page.run_id, safe='')}/"})


def _legend() -> html.Div:
    """What the map's marks mean, in the same symbols and colours: two components an
    item (each mounted component costs every store update on the page a selector run,
    docs/benchmarks.md), several colours in one run of marks as a gradient clipped to the
    text."""
    return html.Div([html.Span([html.Span(sym, style=marks_style(col)), f" {text}"],
                               className="me-3 text-nowrap legend-item")
                     for sym, col, text in LEGEND],
                    className="d-flex flex-wrap curate-legend text-muted mt-1")


def marks_style(colours: str | list[str]) -> dict:
    """The style that draws a run of equal-width marks in ``colours`` (one colour, or one
    a mark)."""
    if isinstance(colours, str):
        return {"color": colours}
    step = 100 / len(colours)
    stops = ", ".join(f"{c} {k * step:.2f}% {(k + 1) * step:.2f}%"
                      for k, c in enumerate(colours))
    return {"background": f"linear-gradient(90deg, {stops})", "color": "transparent",
            "WebkitBackgroundClip": "text", "backgroundClip": "text"}


# ------------------------------------------------------------------------ render part
OUTPUTS = {"figure": Output(GRAPH, "figure"), "model": Output(MODEL, "data"),
           "status": Output(STATUS_DATA, "children"),
           "status_at": Output(STATUS_DATA, "title"),
           "undo_disabled": Output(UNDO, "disabled"), "redo_disabled": Output(REDO, "disabled")}
STATES = {"background": State(BACKGROUND, "value"), "draft": State(DRAFT, "data"),
          "painted": State(PAINTED, "data"),
          "undo_disabled": State(UNDO, "disabled"), "redo_disabled": State(REDO, "disabled")}


def render(view: PageRequest, states: dict) -> dict:
    """The plot (unless the browser already painted what was stored), the model its
    script re-clusters with, and, when the store changed, the status line and whether
    undo and redo can act."""
    code, state = view.code, view.state
    drawn = _painted(view, states["draft"]) or _switched_in_browser(view, states["painted"])
    out = {"figure": no_update if drawn else _figure(view, states["background"]),
           "model": None if code is None else page_actions.client_model(view.data, state, code,
                                                                 view.noise)}
    if not view.stored:  # a class switch alone: the counts and history are as they were
        return {**out, **dict.fromkeys(("status", "status_at", "undo_disabled",
                                        "redo_disabled"),
                                       no_update)}
    store = page_actions.store_for(view.root, view.run_id)
    return {**out,
            "status": page_actions.status_text(view.counts, view.noise, state.rule),
            "status_at": f"revision {state.revision} at {time.time():.3f}",
            "undo_disabled": changed(not store.can_undo(), states["undo_disabled"]),
            "redo_disabled": changed(not store.can_redo(), states["redo_disabled"])}


def _painted(view: PageRequest, draft: dict | None) -> bool:
    """Whether the plot already shows the stored class: the browser drew the draft over
    the revision before, and the store's only change since is that draft."""
    if view.switched or view.fired != {"change"} or view.code is None or not draft:
        return False
    eps, ms = view.state.params[view.code]
    return (bool(draft.get("painted")) and draft.get("class") == view.code
            and view.state.revision == draft.get("base_revision", -2) + 1
            and abs(float(eps) - float(draft.get("eps", -1))) <= 1e-9
            and int(ms) == draft.get("min_samples"))


def _switched_in_browser(view: PageRequest, painted: dict | None) -> bool:
    """Whether the browser drew this class switch itself, from the class's trace at the
    revision the store holds (assets/class_map.js)."""
    return (view.switched and "class" in view.fired and view.code is not None
            and bool(painted) and painted.get("class") == view.code
            and painted.get("revision") == view.state.revision)


def class_trace_of(data: RunData, state: RunState, code: int) -> dict:
    """The class view's trace 1 for class ``code`` at the store's revision (cached); its
    ``meta`` names the class, which the map's scripts check before re-clustering."""
    return cached_figure(data, state, ("class", code), lambda: {
        **class_trace(data.embedding, data.members[code], state.decisions, state.marks,
                      data.proposals),
        "meta": {"class": code}})


def class_answer(run_id: str, code: str, have: str | None) -> dict | None:
    """What ``/map/<run>/<class>.json`` answers: class ``code``'s trace at the store's
    revision, with the class view's frame (the axes' pin and the layout, the same for every
    class); None when the store's revision is ``have``, the one the browser holds.

    Raises
    ------
    InputError
        No such run, or no such class in it.
    """
    root = settings().runs_root
    data = run_data(root, run_id)
    if not (code.isascii() and code.isdigit() and len(code) < 10
            and int(code) < len(data.samples.classes)):
        raise InputError(f"no class {code!r} in run {run_id!r}")
    state = current_state(data)
    if have is not None and have == str(state.revision):
        return None
    frame = class_figure(data.embedding, {}, f"/background/{run_id}.png", True, data.bounds)
    return {"class": int(code), "revision": state.revision,
            "trace": class_trace_of(data, state, int(code)),
            "frame": {"data": frame["data"][:1], "layout": frame["layout"]}}


def _figure(view: PageRequest, background: bool):
    """The map for the shown class (None: every class), as a new figure or as a Patch of
    what the page shows: the class trace on a switch, colours and symbols on an edit."""
    data, state, code, run_id = view.data, view.state, view.code, view.run_id

    def trace() -> dict:
        return class_trace_of(data, state, code)

    if code is None:
        return cached_figure(data, state, ("overview",), lambda: overview_figure(
            data.embedding, data.samples.labels, data.samples.classes, state.decisions,
            f"/background/{run_id}.png"))
    if view.shown in (None, "all"):
        return class_figure(data.embedding, trace(), f"/background/{run_id}.png",
                            bool(background), data.bounds)
    fig = Patch()
    if view.shown != code:
        fig["data"][1] = trace()
    else:
        marker = trace()["marker"]
        for key in ("color", "symbol", "size"):
            fig["data"][1]["marker"][key] = marker[key]
    return fig


# ---------------------------------------------------------------------------- callbacks
_PIXEL_RATIO = """
function (_run, config) {
    const ratio = Math.min(2, Math.max(1, Math.round(window.devicePixelRatio || 1)));
    if (config.plotGlPixelRatio === ratio) throw window.dash_clientside.PreventUpdate;
    return Object.assign({}, config, {plotGlPixelRatio: ratio});
}
"""


def register() -> None:
    """The map's callbacks, for the page module to call as Dash imports it."""
    # assets/class_map.js: a new model from the server (remembered); a slider dragged
    # (the class repainted in the browser, the draft kept); a slider released or a value
    # typed (repainted unless the drag already did, and the draft published for the
    # parameters to store).
    clientside_callback(ClientsideFunction(namespace="map", function_name="seen"),
                        Input(MODEL, "data"), prevent_initial_call=True)
    clientside_callback(ClientsideFunction(namespace="map", function_name="preview"),
                        Input(ids.EPS_SLIDER, "drag_value"), Input(ids.MS_SLIDER, "drag_value"),
                        State(MODEL, "data"), State(ids.EPS_SLIDER, "value"),
                        State(ids.MS_SLIDER, "value"), prevent_initial_call=True)
    clientside_callback(ClientsideFunction(namespace="map", function_name="slid"),
                        Output(DRAFT, "data", allow_duplicate=True),
                        Input(ids.EPS_SLIDER, "value"), Input(ids.MS_SLIDER, "value"),
                        State(MODEL, "data"), State(ids.EPS_SLIDER, "step"),
                        prevent_initial_call=True)
    clientside_callback(ClientsideFunction(namespace="map", function_name="typed"),
                        Output(DRAFT, "data", allow_duplicate=True),
                        Input(ids.EPS_INPUT, "value"), Input(ids.MS_INPUT, "value"),
                        State(MODEL, "data"), prevent_initial_call=True)
    # The WebGL canvas at the screen's pixel ratio (Plotly's default, 2, draws 4× the pixels
    # of a plain screen: a repaint cost twice the time, docs/benchmarks.md).
    clientside_callback(_PIXEL_RATIO, Output(GRAPH, "config"), Input(RUN, "data"),
                        State(GRAPH, "config"))
    callback(changes.output(PART), Input(UNDO, "n_clicks"), Input(REDO, "n_clicks"),
             State(RUN, "data"), prevent_initial_call=True)(on_undo_redo)
    callback(changes.output(PART), Input(KEEP, "n_clicks"), Input(DROP, "n_clicks"),
             Input(CLEAR, "n_clicks"), State(GRAPH, "selectedData"), State(RUN, "data"),
             prevent_initial_call=True)(on_override)
    callback(Output(GRAPH, "figure", allow_duplicate=True), Input(BACKGROUND, "value"),
             State(SHOWN, "data"), prevent_initial_call=True)(on_background)


def on_undo_redo(_undo, _redo, run_id):
    """Undo or redo the last stored change, whatever it was (parameters or overrides)."""
    redo = ctx.triggered_id == REDO
    # Nothing to do is refused in the line every door gives: the page shows it as its alert.
    return changes.apply(run_id, lambda root: page_actions.undo_redo(root, run_id, redo=redo))


def on_override(_keep, _drop, _clear, selection, run_id):
    """Keep, drop or clear the points selected on the map (lasso or box), in one step."""
    if not ctx.triggered or not ctx.triggered[0]["value"]:
        raise PreventUpdate
    samples = page_actions.selected_samples(selection)
    decision = {KEEP: "keep", DROP: "drop", CLEAR: None}[ctx.triggered_id]
    return changes.apply(run_id, lambda root: page_actions.bulk(root, run_id, samples, decision))


def on_background(show, shown):
    """The other classes' background on or off: only its visibility changes (a layout
    change costs a full relayout, so only when asked)."""
    if shown in (None, "all"):
        raise PreventUpdate
    fig = Patch()
    fig["layout"]["images"][0]["visible"] = bool(show)
    return fig
