"""Starting the app: the settings with the caller's overrides, the runs root and the broker
checked, the port checked free, then the URL printed and the server started.
``curator serve`` (app/cli.py) and ``tc.serve`` (tsne_curator/serving.py) both call
:func:`serve_app`."""

from __future__ import annotations

import sys
from pathlib import Path

from worker.pipeline.errors import InputError
from worker.settings import load_settings


def serve_app(runs_root: Path | None = None, host: str | None = None, port: int | None = None,
              debug: bool = False) -> None:
    """Serve the app until interrupted (blocking). ``None`` takes the setting
    (``CURATOR_RUNS_ROOT``, ``CURATOR_HOST``, ``CURATOR_PORT``); ``debug``: Dash's dev tools
    and reloader. Raises :class:`InputError` for a bad runs root or a port in use."""
    from worker.run_catalog import check_runs_root

    settings = load_settings()
    settings = settings.changed(runs_root=runs_root or settings.runs_root,
                                host=host or settings.host, port=port or settings.port)
    check_runs_root(settings.runs_root)  # before anything is printed
    from app.security import check_token_setting  # loads Flask: only to serve

    check_token_setting(settings.auth_token)
    if settings.broker_url:
        from worker.jobs.dispatchers import check_broker

        try:
            check_broker(settings.broker_url)
        except InputError as exc:
            # Curation needs no broker: serve anyway; job buttons show this error until
            # Redis is back.
            print(f"warning: {exc}", file=sys.stderr)
    from app.server import serve

    _check_port_free(settings.host, settings.port)  # before printing a URL that won't answer
    token = f"?token={settings.auth_token}" if settings.auth_token else ""
    base = f"http://{settings.host}:{settings.port}"
    print(f"tsne-curator: {base}/{token} (runs root {settings.runs_root.resolve()})", flush=True)
    run_id = _run_to_open(settings.runs_root)
    if run_id:
        print(f"curate {run_id}: {base}/curate/{run_id}{token}", flush=True)
    serve(settings, debug=debug)


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port another program holds, in one line (the server used to print its URL
    and only then fail)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise InputError(f"port {port} on {host} is in use: stop the program holding "
                                 "it, or pick another with --port or CURATOR_PORT") from None
            raise InputError(f"cannot listen on {host}:{port} ({exc.strerror}): check "
                             "--host/CURATOR_HOST and --port") from None


def _run_to_open(runs_root: Path) -> str | None:
    """The run to point a new user at: ``demo`` when it is ready, else the most recently
    clustered run, else None."""
    from worker.pipeline.storage.rundir import step_record
    from worker.run_catalog import list_runs

    ready = [e for e in list_runs(runs_root) if e.error is None
             and step_record(e.meta, "cluster").get("status") == "done"]
    if any(e.id == "demo" for e in ready):
        return "demo"
    return max(ready, key=lambda e: (e.path / "run.json").stat().st_mtime).id if ready else None
