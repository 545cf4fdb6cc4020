"""What every request passes before a route or Dash sees it, and what every response carries.

- Its ``Host`` must be a loopback name, the bound address or one of
  ``CURATOR_ALLOWED_HOSTS``, so a web page cannot reach the server by DNS rebinding.
- Its body may not exceed ``CURATOR_MAX_BODY_BYTES``.
- With ``CURATOR_AUTH_TOKEN`` set, or a live token made by ``curator token add`` in the
  runs root (worker/people.py), it must carry a token: as ``?token=`` once (it is then
  kept in an HTTP-only cookie), or as an ``Authorization: Bearer`` header. The token names
  the person (``flask.g.person``: their role, checked by app/access.py, and the name their
  decisions are signed with) and never reaches the access log.
- A callback request whose JSON is not the shape Dash sends is a 400; a run page for a run
  id that names no folder inside the runs root is a 404.
- Responses carry a Content-Security-Policy (flask-talisman) that lets no markup from user
  text run script.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re

import dash
from flask import Flask, Response, current_app, g, request

from app.app_context import settings
from app.responses import text_response
from worker.people import Person, person_for, tokens_required
from worker.pipeline.errors import InputError
from worker.pipeline.storage.author import os_user, set_author
from worker.run_catalog import resolve_run
from worker.settings import Settings

# The Curate page's test and benchmark hooks (window.curateDebug): on the page, and served,
# only with the debug_hooks setting (CURATOR_DEBUG_HOOKS=1, or `curator serve --debug`).
DEBUG_SCRIPT = "curate_debug.js"
TOKEN_COOKIE = "curator_token"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DASH_UPDATE = "/_dash-update-component"
RUN_PAGES = ("curate", "results")
MAX_JSON_DEPTH = 64  # Dash's payloads nest a dozen levels; a figure in State a few more


def host_allowed(host_header: str, config: Settings) -> bool:
    """Whether ``host_header`` (``name[:port]``) names this server."""
    name = host_header.strip().lower()
    if name.startswith("["):  # [::1]:8050
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    allowed = {*LOOPBACK_HOSTS, *config.allowed_hosts}
    if config.host not in ("0.0.0.0", "::", ""):
        allowed.add(config.host.lower())
    return bool(name) and name in allowed


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _callback_body() -> object | None:
    """The callback request's JSON, or None when it is not strict JSON (NaN and Infinity
    are not JSON; Dash would store them as numbers) or nests deeper than MAX_JSON_DEPTH
    (a 100,000-deep body was a RecursionError, a 500)."""
    try:
        body = json.loads(request.get_data(cache=True), parse_constant=_reject_constant)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    stack = [(body, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return None
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return body


def _callback_shape_ok(body: object) -> bool:
    """The outline of what Dash's renderer posts to ``/_dash-update-component``."""
    if not isinstance(body, dict) or not isinstance(body.get("output"), str):
        return False
    for key in ("inputs", "changedPropIds"):
        if not isinstance(body.get(key), list):
            return False
    return isinstance(body.get("state", []), list)


def guard() -> Response | None:
    """Host, body size, token and callback shape, before any route runs: the refusal, or
    None to let the request through."""
    config = settings()
    if not host_allowed(request.host or "", config):
        return text_response(403, "this server answers only to its own host names "
                                  "(set CURATOR_ALLOWED_HOSTS to add one)")
    if (request.content_length or 0) > config.max_body_bytes:
        return text_response(413, f"request body over {config.max_body_bytes} bytes")
    who = request_person(config)
    if not isinstance(who, Person):
        return who  # the 401
    # Who this request is (app/access.py checks the role) and the name its decisions are
    # signed with (worker/pipeline/storage/author.py).
    g.person = who
    set_author(who.name, by_token=tokens_required(config.runs_root, config.auth_token))
    if (not config.debug_hooks and request.path.startswith("/assets/")
            and posixpath.basename(request.path) == DEBUG_SCRIPT):
        return text_response(404, "no such file")
    if request.path == DASH_UPDATE and request.method == "POST":
        if not _callback_shape_ok(_callback_body()):
            return text_response(400, "malformed callback request (not strict JSON of "
                                      "Dash's shape)")
    page, _, run_id = request.path.lstrip("/").partition("/")
    if page in RUN_PAGES and run_id:
        try:  # an over-long or odd run id is no page at all; a missing run says so in-page
            resolve_run(config.runs_root, run_id)
        except InputError:
            return text_response(404, "no such run")
    return None


def request_person(config: Settings) -> Person | Response:
    """Who the request is (worker/people.py), or the 401 for one without a valid token. A
    server with neither CURATOR_AUTH_TOKEN nor a token file in the runs root is its OS
    user's own, as admin; ``/healthz`` needs no one. A damaged token file lets no one in
    (a 503; the server's log names the file)."""
    if request.path == "/healthz":
        return Person(os_user(), "admin")
    given = (request.args.get("token") or request.cookies.get(TOKEN_COOKIE)
             or request.headers.get("Authorization", "").removeprefix("Bearer ").strip())
    try:
        if not tokens_required(config.runs_root, config.auth_token):
            return Person(os_user(), "admin")
        person = person_for(config.runs_root, given, config.auth_token)
    except InputError as exc:
        current_app.logger.error("%s", exc)
        return text_response(503, "this tsne-curator cannot read its access tokens: the "
                                  "server's log says why")
    if person is not None:
        return person
    return text_response(401, "this tsne-curator needs an access token (open the URL with "
                              "?token=...; 'curator token add NAME --role ROLE' makes one)")


def check_token_setting(token: str) -> None:
    """Refuse a token that cannot travel in a URL and a cookie unchanged."""
    if token and not (token.isascii() and token.isprintable() and " " not in token):
        raise InputError("CURATOR_AUTH_TOKEN must be printable ASCII without spaces")


class RedactToken(logging.Filter):
    """Keep ``token=...`` out of the access log (werkzeug logs every request line)."""

    PATTERN = re.compile(r"(token=)[^&\s\"]+")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.args = tuple(self.PATTERN.sub(r"\1***", a) if isinstance(a, str) else a
                                for a in record.args)
        record.msg = self.PATTERN.sub(r"\1***", str(record.msg))
        return True


def remember_token(response: Response) -> Response:
    """Keep a ``?token=`` that was let in as an HTTP-only cookie, for the page's requests."""
    token = request.args.get("token")
    if token and response.status_code < 400:
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
    return response


def protect(server: Flask, config: Settings) -> None:
    """Check every request of ``server`` (:func:`guard`), keep a given token in a cookie
    and out of the access log. Refuses a token setting that cannot work."""
    check_token_setting(config.auth_token)
    server.before_request(guard)
    server.after_request(remember_token)
    logging.getLogger("werkzeug").addFilter(RedactToken())


def content_security_policy(app: dash.Dash) -> dict:
    """The page's Content-Security-Policy: scripts only from this server plus the hashes of
    Dash's own inline scripts (``app.csp_hashes()``), so markup that reaches the page from
    user text (a class name, a path) cannot run script, inline or in an event handler.

    ``'unsafe-eval'`` stays because Plotly's WebGL traces (the class maps are scattergl)
    compile their shaders' glue with ``new Function``; it lets no injected markup run.
    Styles may be inline: React and Plotly set them, and a style runs no script.
    """
    return {
        "default-src": "'self'",
        "script-src": ["'self'", "'unsafe-eval'", *app.csp_hashes()],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "connect-src": "'self'",
        "font-src": ["'self'", "data:"],
        "object-src": "'none'",
        "frame-src": "'none'",
        "base-uri": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }


def secure_headers(app: dash.Dash) -> None:
    """CSP and the other browser-side protections, by flask-talisman. HTTPS is the
    deployment's business (the app binds to 127.0.0.1), so it neither redirects nor sets
    HSTS. Call it after the layout and every callback: the hashes cover them."""
    from flask_talisman import Talisman

    talisman = Talisman(app.server, force_https=False, strict_transport_security=False,
                        session_cookie_secure=False, frame_options="DENY",
                        referrer_policy="no-referrer",
                        content_security_policy=content_security_policy(app))

    hashed = []

    @app.server.before_request
    def _hash_late_scripts() -> None:
        # Dash adds inline scripts (the pages' clientside glue) in its first-request setup,
        # after create_app and before this: hash them once then (not on every callback).
        # Talisman reads its policy on every response.
        if not hashed:
            talisman.content_security_policy["script-src"] = \
                content_security_policy(app)["script-src"]
            hashed.append(True)
