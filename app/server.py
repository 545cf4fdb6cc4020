"""The Dash app factory, its Flask routes (thumbnails, downloads, health) and auth.

``curator serve`` calls :func:`serve`. The app binds to 127.0.0.1 unless told otherwise.
With ``CURATOR_AUTH_TOKEN`` set, every route needs the token: as ``?token=`` once (it is
then kept in an HTTP-only cookie), or as an ``Authorization: Bearer`` header.
"""

from __future__ import annotations

import hmac
import io
from pathlib import Path

import dash
import numpy as np
from flask import Flask, Response, abort, current_app, request, send_file
from PIL import Image

from worker.jobs import get_dispatcher, resolve_run
from worker.pipeline.errors import InputError
from worker.settings import Settings, load_settings

from . import caching
from .caching import files

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TOKEN_COOKIE = "curator_token"


def settings() -> Settings:
    """The settings of the app serving the current request."""
    return current_app.config["CURATOR_SETTINGS"]


def dispatcher():
    """Where the app sends jobs (Celery with a broker, else in-process threads)."""
    return current_app.config["CURATOR_DISPATCHER"]


def _check_token(app: Flask) -> Response | None:
    token = app.config["CURATOR_SETTINGS"].auth_token
    if not token or request.path == "/healthz":
        return None
    given = (request.args.get("token") or request.cookies.get(TOKEN_COOKIE)
             or request.headers.get("Authorization", "").removeprefix("Bearer ").strip())
    if given and hmac.compare_digest(given, token):
        return None
    return Response("401: this tsne-curator needs its access token (open the URL with "
                    "?token=...)\n", status=401, mimetype="text/plain")


def _remember_token(response: Response) -> Response:
    token = request.args.get("token")
    if token and response.status_code < 400:
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
    return response


@files.memoize(timeout=3600)
def thumbnail_png(run_path: str, index: int, mtime: int) -> bytes:
    """PNG bytes of one thumbnail (cached: thumbnails never change for a run)."""
    thumbs = np.load(Path(run_path) / "thumbnails.npy", mmap_mode="r")
    if not 0 <= index < len(thumbs):
        abort(404)
    buf = io.BytesIO()
    Image.fromarray(np.asarray(thumbs[index])).save(buf, format="PNG")
    return buf.getvalue()


@files.memoize(timeout=3600)
def background_png(run_path: str, mtime: int) -> bytes:
    """The class view's backdrop of every point (cached per embedding file)."""
    from .background import render_png

    return render_png(np.load(Path(run_path) / "embedding.npy"))


def _register_routes(server: Flask) -> None:
    @server.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    # Each route owns its whole subtree, so a malformed path is a 404 here rather than
    # falling through to the Dash page shell.
    @server.get("/thumb/<path:subpath>")
    def thumb(subpath: str) -> Response:
        run_id, _, leaf = subpath.rpartition("/")
        index = leaf.removesuffix(".png")
        if not leaf.endswith(".png") or not index.isdigit():
            abort(404)
        index = int(index)
        try:
            run = resolve_run(settings().runs_root, run_id)
        except InputError:
            abort(404)
        if not run.thumbnails.is_file():
            abort(404)
        png = thumbnail_png(str(run.path), index, run.thumbnails.stat().st_mtime_ns)
        resp = Response(png, mimetype="image/png")
        resp.headers["Cache-Control"] = "private, max-age=86400"
        return resp

    @server.get("/background/<path:subpath>")
    def background(subpath: str) -> Response:
        run_id = subpath.removesuffix(".png")
        try:
            run = resolve_run(settings().runs_root, run_id)
        except InputError:
            abort(404)
        if not subpath.endswith(".png") or not run.embedding.is_file():
            abort(404)
        png = background_png(str(run.path), run.embedding.stat().st_mtime_ns)
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


def create_app(config: Settings | None = None) -> dash.Dash:
    """Build the Dash app for ``config`` (default: from the environment)."""
    config = config or load_settings()
    config.runs_root.mkdir(parents=True, exist_ok=True)
    server = Flask(__name__)
    server.config.update(CURATOR_SETTINGS=config, CURATOR_DISPATCHER=get_dispatcher(config))
    caching.init_app(server)
    server.before_request(lambda: _check_token(server))
    server.after_request(_remember_token)
    _register_routes(server)
    app = dash.Dash(
        __name__, server=server, use_pages=True,
        pages_folder=str(Path(__file__).parent / "pages"), assets_folder=str(ASSETS),
        suppress_callback_exceptions=True,
        title="tsne-curator", update_title=None,
    )
    from .layout import shell

    app.layout = shell()
    return app


def serve(config: Settings, debug: bool = False) -> None:
    """Run the app with Flask's threaded server on ``config.host:config.port``."""
    app = create_app(config)
    app.run(host=config.host, port=config.port, debug=debug, threaded=True)
