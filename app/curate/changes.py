"""The Curate page's change channel: how a component tells the page it changed the store.

A component whose callback changes the store (a parameter, an override, a relabel, an undo)
writes only its own change store, ``{"type": CHANGE, "part": <component>}``, with the
store's new revision and the refusal's line, if any (:func:`apply`). The render path
follows every component's change store (:data:`CHANGES`, one pattern-matching input), and
one clientside callback (:func:`register`) shows the refusal in the page's alert line: no
component writes another's outputs, and no hop lies between a change and its repaint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, clientside_callback, dcc, html

from app.access import require
from app.app_context import settings
from app.curate import ALERT, page_actions
from worker.pipeline.errors import InputError

CHANGE = "curate-change"  # pattern-matching id type: {"type": CHANGE, "part": <component>}
ALERT_LINE = "curate-alert-line"  # the alert itself, inside ALERT
CHANGES = {"type": CHANGE, "part": ALL}  # every component's change store, as one input


def fired(prop_ids: dict) -> bool:
    """Whether a change store is among a callback's triggers (``ctx.triggered_prop_ids``)."""
    return any(isinstance(i, dict) and i.get("type") == CHANGE for i in prop_ids.values())


def store(part: str) -> dcc.Store:
    """Component ``part``'s change store, for its layout."""
    return dcc.Store(id={"type": CHANGE, "part": part})


def output(part: str) -> Output:
    """Component ``part``'s change store as a callback's output (several of a component's
    callbacks may write it)."""
    return Output({"type": CHANGE, "part": part}, "data", allow_duplicate=True)


def apply(run_id: str, change: Callable[[Path], object]) -> dict:
    """Run ``change(root)`` (a store change) and say what it did.

    Returns
    -------
    the change record: the store's ``rev`` after it, the InputError's line (``alert``,
    None when it was made) and when (``at``, ms): written even when nothing changed, so a
    refused value puts the controls back
    """
    root = settings().runs_root
    try:
        require("decide")  # a viewer's change is refused before anything is written
        change(root)
        alert = None
    except InputError as exc:
        alert = str(exc)
    return {"rev": page_actions.store_for(root, run_id).revision(), "alert": alert,
            "at": time.time() * 1000}


def layout() -> html.Div:
    """The page's alert line (closed until a change is refused)."""
    return html.Div(dbc.Alert(id=ALERT_LINE, color="danger", dismissable=True, is_open=False,
                              class_name="py-2 my-2"), id=ALERT)


# The change that fired → the alert line: its refusal, or closed.
_ALERT = """
function (records) {
    const dc = window.dash_clientside, fired = dc.callback_context.triggered_id;
    const k = dc.callback_context.inputs_list[0].findIndex(
        (i) => fired && i.id.part === fired.part);
    const record = k < 0 ? null : records[k];
    if (!record) throw dc.PreventUpdate;
    return [record.alert || "", Boolean(record.alert)];
}
"""


def register() -> None:
    """The alert's callback, for the page module to call as Dash imports it."""
    clientside_callback(
        _ALERT, Output(ALERT_LINE, "children"), Output(ALERT_LINE, "is_open"),
        Input(CHANGES, "data"), prevent_initial_call=True,
    )
