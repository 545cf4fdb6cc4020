"""The ``curator`` command: the worker's commands (worker/cli) and ``curator serve``, which
starts this app. The worker's commands also run alone as ``python -m worker.cli``, where the
app is not wanted (a GPU host that only runs jobs).

Only light modules at the top: ``curator --help`` must not import Dash, numpy or torch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.startup import serve_app
from worker.cli import COMMAND_GROUPS
from worker.cli import build_parser as worker_parser
from worker.cli import main as worker_main
from worker.cli.arguments import Add
from worker.pipeline.ranges import cli_type


def cmd_serve(a: argparse.Namespace) -> None:
    serve_app(a.runs_root, a.host, a.port, a.debug)


def register(add: Add) -> None:
    """serve: the web app."""
    sp = add("serve", cmd_serve, "start the web app (default http://127.0.0.1:8050)")
    sp.add_argument("--runs-root", type=Path, help="default: CURATOR_RUNS_ROOT or ./runs")
    sp.add_argument("--host", help="default 127.0.0.1 (CURATOR_HOST)")
    sp.add_argument("--port", type=cli_type("port"), help="default 8050 (CURATOR_PORT)")
    sp.add_argument("--debug", action="store_true",
                    help="Dash dev tools and reloader, and the Curate page's test hooks "
                         "(as CURATOR_DEBUG_HOOKS=1)")


GROUPS = (*COMMAND_GROUPS, register)


def build_parser() -> argparse.ArgumentParser:
    """Every ``curator`` command's parser, the app's included."""
    return worker_parser(GROUPS)


def main(argv: list[str] | None = None) -> int:
    """``curator``: run one command; the exit status (2 for a user's mistake)."""
    return worker_main(argv, GROUPS)


if __name__ == "__main__":
    sys.exit(main())
