"""Keyword arguments checked as the ``curator`` command line checks its flags.

Each call of the API names a ``curator`` command (``pipeline``, ``cluster``, ``export``,
``experiment``, ``serve``). Its keywords are that command's options by name
(``--inject-noise`` is ``inject_noise``), from the declarations the CLI adds its flags from
(:data:`worker.option_table.COMMANDS`); every value is checked by the same declaration: a
number through its :class:`~worker.pipeline.number_params.Param` (range, whole number or not), a
choice against its choices, a path as a path, a list option's list joined as the CLI's
comma-separated text. The result maps every option of the command to its value (its
default where none was given), which :mod:`worker.step_options` turns into the steps'
options, as it does for what the command line parsed.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from worker.option_table import (
    CHOICE,
    COMMANDS,
    NUMBER,
    PARSED,
    PATH,
    SWITCH,
    Option,
    read_text,
)
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import PARAMS, check, group_params


def check_keyword(option: Option, value: Any) -> Any:
    """``value`` for ``option`` checked as the CLI checks its flag.

    Returns
    -------
    The value the command would have parsed (an int or float for a number, a Path for a
    path); None stays None where the option's default is None (not given).

    Raises
    ------
    InputError
        One line naming the keyword and its flag, what it must be and the value given.
    """
    label = option.label
    if option.kind == SWITCH:
        if not isinstance(value, bool):
            raise InputError(f"{label} must be True or False, got {value!r}")
        return value
    if value is None and option.default is None and not option.required:
        return None
    value = _comma_list(label, value) if option.listed else value
    if option.kind == NUMBER:
        try:
            return check(option.param, value)  # type: ignore[arg-type]
        except InputError as exc:
            raise InputError(str(exc).replace(PARAMS[option.param].flag, label, 1)) from None
    if option.kind == PATH:
        if isinstance(value, str | os.PathLike) and str(value):
            return Path(value)
        raise InputError(f"{label} must be a path, got {value!r}")
    if option.kind == CHOICE:
        if isinstance(value, str) and value in option.choices:  # type: ignore[operator]
            return value
        raise InputError(f"{label} must be one of {', '.join(option.choices or ())}, "
                         f"got {value!r}")
    if option.kind == PARSED:  # --cut, --subsets: read as the command line reads their text
        return read_text(option, value if isinstance(value, str) else repr(value))
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


def unknown_keyword(key: str, valid: Collection[str], caller: str) -> TypeError:
    """The error for keyword ``key``, which is not among ``valid``: one line naming the
    closest valid keyword, as Python names an unexpected keyword argument, then the list."""
    close = difflib.get_close_matches(key, list(valid), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return TypeError(f"{caller}() got an unexpected keyword argument {key!r}{hint}; "
                     f"valid keywords: {', '.join(sorted(valid))}")


def keywords(command: str, given: Mapping[str, Any], caller: str,
             fixed: Mapping[str, Any] | None = None, exclude: Collection[str] = (),
             refused: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every option of ``curator COMMAND`` by name, with the values of keyword arguments.

    Parameters
    ----------
    command : the ``curator`` command whose options the keywords are
    given : keyword → value, as the caller received them
    caller : the API function's name, for the unknown-keyword message
    fixed : options the API function takes as its own arguments (``out``, ``dataset``),
        checked like the keywords but not accepted among them
    exclude : options the call does not take (they keep their default)
    refused : option → why the API does not take it (an :class:`InputError` that says so)

    Returns
    -------
    dict
        Option name → checked value (the option's default where none was given), as
        :mod:`worker.step_options` takes them.

    Raises
    ------
    TypeError
        For a keyword that is not an option of the call, naming the closest one and
        listing the valid ones.
    InputError
        For the first value that the CLI would refuse (:func:`check_keyword`).
    """
    fixed, refused = dict(fixed or {}), dict(refused or {})
    options = COMMANDS[command]
    valid = [name for name in options if name not in fixed and name not in exclude
             and name not in refused]
    for key in given:
        if key in refused:
            raise InputError(f"{key}: {refused[key]}")
        if key not in valid:
            raise unknown_keyword(key, valid, caller)
    values = {name: o.default for name, o in options.items()}
    for key, value in {**fixed, **given}.items():
        values[key] = check_keyword(options[key], value)
    return values


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
