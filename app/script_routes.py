"""What the pages' scripts fetch from the server besides Dash's callbacks: ``/ids.js``
(the component ids and the key actions, before assets/*.js),
``/map/<run>/<class>.json`` (a class's trace, which the Curate page's map fetches ahead:
assets/class_map.js) and ``/similar/<run>/<sample>.json`` (the s key's "similar to"
listing: assets/review.js)."""

from __future__ import annotations

import orjson
from dash import no_update
from flask import Response, request
from plotly.io.json import to_json_plotly

from app import ids
from app.app_context import settings
from app.curate import key_actions, review_list, similar_panel
from app.curate.class_map import TRACES, class_answer
from app.responses import first_line, subtree_blueprint, text_response
from app.run_data import run_data
from worker.pipeline.errors import InputError

scripts = subtree_blueprint("scripts", __name__, TRACES, similar_panel.ROUTE)


@scripts.get("/ids.js")
def client_ids() -> Response:
    # What assets/*.js read: the ids (app/ids.py) and the key actions' table
    # (app/curate/key_actions.py).
    return Response(ids.script() + key_actions.script(), mimetype="text/javascript")


# The run id stays a string here: class_answer resolves it and says in its line (which
# the page shows) what is wrong with a run or class.
@scripts.get(f"{TRACES}/<path:run_id>/<code>.json")
def map_trace(run_id: str, code: str) -> Response:
    try:
        answer = class_answer(run_id, code, request.args.get("have"))
    except InputError as exc:  # no such run or class, or a damaged run file
        return text_response(404, first_line(exc))
    if answer is None:  # the browser holds this revision already
        return Response(status=204)
    resp = Response(orjson.dumps(answer), mimetype="application/json")
    resp.headers["Cache-Control"] = "no-store"  # the store's revision decides
    return resp


@scripts.get(f"{similar_panel.ROUTE}/<path:run_id>/<int:sample>.json")
def similar_json(run_id: str, sample: int) -> Response:
    """The s key's answer: ``{"rows": the grid's rows or null, "props": [[id, {prop:
    value}], …]}``, the values the review list's callbacks would write
    (``review_list.listing_out``); ``?k=`` how many, ``?listing=1`` while a listing is
    shown (its filter buttons are gone already). A refused ask (a sample the run does
    not have, a bad k) writes only its line."""
    listing = request.args.get("listing") == "1"
    grid = {"held": {"similar": "shown"} if listing else {}, "shown": None, "filters": {}}
    try:
        run_data(settings().runs_root, run_id)  # the run itself, else 404 with its line
        panel = similar_panel.answer(similar_panel.ASK, {"sample": sample}, None,
                                     request.args.get("k"), run_id)
        values = review_list.listing_out(panel, run_id, grid)
    except InputError as exc:  # no such run, or a damaged run file
        return text_response(404, first_line(exc))
    props: dict[str, dict] = {}  # one set_props per component: each is a renderer pass
    for key, (cid, prop) in review_list.LISTING_PROPS.items():
        if values.get(key, no_update) is not no_update:
            props.setdefault(cid, {})[prop] = values[key]
    rows = values.get("rows", no_update)
    resp = Response(to_json_plotly({"rows": None if rows is no_update else rows,
                                    "props": list(props.items())}),
                    mimetype="application/json")
    resp.headers["Cache-Control"] = "no-store"  # the store's revision decides
    return resp
