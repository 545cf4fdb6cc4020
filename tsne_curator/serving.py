"""``tc.serve``: the app ``curator serve`` starts, for a folder of runs."""

from __future__ import annotations

import os

from app.startup import serve_app
from tsne_curator.options import keywords


def serve(runs_root: str | os.PathLike | None = None, port: int | None = None,
          host: str | None = None, debug: bool = False) -> None:
    """Serve the app for the runs under ``runs_root`` until interrupted (blocking), as
    ``curator serve`` does: it prints the URL, and the Curate page of a run opened here
    shows the notebook's decisions at its next refresh.

    Parameters
    ----------
    runs_root : str or path, optional
        The folder of runs (``--runs-root``; default ``CURATOR_RUNS_ROOT`` or ``./runs``).
    port : int, optional
        ``--port`` (default ``CURATOR_PORT`` or 8050).
    host : str, optional
        ``--host`` (default ``CURATOR_HOST`` or 127.0.0.1).
    debug : bool
        Dash's dev tools and reloader (``--debug``).

    Raises
    ------
    InputError
        A bad value, or a port another program holds.
    """
    v = keywords("serve", {"runs_root": runs_root, "port": port, "host": host,
                           "debug": debug}, "serve")
    serve_app(v["runs_root"], v["host"], v["port"], v["debug"])
