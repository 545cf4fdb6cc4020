"""The map's hover card: the hovered sample's image beside its point the moment it is
hovered, then its facts from the server.

Its script (assets/hover.js, namespace ``hover``) opens, places and closes the card and
loads the image on Plotly's own hover events, without a Dash round; :func:`on_hover`
fills in the facts, and the script's ``clear`` empties the last point's meanwhile.
"""

from __future__ import annotations

from urllib.parse import quote

import numpy as np
from dash import ClientsideFunction, Input, Output, State, callback, clientside_callback, html
from dash.exceptions import PreventUpdate

from app import ids
from app.app_context import settings
from app.curate import RUN, Page, page_actions
from app.run_data import current_state, run_data

PART = "hover_card"
SLOT = "map"
BOX = ids.HOVER_BOX  # opened, placed and given its image by assets/hover.js
TEXT = "curate-hover-text"  # the facts: from the server


def layout(page: Page) -> html.Div:
    """The card, closed; its thumbnails are under ``/thumb/<run_id>/``."""
    return html.Div(html.Div([html.Img(className="hover-img", alt=""), html.Div(id=TEXT)],
                             className="hover-card"),
                    id=BOX, className="hover-box", role="tooltip",
                    **{"data-thumbs": f"/thumb/{quote(page.run_id, safe='/')}/"})


def register() -> None:
    """The card's callbacks, for the page module to call as Dash imports it (Dash runs a
    page module again for every app it builds; a module imported once would register
    them for the first app only)."""
    clientside_callback(
        ClientsideFunction(namespace="hover", function_name="clear"),
        Output(TEXT, "children", allow_duplicate=True), Input(ids.GRAPH, "hoverData"),
        prevent_initial_call=True,
    )
    callback(Output(TEXT, "children"), Input(ids.GRAPH, "hoverData"), State(RUN, "data"),
             prevent_initial_call=True)(on_hover)


def on_hover(hover, run_id):
    """The card's facts: the sample, its state and why, its 5 nearest neighbours' labels,
    its mislabel score and suggestion (and the true label where known)."""
    sample = hovered(hover)
    if sample is None:
        raise PreventUpdate
    data = run_data(settings().runs_root, run_id)
    info = page_actions.hover_info(data, current_state(data), sample)
    state = "kept" if info["kept"] else "dropped"
    lines = [
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
    if info["decided"]:
        lines.append(html.Div(info["decided"], className="small text-muted hover-decided"))
    lines.append(html.Div([html.Kbd("s"), " more like this"], className="small text-muted"))
    return html.Div(lines, className="hover-facts")


def hovered(hover) -> int | None:
    """The sample under the pointer in Plotly's ``hoverData``, or None (the background)."""
    points = (hover or {}).get("points") if isinstance(hover, dict) else None
    if not points or not isinstance(points, list) or not isinstance(points[0], dict):
        return None
    custom = points[0].get("customdata")
    return None if custom is None else int(np.ravel(custom)[0])
