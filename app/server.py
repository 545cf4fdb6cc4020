"""The Dash app factory, its Flask routes (thumbnails, downloads, health) and auth.

``curator serve`` calls :func:`serve`: the app on waitress, a production WSGI server
(Flask's development server only with ``--debug``). ``app.wsgi:application`` is the same
app for another WSGI server. It binds to 127.0.0.1 unless told otherwise.
With ``CURATOR_AUTH_TOKEN`` set, every route needs the token: as ``?token=`` once (it is
then kept in an HTTP-only cookie), or as an ``Authorization: Bearer`` header.

Every request is checked before Dash sees it: its ``Host`` must be a loopback name, the
bound address or one of ``CURATOR_ALLOWED_HOSTS`` (so a web page cannot reach the server
by DNS rebinding), its body may not exceed ``CURATOR_MAX_BODY_BYTES``, and a callback
request whose JSON is not the shape Dash sends is a 400, as is any callback that fails on
the values it was sent. The token never reaches the access log.
"""

from __future__ import annotations

import dataclasses
import functools
import hmac
import io
import json
import logging
import posixpath
import re
from pathlib import Path

import dash
import numpy as np
import orjson
from dash import Input, Output, set_props
from dash.exceptions import DashException
from flask import Flask, Response, abort, current_app, request, send_file
from PIL import Image
from werkzeug.exceptions import HTTPException

from app import caching, ids
from app.app_context import settings
from app.caching import files
from app.curate import key_actions
from app.curate.backdrop import render_png
from app.curate.map_view import TRACES, class_answer
from app.ids import PAGE_ERROR
from app.layout import shell
from worker.jobs.dispatchers import get_dispatcher
from worker.pipeline.errors import InputError
from worker.pipeline.sources.ingest import MAX_THUMB, open_run_dataset, thumbnail
from worker.pipeline.storage.rundir import RunDir, load_npy
from worker.run_catalog import resolve_run
from worker.settings import Settings, load_settings

ASSETS = Path(__file__).resolve().parents[1] / "assets"
# The Curate page's test and benchmark hooks (window.curateDebug): on the page, and served,
# only with the debug_hooks setting (CURATOR_DEBUG_HOOKS=1, or `curator serve --debug`).
DEBUG_SCRIPT = "curate_debug.js"
TOKEN_COOKIE = "curator_token"


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DASH_UPDATE = "/_dash-update-component"
FILE_ROUTES = ("/thumb/", "/testthumb/", "/background/", "/download/")
RUN_PAGES = ("curate", "results")


def _text(status: int, message: str) -> Response:
    return Response(f"{status}: {message}\n", status=status, mimetype="text/plain")


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


MAX_JSON_DEPTH = 64  # Dash's payloads nest a dozen levels; a figure in State a few more


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


def _guard(app: Flask) -> Response | None:
    """Host, body size, token and callback shape, before any route runs."""
    config: Settings = app.config["CURATOR_SETTINGS"]
    if not host_allowed(request.host or "", config):
        return _text(403, "this server answers only to its own host names "
                          "(set CURATOR_ALLOWED_HOSTS to add one)")
    if (request.content_length or 0) > config.max_body_bytes:
        return _text(413, f"request body over {config.max_body_bytes} bytes")
    denied = _check_token(config.auth_token)
    if denied is not None:
        return denied
    if (not config.debug_hooks and request.path.startswith("/assets/")
            and posixpath.basename(request.path) == DEBUG_SCRIPT):
        return _text(404, "no such file")
    if request.path == DASH_UPDATE and request.method == "POST":
        if not _callback_shape_ok(_callback_body()):
            return _text(400, "malformed callback request (not strict JSON of Dash's shape)")
    page, _, run_id = request.path.lstrip("/").partition("/")
    if page in RUN_PAGES and run_id:
        try:  # an over-long or odd run id is no page at all; a missing run says so in-page
            resolve_run(config.runs_root, run_id)
        except InputError:
            return _text(404, "no such run")
    return None


def _check_token(token: str) -> Response | None:
    if not token or request.path == "/healthz":
        return None
    given = (request.args.get("token") or request.cookies.get(TOKEN_COOKIE)
             or request.headers.get("Authorization", "").removeprefix("Bearer ").strip())
    # Compare bytes: compare_digest refuses str with non-ASCII characters (a 500 before).
    if given and hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode()):
        return None
    return _text(401, "this tsne-curator needs its access token (open the URL with ?token=...)")


def check_token_setting(token: str) -> None:
    """Refuse a token that cannot travel in a URL and a cookie unchanged."""
    if token and not (token.isascii() and token.isprintable() and " " not in token):
        raise InputError("CURATOR_AUTH_TOKEN must be printable ASCII without spaces")


class _RedactToken(logging.Filter):
    """Keep ``token=...`` out of the access log (werkzeug logs every request line)."""

    PATTERN = re.compile(r"(token=)[^&\s\"]+")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.args = tuple(self.PATTERN.sub(r"\1***", a) if isinstance(a, str) else a
                                for a in record.args)
        record.msg = self.PATTERN.sub(r"\1***", str(record.msg))
        return True


def _on_error(exc: Exception):
    """HTTP errors pass through; a callback that fails on the values it was sent answers
    400 (an :class:`InputError` with its one line, anything else without Python's text);
    a bad component-suite path is a 404; the rest is a logged 500."""
    if isinstance(exc, HTTPException):
        return exc
    if isinstance(exc, InputError) and request.path.startswith(FILE_ROUTES):
        # A damaged run file behind an image or download: the run's fault, named in one
        # line (the Curate page says the same), not a server error.
        current_app.logger.warning("%s: %s", request.path, exc)
        return _text(404, str(exc).splitlines()[0][:300])
    if request.path == DASH_UPDATE and isinstance(
            exc, InputError | DashException | TypeError | KeyError | ValueError | AttributeError
            | IndexError | ArithmeticError):
        first = str(exc).splitlines()[0][:200] if isinstance(exc, InputError) else ""
        return _text(400, first or "callback values of the wrong type or shape")
    if request.path.startswith("/_dash-component-suites/"):
        return _text(404, "no such file")
    current_app.logger.exception("unhandled error on %s", request.path)
    return _text(500, "internal error (logged on the server)")


def _callback_error(exc: Exception) -> None:
    """A callback that fails on its run (an :class:`InputError`: a damaged or missing run
    file) says why in the shell's line (app/layout.py) and changes nothing else; the
    request still succeeds, since Dash's renderer shows nothing for a failed callback
    outside debug mode. Any other failure goes on to :func:`_on_error`."""
    if not isinstance(exc, InputError):
        raise exc
    line = str(exc).splitlines()[0][:300] if str(exc) else "this run cannot be read"
    current_app.logger.warning("%s: %s", request.path, line)
    set_props(PAGE_ERROR, {"children": line, "hidden": False})


def _clear_page_error(_path: str) -> bool:
    """A new page starts without the last page's failure."""
    return True


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


def _secure_headers(app: dash.Dash) -> None:
    """CSP and the other browser-side protections, by flask-talisman. HTTPS is the
    deployment's business (the app binds to 127.0.0.1), so it neither redirects nor sets
    HSTS."""
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


def _remember_token(response: Response) -> Response:
    token = request.args.get("token")
    if token and response.status_code < 400:
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
    return response


@files.memoize(timeout=3600)
def thumbnail_png(run_path: str, index: int, mtime: int, name: str = "thumbnails.npy") -> bytes:
    """PNG bytes of one thumbnail (cached: thumbnails never change for a run); ``name``:
    ``test_thumbnails.npy`` for the test split's images (findings/testsplit.py)."""
    thumbs = load_npy(Path(run_path) / name, "ingest", mmap=True)
    if not 0 <= index < len(thumbs):
        abort(404)
    buf = io.BytesIO()
    Image.fromarray(np.asarray(thumbs[index])).save(buf, format="PNG")
    return buf.getvalue()


@functools.lru_cache(maxsize=4)
def _run_dataset(run_path: str, mtime: int):  # noqa: ANN202 - Dataset
    """The run's dataset (its samples table read once per ``mtime`` of samples.csv)."""
    return open_run_dataset(RunDir(Path(run_path)))


# What a sample without an image shows: a features: run made without image paths.
NO_IMAGE = (200, 200, 200)


@files.memoize(timeout=3600)
def image_png(run_path: str, index: int, mtime: int) -> bytes:
    """PNG bytes of one sample's thumbnail, decoded from its image file: for runs made from
    a features file, which have no thumbnails.npy. The file must lie inside the dataset's
    folder (the features file's); a sample without one gets a plain grey square."""
    ds = _run_dataset(run_path, mtime)
    if not 0 <= index < len(ds.samples):
        abort(404)
    img = Image.new("RGB", (MAX_THUMB, MAX_THUMB), NO_IMAGE)
    path = ds.file_path(index)
    if path is not None and path.resolve().is_relative_to(ds.spec.root.resolve()):
        try:
            img = Image.fromarray(thumbnail(ds.load_image(index), MAX_THUMB))
        except Exception:  # noqa: BLE001 - a missing or corrupt file shows as no image
            current_app.logger.warning("cannot read the image of sample %d of %s", index,
                                       run_path)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


@files.memoize(timeout=3600)
def background_png(run_path: str, mtimes: tuple[int, int]) -> bytes:
    """The class view's backdrop of every point, tinted by class (cached per embedding
    and samples table: ``mtimes`` are theirs)."""
    run = RunDir(Path(run_path))
    samples = run.read_samples()
    return render_png(run.load_embedding(), samples.labels, samples.classes)


def _run_image(subpath: str) -> tuple[RunDir, int]:
    """The run and image index of an image route's ``RUN/INDEX.png`` (404 otherwise)."""
    run_id, _, leaf = subpath.rpartition("/")
    index = leaf.removesuffix(".png")
    if not leaf.endswith(".png") or not index.isdigit():
        abort(404)
    try:
        return resolve_run(settings().runs_root, run_id), int(index)
    except InputError:
        abort(404)


def _png(png: bytes) -> Response:
    resp = Response(png, mimetype="image/png")
    resp.headers["Cache-Control"] = "private, max-age=86400"
    return resp


def _register_routes(server: Flask) -> None:
    @server.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @server.get("/ids.js")
    def client_ids() -> Response:
        # What assets/*.js read: the ids (app/ids.py) and the key actions' table
        # (app/curate/key_actions.py).
        return Response(ids.script() + key_actions.script(), mimetype="text/javascript")

    # Each route owns its whole subtree, so a malformed path is a 404 here rather than
    # falling through to the Dash page shell.
    @server.get("/thumb/<path:subpath>")
    def thumb(subpath: str) -> Response:
        run, index = _run_image(subpath)
        if run.thumbnails.is_file():
            png = thumbnail_png(str(run.path), index, run.thumbnails.stat().st_mtime_ns)
        elif run.exists():  # a features: run: its images, if it has paths, read on demand
            png = image_png(str(run.path), index, run.samples_csv.stat().st_mtime_ns)
        else:
            abort(404)
        return _png(png)

    # The test split's images, for the side-by-side view of a leak (findings/testsplit.py).
    @server.get("/testthumb/<path:subpath>")
    def test_thumb(subpath: str) -> Response:
        run, index = _run_image(subpath)
        path = run.path / "test_thumbnails.npy"
        if not path.is_file():
            abort(404)
        return _png(thumbnail_png(str(run.path), index, path.stat().st_mtime_ns, path.name))

    @server.get("/background/<path:subpath>")
    def background(subpath: str) -> Response:
        run_id = subpath.removesuffix(".png")
        try:
            run = resolve_run(settings().runs_root, run_id)
        except InputError:
            abort(404)
        if not subpath.endswith(".png") or not run.embedding.is_file():
            abort(404)
        png = background_png(str(run.path), (run.embedding.stat().st_mtime_ns,
                                             run.samples_csv.stat().st_mtime_ns))
        resp = Response(png, mimetype="image/png")
        resp.headers["Cache-Control"] = "private, max-age=3600"
        return resp

    @server.get("/download/<path:subpath>")
    def download(subpath: str) -> Response:
        run_id, sep, rest = subpath.partition("/exports/")
        name, _, filename = rest.partition("/")
        if not sep or not name or not filename or "/" in filename:
            abort(404)
        try:
            run = resolve_run(settings().runs_root, run_id)
        except InputError:
            abort(404)
        root = run.exports.resolve()
        target = (root / name / filename).resolve()
        if not target.is_relative_to(root) or not target.is_file() or name.startswith("."):
            abort(404)
        return send_file(target, as_attachment=True, download_name=f"{name}-{filename}")


def _register_map_route(server: Flask) -> None:
    """A class's trace for the Curate page's map, which fetches it ahead
    (app/curate/map_view.py ``class_answer``)."""
    @server.get(f"{TRACES}/<path:subpath>")
    def map_trace(subpath: str) -> Response:

        run_id, _, leaf = subpath.rpartition("/")
        if not leaf.endswith(".json"):
            abort(404)
        try:
            answer = class_answer(run_id, leaf.removesuffix(".json"), request.args.get("have"))
        except InputError as exc:  # no such run or class, or a damaged run file: the
            # page shows the line (assets/mapclass.js)
            return _text(404, str(exc).splitlines()[0][:300])
        if answer is None:  # the browser holds this revision already
            return Response(status=204)
        resp = Response(orjson.dumps(answer), mimetype="application/json")
        resp.headers["Cache-Control"] = "no-store"  # the store's revision decides
        return resp


def create_app(config: Settings | None = None) -> dash.Dash:
    """Build the Dash app for ``config`` (default: from the environment)."""
    config = config or load_settings()
    config.runs_root.mkdir(parents=True, exist_ok=True)
    check_token_setting(config.auth_token)
    server = Flask(__name__)
    server.config.update(CURATOR_SETTINGS=config, CURATOR_DISPATCHER=get_dispatcher(config),
                         MAX_CONTENT_LENGTH=config.max_body_bytes)
    caching.init_app(server)
    server.before_request(lambda: _guard(server))
    server.after_request(_remember_token)
    server.register_error_handler(Exception, _on_error)
    logging.getLogger("werkzeug").addFilter(_RedactToken())
    _register_routes(server)
    _register_map_route(server)
    app = dash.Dash(
        __name__, server=server, use_pages=True,
        pages_folder=str(Path(__file__).parent / "pages"), assets_folder=str(ASSETS),
        assets_ignore="" if config.debug_hooks else f"^{re.escape(DEBUG_SCRIPT)}$",
        suppress_callback_exceptions=True,
        title="tsne-curator", update_title=None,
        # Before the assets' scripts, which read window.CURATOR_IDS (app/ids.py).
        external_scripts=["/ids.js"],
        on_error=_callback_error,
    )
    app.layout = shell()
    app.callback(Output(PAGE_ERROR, "hidden"), Input("url", "pathname"),
                 prevent_initial_call=True)(_clear_page_error)
    _secure_headers(app)  # after the layout and every callback: the hashes cover them
    return app


def serve(config: Settings, debug: bool = False) -> None:
    """Serve the app on ``config.host:config.port`` until stopped.

    waitress, with ``config.server_threads`` request threads, unless ``debug``: then Flask's
    development server with Dash's dev tools and reloader, and the Curate page's debug
    hooks (``debug_hooks``).
    """
    if debug:
        config = dataclasses.replace(config, debug_hooks=True)
    app = create_app(config)
    if debug:
        app.run(host=config.host, port=config.port, debug=True, threaded=True)
        return
    import waitress

    waitress.serve(app.server, host=config.host, port=config.port,
                   threads=config.server_threads, ident="tsne-curator",
                   max_request_body_size=config.max_body_bytes,
                   clear_untrusted_proxy_headers=True)
