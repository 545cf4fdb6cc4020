"""The parameters: the shown class's eps and min_samples (sliders and boxes), Auto eps,
Apply to all classes, and what the rule makes of the class with its cut's buttons.

The map's script (assets/class_map.js) previews a moved or typed value in the browser
and publishes it as the map's draft; :func:`on_params` stores the draft. The controls
show the stored values through this component's part of the render path.
"""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import Input, Output, State, callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from app import ids
from app.app_context import settings
from app.curate import CLASS_PICK, RUN, SHOWN, SHOWN_REV, Page, changes, code_of, page_actions
from app.curate.render import PageRequest
from app.layout import small_button
from app.run_data import current_state, run_data

PART = "params"
SLOT = "side"
EPS_SLIDER = ids.EPS_SLIDER
EPS_INPUT = ids.EPS_INPUT
MS_SLIDER = ids.MS_SLIDER
MS_INPUT = ids.MS_INPUT
AUTO = "curate-auto"
APPLY_ALL = "curate-apply-all"
RULE_INFO = "curate-rule-info"  # what the rule makes of the shown class, in words
CUT_ROW = "curate-cut"  # the per-class cut's buttons (hidden where the rule has no ranking)
CUT_MORE = "curate-cut-more"
CUT_FEWER = "curate-cut-fewer"
CUT_RESET = "curate-cut-reset"


def layout(_page: Page) -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        changes.store(PART),
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
            dbc.Button("Auto eps", id=AUTO, color="secondary", outline=True, size="sm"),
            dbc.Button("Apply to all classes", id=APPLY_ALL, color="secondary",
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


# ------------------------------------------------------------------------ render part
CONTROLS = {"eps": (EPS_SLIDER, "value"), "eps_box": (EPS_INPUT, "value"),
            "eps_max": (EPS_SLIDER, "max"), "ms": (MS_SLIDER, "value"),
            "ms_box": (MS_INPUT, "value")}
OUTPUTS = {**{k: Output(c, p) for k, (c, p) in CONTROLS.items()},
           "eps_step": Output(EPS_SLIDER, "step")}
STATES = {k: State(c, p) for k, (c, p) in CONTROLS.items()}


def render(view: PageRequest, shows: dict) -> dict:
    """The controls at the class's stored values: only those that show something else
    (``shows``) change, and the slider's range only on a class switch or when the stored
    eps lies past it (not under the user's hand)."""
    if view.code is None:
        return dict.fromkeys(OUTPUTS, no_update)
    v = page_actions.control_values(view.data, view.state, view.code)
    update = page_actions.control_updates(v, shows, rescale=view.switched)
    return {k: update.get(k, no_update) for k in OUTPUTS}


# ---------------------------------------------------------------------------- callbacks
def register() -> None:
    """The parameters' callbacks, for the page module to call as Dash imports it."""
    callback(changes.output(PART), Input(ids.DRAFT, "data"), State(RUN, "data"),
             prevent_initial_call=True)(on_params)
    callback(changes.output(PART), Input(AUTO, "n_clicks"), State(CLASS_PICK, "data"),
             State(MS_INPUT, "value"), State(RUN, "data"),
             prevent_initial_call=True)(on_auto_eps)
    callback(changes.output(PART), Input(APPLY_ALL, "n_clicks"), State(CLASS_PICK, "data"),
             State(EPS_INPUT, "value"), State(MS_INPUT, "value"), State(RUN, "data"),
             # Re-clustering 1,000 classes takes seconds: say so on the button meanwhile.
             running=[(Output(APPLY_ALL, "disabled"), True, False),
                      (Output(APPLY_ALL, "children"), "Re-clustering every class…",
                       "Apply to all classes")],
             prevent_initial_call=True)(on_apply_all)
    callback(changes.output(PART), Input(CUT_MORE, "n_clicks"), Input(CUT_FEWER, "n_clicks"),
             Input(CUT_RESET, "n_clicks"), State(CLASS_PICK, "data"), State(RUN, "data"),
             prevent_initial_call=True)(on_cut)
    callback(Output(RULE_INFO, "children"), Output(CUT_ROW, "hidden"),
             Input(SHOWN, "data"), Input(SHOWN_REV, "data"), State(RUN, "data"),
             prevent_initial_call=True)(on_rule_facts)


def on_params(draft, run_id):
    """Store the map's draft: the eps and min_samples the browser drew for its class
    (``{class, eps, min_samples, base_revision, painted, typed}``). A typed eps within
    the boxes' precision of the stored one is no change."""
    if not draft or draft.get("class") is None:
        raise PreventUpdate
    return changes.apply(run_id, lambda root: page_actions.set_params(
        root, run_id, draft["class"], draft.get("eps"), draft.get("min_samples"),
        tolerance=page_actions.TYPED_TOLERANCE if draft.get("typed") else 0.0))


def on_auto_eps(_clicks, class_value, ms, run_id):
    """Set the class's eps from its k-distance knee at the shown min_samples."""
    code = code_of(class_value)
    if code is None:
        raise PreventUpdate
    return changes.apply(run_id, lambda root: page_actions.auto_eps_for(root, run_id, code, ms))


def on_apply_all(_clicks, class_value, eps, ms, run_id):
    """Store the shown eps and min_samples for every class."""
    return changes.apply(run_id, lambda root: page_actions.set_params(
        root, run_id, code_of(class_value), eps, ms, all_classes=True))


def on_cut(_more, _fewer, _reset, class_value, run_id):
    """Flag more or fewer in the shown class (its cut along the score ranking), or put the
    cut back where the rule put it: one undoable step."""
    direction = {CUT_MORE: 1, CUT_FEWER: -1, CUT_RESET: 0}[ctx.triggered_id]
    return changes.apply(run_id, lambda root: page_actions.move_cut(
        root, run_id, code_of(class_value), direction))


def on_rule_facts(shown, _revision, run_id):
    """What the rule makes of the shown class, in words, whenever the class or the store
    changes: after the map's answer, so a class switch repaints without waiting for it."""
    code = code_of(shown)
    if code is None:
        return html.P("Pick a class to see what the rule makes of it.", className="mb-1"), True
    data = run_data(settings().runs_root, run_id)
    facts = page_actions.rule_facts(data, current_state(data), code)
    return [html.P(line, className="mb-1") for line in facts.sentences()], not facts.can_cut
