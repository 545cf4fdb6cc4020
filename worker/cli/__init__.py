"""The ``curator`` command line.

Each step reads and writes a run directory. User mistakes print one line starting with
``error:`` and exit with status 2; there is no traceback for them.

One module per command group (``*_commands.py``), each with its commands and the
``register`` that adds their sub-parsers; the options several groups share are in
``arguments.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

# Only light modules at the top: `curator --help` must not import torch, numpy or sklearn
# (each command imports what it needs when it runs).
from worker.cli import (
    curation_commands,
    people_commands,
    report_commands,
    service_commands,
    step_commands,
    training_commands,
    version_commands,
)
from worker.cli.arguments import Add
from worker.pipeline.errors import InputError
from worker.pipeline.progress import Cancelled


class _Help(argparse.RawDescriptionHelpFormatter):
    """Keeps the example's line breaks and shows each option's default (when it has one
    and its help does not already say it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
                and "default" not in text):
            text += " (default: %(default)s)"
        return text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tsne-curator")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "unknown"


EXAMPLES = {
    "pipeline": "curator pipeline --dataset digits --inject-noise 0.1 --out runs/demo",
    "extract": "curator extract --dataset folder:data/pets --model resnet18 --weights r18.pth "
               "--out runs/pets",
    "embed": "curator embed runs/demo --perplexity 50",
    "cluster": "curator cluster runs/demo --class 3 --eps 1.2 --min-samples 8",
    "export": "curator export runs/demo --format imagefolder --dest v1",
    "evaluate": "curator evaluate runs/demo",
    "findings": "curator findings runs/cifar --kind duplicate --top 20",
    "similar": "curator similar runs/demo 17 --k 10",
    "override": "curator override runs/demo drop 17 42",
    "retrain": "curator retrain runs/demo --subset filtered",
    "experiment": "curator experiment runs/demo --seeds 3",
    "serve": "curator serve --runs-root runs",
    "worker": "CURATOR_BROKER_URL=redis://127.0.0.1:6379/0 curator worker --queues gpu",
    "jobs": "curator jobs runs/demo",
    "cancel": "curator cancel 3f2a9c1d0b7e --run runs/demo",
    "undo": "curator undo runs/demo",
    "history": "curator history runs/demo --sample 17",
    "token": "curator token add ana --role reviewer",
    "params": "curator params runs/demo",
    "relabel": "curator relabel runs/demo 3 13",
    "version": "curator version runs/demo reviewed-1 --note \"classes 3 and 5 checked\"",
    "versions": "curator versions runs/demo",
    "diff": "curator diff runs/demo reviewed-1 current",
}


class _Parser(argparse.ArgumentParser):
    """An argument mistake is one line and exit status 2, like every other bad input
    (argparse's default prints its usage block first). ``-h`` still shows the usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {message} (see '{self.prog} -h')\n")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):  # noqa: ANN202
        # Python 3.11's argparse drops a "--" given as a flag's value (--cut=--) and leaves
        # an empty list where one value belongs: it is read as the text it is, so it gets
        # the flag's own one-line refusal, as the Python API's keyword does.
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


# Each group's ``register`` adds its commands' sub-parsers. ``curator serve`` is the app's
# (app/cli.py adds it): the worker never imports the app.
COMMAND_GROUPS: tuple[Callable[[Add], None], ...] = (
    step_commands.register, report_commands.register, curation_commands.register,
    training_commands.register, service_commands.register, people_commands.register,
    version_commands.register)


def build_parser(groups: tuple[Callable[[Add], None], ...] = COMMAND_GROUPS
                 ) -> argparse.ArgumentParser:
    """The parser of the ``groups``' commands (by default the worker's)."""
    p = _Parser(
        prog="curator", formatter_class=_Help,
        description="tsne-curator: find training images that hurt a model (t-SNE + per-class "
                    "DBSCAN + label evidence), curate them, export, and retrain to check.",
        epilog="example:\n  curator pipeline --dataset digits --inject-noise 0.1 --out "
               "runs/demo\n  curator serve    # then open the printed Curate URL")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_, formatter_class=_Help,
                            epilog=f"example:\n  {EXAMPLES[name]}")
        sp.set_defaults(fn=fn)
        return sp

    for register in groups:
        register(add)
    return p


def main(argv: list[str] | None = None,
         groups: tuple[Callable[[Add], None], ...] = COMMAND_GROUPS) -> int:
    """Run one command of ``groups``; the exit status (2 for a user's mistake)."""
    args = build_parser(groups).parse_args(argv)
    try:
        args.fn(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PermissionError as exc:  # one the commands' own checks did not name
        print(f"error: permission denied: {exc.filename}: give this user access to it, or "
              "choose another path", file=sys.stderr)
        return 2
    except Cancelled as exc:
        print(f"cancelled: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
