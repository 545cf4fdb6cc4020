"""The ``curator`` command: the worker's commands (worker/cli) and ``curator serve``, which
starts this app. The worker's commands also run alone as ``python -m worker.cli``, where the
app is not wanted (a GPU host that only runs jobs).

Only light modules at the top: ``curator --help`` must not import Dash, numpy or torch.
"""

from __future__ import annotations

import argparse
import sys

from app.startup import serve_app
from worker.cli import COMMAND_GROUPS
from worker.cli import build_parser as worker_parser
from worker.cli import main as worker_main
from worker.cli.arguments import Add, add_options
from worker.option_table import SERVE


def cmd_serve(a: argparse.Namespace) -> None:
    serve_app(a.runs_root, a.host, a.port, a.debug)


def register(add: Add) -> None:
    """serve: the web app."""
    sp = add("serve", cmd_serve, "start the web app (default http://127.0.0.1:8050)")
    add_options(sp, SERVE)

GROUPS = (*COMMAND_GROUPS, register)


def build_parser() -> argparse.ArgumentParser:
    """Every ``curator`` command's parser, the app's included."""
    return worker_parser(GROUPS)


def main(argv: list[str] | None = None) -> int:
    """``curator``: run one command; the exit status (2 for a user's mistake)."""
    return worker_main(argv, GROUPS)


if __name__ == "__main__":
    sys.exit(main())
