"""Keyword arguments checked as the ``curator`` command line checks its flags.

Each call of the API names a ``curator`` command (``pipeline``, ``cluster``, ``export``,
``serve``). Its keywords are that command's options, by their ``dest`` names
(``--inject-noise`` is ``inject_noise``), read from the CLI's own parser
(:func:`worker.cli.build_parser`); every value is checked by the same definition the flag
uses: a number through its :class:`~worker.pipeline.ranges.Param` (range, whole number or
not), a choice against the flag's choices, a path as a path. The result is the
``argparse.Namespace`` the command itself would have parsed, so the CLI's helpers
(``worker.cli.arguments.dataset_opts``, ``feature_opts``, ``embed_opts``, ``thresholds``)
turn it into the steps' options.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from worker.cli import build_parser
from worker.cli.arguments import LIST_METAVAR_END
from worker.pipeline.errors import InputError
from worker.pipeline.ranges import PARAMS, check, group_params


@functools.cache
def command_actions(command: str) -> dict[str, argparse.Action]:
    """The options of ``curator COMMAND``, by ``dest`` (``-h`` left out), from the CLI's
    own parser."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices[command]._actions
            if not isinstance(a, argparse._HelpAction)}


def _label(name: str, action: argparse.Action) -> str:
    """How an error names the keyword: ``inject_noise (--inject-noise)``."""
    return f"{name} ({action.option_strings[0]})" if action.option_strings else name


def check_keyword(name: str, action: argparse.Action, value: Any) -> Any:
    """``value`` for keyword ``name`` checked as the CLI checks the flag of ``action``.

    Returns
    -------
    The value the command would have parsed (an int or float for a number, a Path for a
    path); None stays None where the flag's default is None (not given).

    Raises
    ------
    InputError
        One line naming the keyword, what it must be and the value given.
    """
    label = _label(name, action)
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            raise InputError(f"{label} must be True or False, got {value!r}")
        return value
    if value is None and action.default is None and not action.required:
        return None
    value = _comma_list(label, value) if str(action.metavar or "").endswith(LIST_METAVAR_END) \
        else value
    param = getattr(action.type, "param", None)
    if param is not None:  # a number: ranges.cli_type(param)
        try:
            return check(param, value)
        except InputError as exc:
            raise InputError(str(exc).replace(PARAMS[param].flag, label, 1)) from None
    if action.type is Path:
        if isinstance(value, str | os.PathLike) and str(value):
            return Path(value)
        raise InputError(f"{label} must be a path, got {value!r}")
    if action.choices is not None:
        if isinstance(value, str) and value in action.choices:
            return value
        raise InputError(f"{label} must be one of {', '.join(map(str, action.choices))}, "
                         f"got {value!r}")
    if action.type is not None:  # another parser of text (curator cluster's --cut)
        try:
            return action.type(value if isinstance(value, str) else repr(value))
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise InputError(f"{label} {exc}") from None
    if isinstance(value, str):
        return value
    raise InputError(f"{label} must be text, got {value!r}")


def is_whole(value: Any) -> bool:
    """Whether ``value`` is a whole number as Python or numpy holds one (``3``,
    ``np.int64(3)``, as an array's or a DataFrame's items are); a bool is not."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _comma_list(label: str, value: Any) -> Any:
    """The value of an option that takes a comma-separated list, as the CLI's text: a list
    or tuple of names or whole numbers (``["full", "filtered"]``, ``[64, 128]``, numpy
    integers too: :func:`is_whole`) or one whole number is joined; text stays as it is.

    Raises
    ------
    InputError
        Anything else, quoting the value given.
    """
    if isinstance(value, str):
        return value
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items or not all(isinstance(v, str) or is_whole(v) for v in items):
        raise InputError(f"{label} must be comma-separated text or a list of names or whole "
                         f"numbers, got {value!r}")
    return ",".join(v if isinstance(v, str) else str(int(v)) for v in items)


def namespace(command: str, given: Mapping[str, Any], caller: str,
              fixed: Mapping[str, Any] | None = None, exclude: Collection[str] = (),
              refused: Mapping[str, str] | None = None) -> argparse.Namespace:
    """The namespace ``curator COMMAND`` would have parsed, from keyword arguments.

    Parameters
    ----------
    command : the ``curator`` command whose options the keywords are
    given : keyword → value, as the caller received them
    caller : the API function's name, for the unknown-keyword message
    fixed : options the API function takes as its own arguments (``out``, ``dataset``),
        checked like the keywords but not accepted among them
    exclude : options the call does not take (they keep their CLI default)
    refused : option → why the API does not take it (an :class:`InputError` that says so)

    Raises
    ------
    TypeError
        For a keyword that is not an option of the call, listing the valid ones.
    InputError
        For the first value that the CLI would refuse (:func:`check_keyword`).
    """
    fixed, refused = dict(fixed or {}), dict(refused or {})
    actions = command_actions(command)
    valid = sorted(d for d in actions if d not in fixed and d not in exclude
                   and d not in refused)
    for key in given:
        if key in refused:
            raise InputError(f"{key}: {refused[key]}")
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}{hint}; "
                            f"valid keywords: {', '.join(valid)}")
    ns = argparse.Namespace(**{d: a.default for d, a in actions.items()})
    for key, value in {**fixed, **given}.items():
        setattr(ns, key, check_keyword(key, actions[key], value))
    return ns


def expand_thresholds(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with ``thresholds={"duplicate": 0.95}`` written as the flags' own
    keywords (``duplicate_threshold=0.95``: ``--duplicate-threshold``).

    Raises
    ------
    InputError
        For a ``thresholds`` that is not a mapping, a kind without a cut, or a cut given
        both ways with two values.
    """
    out = dict(options)
    cuts = out.pop("thresholds", None)
    if cuts is None:
        return out
    names = group_params("findings")
    kinds = ", ".join(n.removesuffix("_threshold") for n in names)
    if not isinstance(cuts, Mapping):
        raise InputError(f"thresholds must be a dict of finding kind → cut (kinds with a cut: "
                         f"{kinds}), got {cuts!r}")
    for kind, value in cuts.items():
        key = f"{kind}_threshold"
        if key not in names:
            raise InputError(f"thresholds: no finding kind {kind!r} with a cut: use {kinds}")
        if key in out and out[key] != value:
            raise InputError(f"thresholds[{kind!r}] and {key} give two cuts: give one")
        out[key] = value
    return out
