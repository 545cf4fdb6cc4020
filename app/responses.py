"""What the app's own routes answer with: one-line plain-text statuses, PNGs, and a
Blueprint that owns a whole URL subtree.

A route family (``/thumb/…``, ``/download/…``) answers everything under its prefix, so a
malformed path is a 404 there rather than falling through to the Dash page shell, and a
run file that cannot be read (an :class:`InputError`) is a 404 with its one line, not a
server error.
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, request

from worker.pipeline.errors import InputError

LINE_LIMIT = 300  # characters of an error's first line that a response shows


def text_response(status: int, message: str) -> Response:
    """``STATUS: message`` as plain text."""
    return Response(f"{status}: {message}\n", status=status, mimetype="text/plain")


def first_line(exc: Exception, limit: int = LINE_LIMIT) -> str:
    """The first line of ``exc``'s message, at most ``limit`` characters ('' for none)."""
    text = str(exc)
    return text.splitlines()[0][:limit] if text else ""


def png_response(png: bytes, max_age: int) -> Response:
    """PNG bytes the browser may keep for ``max_age`` seconds."""
    resp = Response(png, mimetype="image/png")
    resp.headers["Cache-Control"] = f"private, max-age={max_age}"
    return resp


def run_file_error(exc: InputError) -> Response:
    """A damaged run file behind an image or download: the run's fault, named in one line
    (the Curate page says the same), not a server error."""
    current_app.logger.warning("%s: %s", request.path, exc)
    return text_response(404, first_line(exc))


def _not_found(rest: str = "") -> Response:
    abort(404)


def subtree_blueprint(name: str, import_name: str, *prefixes: str) -> Blueprint:
    """A Blueprint that answers every path under ``prefixes`` (e.g. ``/thumb``): its own
    routes where they match, else 404 (``subtree``: app/url_converters.py); a run file
    it cannot read is a 404 with its line."""
    bp = Blueprint(name, import_name)
    for prefix in prefixes:
        endpoint = f"no_such{prefix.replace('/', '_')}"
        bp.add_url_rule(prefix, endpoint, _not_found)
        bp.add_url_rule(f"{prefix}/<subtree:rest>", endpoint, _not_found)
    bp.register_error_handler(InputError, run_file_error)
    return bp
