"""What the pages' scripts fetch from the server besides Dash's callbacks: ``/ids.js``
(the component ids and the key actions, before assets/*.js) and
``/map/<run>/<class>.json`` (a class's trace, which the Curate page's map fetches ahead:
assets/class_map.js)."""

from __future__ import annotations

import orjson
from flask import Response, request

from app import ids
from app.curate import key_actions
from app.curate.class_map import TRACES, class_answer
from app.responses import first_line, subtree_blueprint, text_response
from worker.pipeline.errors import InputError

scripts = subtree_blueprint("scripts", __name__, TRACES)


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
