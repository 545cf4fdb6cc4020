"""The Dash app factory: the app, its Flask routes (Blueprints) and checks, and ``serve``.

``curator serve`` calls :func:`serve`: the app on waitress, a production WSGI server
(Flask's development server only with ``--debug``). ``app.wsgi:application`` is the same
app for another WSGI server. It binds to 127.0.0.1 unless told otherwise.

What every request passes first (Host, body size, token, callback shape) and the
Content-Security-Policy are in app/security.py; the routes are Blueprints, one module
each: the run's images (app/image_routes.py), export downloads (app/download_routes.py),
what the pages' scripts fetch (app/script_routes.py) and ``/healthz``
(app/health_routes.py). A callback that fails on the values it was sent is a 400.
"""

from __future__ import annotations

import re
from pathlib import Path

import dash
from dash import Input, Output, set_props
from dash.exceptions import DashException
from flask import Flask, current_app, request
from werkzeug.exceptions import HTTPException

from app.download_routes import downloads
from app.health_routes import health
from app.ids import PAGE_ERROR
from app.image_routes import images
from app.layout import shell
from app.responses import first_line, text_response
from app.script_routes import scripts
from app.security import DASH_UPDATE, DEBUG_SCRIPT, protect, secure_headers
from app.url_converters import add_converters
from worker.jobs.dispatchers import get_dispatcher
from worker.pipeline.errors import InputError
from worker.settings import Settings, load_settings

ASSETS = Path(__file__).resolve().parents[1] / "assets"
BLUEPRINTS = (health, scripts, images, downloads)
# What a callback raises on values of the wrong type or shape: the request's fault, a 400.
CALLBACK_VALUE_ERRORS = (InputError, DashException, TypeError, KeyError, ValueError,
                         AttributeError, IndexError, ArithmeticError)


def _on_error(exc: Exception):
    """HTTP errors pass through; a callback that fails on the values it was sent answers
    400 (an :class:`InputError` with its one line, anything else without Python's text);
    a bad component-suite path is a 404; the rest is a logged 500. (A run file that an
    image or download route cannot read is that Blueprint's 404: app/responses.py.)"""
    if isinstance(exc, HTTPException):
        return exc
    if request.path == DASH_UPDATE and isinstance(exc, CALLBACK_VALUE_ERRORS):
        first = first_line(exc, 200) if isinstance(exc, InputError) else ""
        return text_response(400, first or "callback values of the wrong type or shape")
    if request.path.startswith("/_dash-component-suites/"):
        return text_response(404, "no such file")
    current_app.logger.exception("unhandled error on %s", request.path)
    return text_response(500, "internal error (logged on the server)")


def _callback_error(exc: Exception) -> None:
    """A callback that fails on its run (an :class:`InputError`: a damaged or missing run
    file) says why in the shell's line (app/layout.py) and changes nothing else; the
    request still succeeds, since Dash's renderer shows nothing for a failed callback
    outside debug mode. Any other failure goes on to :func:`_on_error`."""
    if not isinstance(exc, InputError):
        raise exc
    line = first_line(exc) or "this run cannot be read"
    current_app.logger.warning("%s: %s", request.path, line)
    set_props(PAGE_ERROR, {"children": line, "hidden": False})


def _clear_page_error(_path: str) -> bool:
    """A new page starts without the last page's failure."""
    return True


def _flask_server(config: Settings) -> Flask:
    """The Flask server: settings, checks, error handling and the Blueprints."""
    server = Flask(__name__)
    protect(server, config)  # refuses a token setting that cannot work, before all else
    server.config.update(CURATOR_SETTINGS=config, CURATOR_DISPATCHER=get_dispatcher(config),
                         MAX_CONTENT_LENGTH=config.max_body_bytes)
    server.register_error_handler(Exception, _on_error)
    add_converters(server.url_map, config.runs_root)
    for blueprint in BLUEPRINTS:
        server.register_blueprint(blueprint)
    return server


def create_app(config: Settings | None = None) -> dash.Dash:
    """Build the Dash app for ``config`` (default: from the environment)."""
    # pandas imported here, before any request thread: plotly's JSON encoder looks pandas up
    # in sys.modules without importing it, and one that a background thread (the Curate
    # page's network warm-up) is still importing is half made: an AttributeError there.
    import pandas  # noqa: F401

    config = config or load_settings()
    config.runs_root.mkdir(parents=True, exist_ok=True)
    server = _flask_server(config)
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
    secure_headers(app)  # after the layout and every callback: the hashes cover them
    return app


def serve(config: Settings, debug: bool = False) -> None:
    """Serve the app on ``config.host:config.port`` until stopped.

    waitress, with ``config.server_threads`` request threads, unless ``debug``: then Flask's
    development server with Dash's dev tools and reloader, and the Curate page's debug
    hooks (``debug_hooks``).
    """
    if debug:
        config = config.changed(debug_hooks=True)
    app = create_app(config)
    if debug:
        app.run(host=config.host, port=config.port, debug=True, threaded=True)
        return
    import waitress

    waitress.serve(app.server, host=config.host, port=config.port,
                   threads=config.server_threads, ident="tsne-curator",
                   max_request_body_size=config.max_body_bytes,
                   clear_untrusted_proxy_headers=True)
