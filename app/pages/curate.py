"""Curate one run: per-class t-SNE/DBSCAN view, hover previews, overrides, export, retrain."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

import dash
import dash_bootstrap_components as dbc
import numpy as np
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

from app import curate_logic as logic
from app.data import cached_figure, current_state, run_data
from app.figures import LEGEND, REASON_MARKS, class_figure, class_trace, overview_figure
from app.layout import error_alert
from app.panels import export_panel, retrain_panel
from app.server import settings
from worker.pipeline.errors import InputError

dash.register_page(__name__, path_template="/curate/<run_id>", title="Curate · tsne-curator")

RUN = "curate-run"
SHOWN = "curate-shown"
ALERT = "curate-alert"
CLASS_PICK = "curate-class"
GRAPH = "curate-graph"
TOOLTIP = "curate-tooltip"
EPS_SLIDER = "curate-eps-slider"
EPS_INPUT = "curate-eps-input"
MS_SLIDER = "curate-ms-slider"
MS_INPUT = "curate-ms-input"
AUTO_BTN = "curate-auto"
APPLY_ALL_BTN = "curate-apply-all"
UNDO_BTN = "curate-undo"
REDO_BTN = "curate-redo"
KEEP_BTN = "curate-keep"
DROP_BTN = "curate-drop"
CLEAR_BTN = "curate-clear"
BG_SWITCH = "curate-background"
STATUS = "curate-status"
SUMMARY = "curate-summary"
GALLERY = "curate-gallery"
GALLERY_PAGES = "curate-gallery-pages"
GALLERY_CLICK = "curate-gallery-click"  # written by assets/gallery.js
TABS = "curate-tabs"
MODEL = "curate-model"  # what assets/recluster.js needs to re-cluster the shown class
PARAMS = "curate-params"  # an eps / min_samples change, written by assets/recluster.js


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
    ]), class_name="mb-3")


def _toolbar() -> dbc.Row:
    def marks(symbols: str, colours) -> list[html.Span]:  # noqa: ANN001 - str or list
        colours = [colours] * len(symbols) if isinstance(colours, str) else colours
        return [html.Span(s, style={"color": c}) for s, c in zip(symbols, colours, strict=True)]

    legend = [html.Span([*marks(sym, col), html.Span(text, className="ms-1")],
                        className="me-3 small text-nowrap legend-item")
              for sym, col, text in LEGEND]
    return dbc.Row([
        dbc.Col(dbc.ButtonGroup([
            dbc.Button("Keep", id=KEEP_BTN, color="success", outline=True, size="sm"),
            dbc.Button("Drop", id=DROP_BTN, color="danger", outline=True, size="sm"),
            dbc.Button("Clear override", id=CLEAR_BTN, color="secondary", outline=True,
                       size="sm"),
        ]), width="auto"),
        dbc.Col(dbc.ButtonGroup([
            dbc.Button("↶ Undo", id=UNDO_BTN, color="secondary", outline=True, size="sm",
                       title="Ctrl+Z"),
            dbc.Button("↷ Redo", id=REDO_BTN, color="secondary", outline=True, size="sm",
                       title="Ctrl+Shift+Z"),
        ]), width="auto"),
        dbc.Col(dbc.Switch(id=BG_SWITCH, label="other classes", value=True,
                           class_name="mb-0 small"), width="auto"),
        dbc.Col(html.Div(legend, className="d-flex flex-wrap"), class_name="ms-auto"),
    ], class_name="g-2 align-items-center mb-2")


def layout(run_id: str | None = None, **_query) -> html.Div:
    try:
        data = run_data(settings().runs_root, run_id or "")
        current_state(data)
    except InputError as exc:
        return html.Div([html.H4("Curate"), error_alert(str(exc)),
                         dcc.Link("← back to runs", href="/")])
    options = [{"label": "All classes", "value": "all"}] + [
        {"label": name, "value": code} for code, name in enumerate(data.samples.classes)]
    return html.Div([
        dcc.Store(id=RUN, data=run_id), dcc.Store(id=SHOWN), dcc.Store(id=GALLERY_CLICK),
        dcc.Store(id=MODEL), dcc.Store(id=PARAMS),
        html.Div([html.H4(f"Curate · {run_id}", className="mb-0 me-3"),
                  html.Span(id=STATUS, className="text-muted small me-3"),
                  dcc.Link("results →", href=f"/results/{run_id}", className="small ms-auto")],
                 className="d-flex align-items-baseline mb-2"),
        html.Div(id=ALERT),
        dbc.Row([
            # The parameters first: at 1366×768 they stay in view, and the class list
            # scrolls inside its card however many classes there are.
            dbc.Col([
                _controls(),
                dbc.Card(dbc.CardBody([
                    html.H6("Classes", className="card-title"),
                    html.Div("size · flagged · overridden · kept",
                             className="text-muted small mb-1"),
                    dbc.RadioItems(id=CLASS_PICK, options=options, value=0,
                                   class_name="class-pick", input_class_name="btn-check",
                                   label_class_name="btn btn-outline-primary btn-sm w-100 "
                                                    "text-start mb-1",
                                   label_checked_class_name="active"),
                ]), class_name="mb-3"),
            ], md=3, lg=3),
            dbc.Col([
                _toolbar(),
                dcc.Graph(id=GRAPH, style={"height": "560px"}, clear_on_unhover=True,
                          config={"scrollZoom": True, "displaylogo": False,
                                  "modeBarButtonsToRemove": ["toImage"]}),
                dcc.Tooltip(id=TOOLTIP, direction="right"),
                dbc.Tabs([
                    dbc.Tab([dbc.Pagination(id=GALLERY_PAGES, max_value=1, active_page=1,
                                            size="sm", class_name="mt-2",
                                            fully_expanded=False),
                             dcc.Markdown(id=GALLERY, dangerously_allow_html=True)],
                            label="Noise gallery", tab_id="gallery"),
                    dbc.Tab(html.Div(id=SUMMARY, className="mt-2"), label="Summary",
                            tab_id="summary"),
                    dbc.Tab(export_panel(), label="Export", tab_id="export"),
                    dbc.Tab(retrain_panel(), label="Retrain", tab_id="retrain"),
                ], id=TABS, active_tab="gallery", class_name="mt-3"),
            ], md=9, lg=9),
        ]),
    ])


# --------------------------------------------------------------------------- callbacks
# Every callback that changes something also repaints, in the same round trip: the view
# outputs below are shared (the first owner is on_controls, which also runs on load).
# Outputs whose value the page already shows go back as no_update: each updated component
# costs the Dash renderer a store update that re-runs every component's selector, which
# on this page took more time than Plotly's repaint.
VIEW = [(GRAPH, "figure"), (SHOWN, "data"), (CLASS_PICK, "options"), (SUMMARY, "children"),
        (GALLERY, "children"), (GALLERY_PAGES, "max_value"), (UNDO_BTN, "disabled"),
        (REDO_BTN, "disabled"), (STATUS, "children"), (MODEL, "data")]
VIEW_STATE = [State(BG_SWITCH, "value"), State(GALLERY_PAGES, "active_page"),
              State(SHOWN, "data"), State(TABS, "active_tab"), State(GALLERY_PAGES, "max_value"),
              State(UNDO_BTN, "disabled"), State(REDO_BTN, "disabled")]


def _view_outputs(duplicate: bool) -> list[Output]:
    return [Output(c, p, allow_duplicate=duplicate) for c, p in VIEW]


def _code(value) -> int | None:
    return None if value in (None, "all") else int(value)


def _changed(new, old):
    return no_update if new == old else new


# eps / min_samples changes: assets/recluster.js re-clusters the shown class in the browser
# and repaints it at once (live while a slider is dragged), then, for a typed value or a
# released slider, writes the change into PARAMS for on_controls to store.
clientside_callback(
    ClientsideFunction(namespace="curate", function_name="recluster"),
    Output(PARAMS, "data"), Output(STATUS, "children", allow_duplicate=True),
    Output(CLASS_PICK, "options", allow_duplicate=True),
    Input(EPS_SLIDER, "value"), Input(EPS_INPUT, "value"), Input(MS_SLIDER, "value"),
    Input(MS_INPUT, "value"), Input(EPS_SLIDER, "drag_value"), Input(MS_SLIDER, "drag_value"),
    State(MODEL, "data"), State(CLASS_PICK, "options"),
    State(EPS_SLIDER, "step"),
    prevent_initial_call=True,
)


@callback(
    Output(EPS_SLIDER, "value"), Output(EPS_INPUT, "value"), Output(EPS_SLIDER, "max"),
    Output(EPS_SLIDER, "step"), Output(MS_SLIDER, "value"), Output(MS_INPUT, "value"),
    Output(ALERT, "children"), *_view_outputs(False),
    Input(CLASS_PICK, "value"), Input(PARAMS, "data"), Input(AUTO_BTN, "n_clicks"),
    Input(APPLY_ALL_BTN, "n_clicks"), Input(UNDO_BTN, "n_clicks"), Input(REDO_BTN, "n_clicks"),
    State(EPS_SLIDER, "max"), State(RUN, "data"), State(EPS_INPUT, "value"),
    State(MS_INPUT, "value"), *VIEW_STATE,
)
def on_controls(class_value, request, _auto, _apply_all, _undo, _redo, eps_max, run_id,
                eps_input, ms_input, *view_state):
    """Parameter changes, auto eps, apply-to-all, undo/redo, and class switches.

    ``request`` comes from assets/recluster.js: the new eps and min_samples, whether they
    were typed (else slid), and whether the browser already repainted the class from the
    store revision ``base``. If so, and nothing else was stored since, the plot is left
    as it is.
    """
    root = settings().runs_root
    fired = {t["prop_id"].split(".")[0] for t in ctx.triggered} if ctx.triggered_id else set()
    code = _code(class_value)
    alert = no_update
    edited = PARAMS in fired and bool(request) and code is not None
    typed = edited and bool(request.get("typed"))
    painted = False
    try:
        if edited:
            # The class the browser tuned, even if another was picked since.
            target = request.get("class", code)
            painted = (bool(request.get("painted")) and target == code
                       and logic.store_for(root, run_id).revision() == request.get("base"))
            logic.set_params(root, run_id, target, request.get("eps"), request.get("ms"),
                             tolerance=1e-4 if typed else 0.0)
        elif APPLY_ALL_BTN in fired:
            logic.set_params(root, run_id, code, eps_input, ms_input, all_classes=True)
        elif AUTO_BTN in fired and code is not None:
            logic.auto_eps_for(root, run_id, code, ms_input)
        elif fired & {UNDO_BTN, REDO_BTN}:
            _, what = logic.undo_redo(root, run_id, redo=REDO_BTN in fired)
            if what is None:
                alert = error_alert(f"nothing to {'redo' if REDO_BTN in fired else 'undo'}")
    except InputError as exc:
        alert = error_alert(str(exc))
    data = run_data(root, run_id)
    state = current_state(data)
    view = _render(run_id, class_value, logic.PageView(*view_state), state=state,
                   figure_current=painted and alert is no_update)
    if code is None:
        return (no_update,) * 6 + (alert, *view)
    v = logic.control_values(data, state, code)
    controls = [v.eps, v.eps, v.eps_max, v.eps_max / 200, v.min_samples, v.min_samples]
    if edited and alert is no_update and v.eps <= (eps_max or 0):
        # The control the user moved already shows its value: only its twin follows. After
        # a refused value (an alert) both go back to the stored one.
        controls = [v.eps if typed else no_update, no_update if typed else v.eps,
                    no_update, no_update, v.min_samples if typed else no_update,
                    no_update if typed else v.min_samples]
    return (*controls, alert, *view)


@callback(
    Output(ALERT, "children", allow_duplicate=True), *_view_outputs(True),
    Input(GRAPH, "clickData"), Input(KEEP_BTN, "n_clicks"), Input(DROP_BTN, "n_clicks"),
    Input(CLEAR_BTN, "n_clicks"), Input(GALLERY_CLICK, "data"),
    State(GRAPH, "selectedData"), State(RUN, "data"), State(CLASS_PICK, "value"), *VIEW_STATE,
    prevent_initial_call=True,
)
def on_edit(click, _keep, _drop, _clear, gallery_click, selected, run_id, class_value,
            *view_state):
    """Overrides: click toggles, lasso/box + buttons act in bulk, gallery toggles."""
    root = settings().runs_root
    trigger = ctx.triggered_id
    if not ctx.triggered or not ctx.triggered[0]["value"]:
        raise PreventUpdate
    alert = None
    try:
        if trigger == GRAPH:
            point = (click or {}).get("points", [{}])[0]
            if point.get("curveNumber") != 1 or point.get("customdata") is None:
                raise PreventUpdate
            logic.toggle(root, run_id, int(point["customdata"]))
        elif trigger == GALLERY_CLICK and gallery_click.get("action") == "relabel":
            logic.relabel(root, run_id, int(gallery_click["sample"]), gallery_click["label"])
        elif trigger == GALLERY_CLICK and gallery_click.get("action") in ("keep", "drop"):
            logic.set_decision(root, run_id, int(gallery_click["sample"]),
                               gallery_click["action"])
        elif trigger == GALLERY_CLICK:
            logic.toggle(root, run_id, int(gallery_click["sample"]))
        else:
            samples = [int(p["customdata"]) for p in (selected or {}).get("points", [])
                       if p.get("customdata") is not None]
            decision = {KEEP_BTN: "keep", DROP_BTN: "drop", CLEAR_BTN: None}[trigger]
            logic.bulk(root, run_id, samples, decision)
    except InputError as exc:
        alert = error_alert(str(exc))
    return (alert, *_render(run_id, class_value, logic.PageView(*view_state)))


@callback(
    *_view_outputs(True),
    Input(BG_SWITCH, "value"), Input(GALLERY_PAGES, "active_page"), Input(TABS, "active_tab"),
    State(RUN, "data"), State(CLASS_PICK, "value"), *VIEW_STATE[2:],
    prevent_initial_call=True,
)
def on_view(show_background, page, tab, run_id, class_value, *view_state):
    """Background on/off, gallery paging and tab switches: nothing is written."""
    view = logic.PageView(show_background, page, view_state[0], tab, *view_state[2:])
    return _render(run_id, class_value, view, background_changed=ctx.triggered_id == BG_SWITCH,
                   tab_changed=ctx.triggered_id == TABS)


def _render(run_id, class_value, view: logic.PageView, state=None, background_changed: bool = False,
            tab_changed: bool = False, figure_current: bool = False) -> tuple:
    """Repaint what changed: Patch colours/symbols on edits; trace 1 on class switch.

    The summary and the gallery are only rendered while their tab is open.
    ``figure_current``: the browser already drew these markers (assets/recluster.js).
    """
    root = settings().runs_root
    data = run_data(root, run_id)
    state = state or current_state(data)
    code = _code(class_value)
    d = state.decisions
    shown = view.shown

    def trace() -> dict:
        return cached_figure(data, state, ("class", code), lambda: class_trace(
            data.embedding, data.members[code], d, state.marks))

    if tab_changed or figure_current:
        fig = no_update
    elif code is None:
        fig = cached_figure(data, state, ("overview",), lambda: overview_figure(
            data.embedding, data.samples.labels, data.samples.classes, d))
    elif shown in (None, "all"):
        fig = class_figure(data.embedding, trace(), f"/background/{run_id}.png",
                           bool(view.show_background))
    else:
        fig = Patch()
        if shown != code:
            fig["data"][1] = trace()
        else:
            marker = trace()["marker"]
            for key in ("color", "symbol", "size"):
                fig["data"][1]["marker"][key] = marker[key]
        if background_changed:  # a layout change costs a full relayout: only when asked
            fig["layout"]["images"][0]["visible"] = bool(view.show_background)
    rows = logic.class_counts(data, state)
    options = [{"label": _class_label("All classes", rows[-1]), "value": "all"}] + [
        {"label": _class_label(r["class"], r), "value": c} for c, r in enumerate(rows[:-1])]
    summary = _summary_table(rows) if view.tab == "summary" else no_update
    gallery, pages = (_gallery(data, state, code, view.page, run_id)
                      if view.tab == "gallery" else (no_update, no_update))
    store = logic.store_for(root, run_id)
    noise = logic.noise_per_class(data, state)
    model = None if code is None else logic.client_model(data, state, code, rows, noise)
    return (fig, _changed("all" if code is None else code, shown), options, summary, gallery,
            _changed(pages, view.pages), _changed(not store.can_undo(), view.undo_disabled),
            _changed(not store.can_redo(), view.redo_disabled),
            logic.status_text(rows, noise, state.rule), model)


def _class_label(name: str, r: dict) -> html.Span:
    return html.Span([
        html.Span(name, className="fw-semibold me-1"),
        html.Span(f"{r['size']} · {r['flagged']} · {r['overridden']} · {r['kept']}",
                  className="float-end small counts"),
    ])


def _summary_table(rows: list[dict]) -> dbc.Table:
    head = html.Thead(html.Tr([html.Th(h) for h in
                               ("class", "size", "flagged", "overridden", "kept", "reduction")]))
    body = html.Tbody([html.Tr([html.Td(r["class"]), html.Td(r["size"]), html.Td(r["flagged"]),
                                html.Td(r["overridden"]), html.Td(r["kept"]),
                                html.Td(f"{r['reduction_pct']:.2f}%")],
                               className="fw-semibold" if r["class"] == "total" else None)
                       for r in rows])
    return dbc.Table([head, body], size="sm", striped=True, hover=True, class_name="w-auto")


def _gallery(data, state, code, page, run_id) -> tuple[str, int]:
    """The noise gallery as one HTML string for a dcc.Markdown, and its page count.

    Void tags must be self-closed (``<img/>``): Dash's Markdown drops the whole block
    otherwise. One component instead of ~100: every Dash component on the page re-runs its store
    selector on each of the renderer's dispatches, and as components the gallery cost the
    eps change more than Plotly's repaint did. Its buttons are clicked through one
    delegated listener (assets/gallery.js) that writes the sample into GALLERY_CLICK.
    """
    def note(text: str) -> str:
        return f'<div class="text-muted small mt-2">{escape(text)}</div>'

    if code is None:
        return note("Pick a class to review its flagged points."), 1
    items, pages = logic.gallery_items(data, state, code, page or 1)
    if not items:
        return note("Nothing flagged in this class at these parameters."), pages
    run = quote(run_id, safe="")
    counts = logic.review_counts(data, state, code)
    head = (f'<div class="small mb-1 gallery-counts">{counts["flagged"]} flagged · '
            f'{counts["decided"]} decided by you · <b>{counts["left"]} left to review</b> · '
            "most likely wrong first</div>"
            '<div class="small text-muted mb-1 gallery-keys">keys: <kbd>j</kbd>/<kbd>k</kbd> '
            'next/previous · <kbd>a</kbd> keep · <kbd>d</kbd> drop · <kbd>r</kbd> relabel to '
            'the suggestion · <kbd>u</kbd> undo</div>')
    cards = "".join(
        f'<div class="gallery-item"><img src="/thumb/{run}/{it["index"]}.png" class="thumb" '
        f'title="{escape(it["path"])}" alt="sample {it["index"]}"/>'
        f'<div class="small text-muted"><span style="color:{REASON_MARKS[it["reason"]][1]}">'
        f'{REASON_MARKS[it["reason"]][0]}</span> #{it["index"]}{it["evidence"]}</div>'
        f'<div class="small gallery-why">{escape(it["why"])}</div>'
        f'<button type="button" data-sample="{it["index"]}" '
        f'class="btn btn-sm w-100 gallery-toggle btn-{"success" if it["kept"] else "danger"}" '
        f'title="{escape(it["reason"])} · click to toggle">'
        f'{"kept" if it["kept"] else "dropped"}</button>'
        + (f'<button type="button" data-sample="{it["index"]}" '
           f'data-label="{escape(it["suggested"])}" '
           f'class="btn btn-sm btn-outline-primary w-100 mt-1 gallery-relabel" '
           f'title="keep it, with the label {escape(it["suggested"])}">'
           f'relabel → {escape(it["suggested"])}</button>' if it["suggested"] else "")
        + '</div>'
        for it in items)
    return f'{head}<div class="gallery">{cards}</div>', pages


@callback(
    Output(TOOLTIP, "show"), Output(TOOLTIP, "bbox"), Output(TOOLTIP, "children"),
    Input(GRAPH, "hoverData"), State(RUN, "data"),
    prevent_initial_call=True,
)
def on_hover(hover, run_id):
    """Tooltip with the image, its facts, and its 5 nearest neighbours' labels."""
    if not hover or not hover.get("points"):
        return False, no_update, no_update
    point = hover["points"][0]
    if point.get("customdata") is None:
        return False, no_update, no_update
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
    return True, point["bbox"], html.Div(lines, className="hover-card")
