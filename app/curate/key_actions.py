"""The Curate page's key actions, one row each: key, help text, where it acts, and, for a
review action, its store operation (the review list's state word follows the decision it
leaves: app/curate/review_queue.py).

The scripts get the table as ``window.CURATOR_ACTIONS`` from ``/ids.js`` (app/ids.py), and
one key listener (assets/keyboard.js) dispatches every key through it to the script that
owns the action's ``scope``; the on-screen key help is made from it (app/curate/review_list.py),
and the server runs a review key's operation through :func:`run_action`. Adding an action
is a row here, plus its operation when it writes the store.

Scopes:

- ``review``: the review list's focused row (assets/review.js): ``next``/``prev`` move the
  focus; an action with an operation sends ``{sample, action, label}`` to the server.
- ``press``: presses the page element ``target`` (a button, or the class picker that opens)
  when it is shown and enabled (assets/keyboard.js).
- ``params``: Enter in the eps or min_samples box (assets/class_map.js repaints at once).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app import ids
from app.curate.page_actions import set_decision
from app.curate.review_queue import decide_island, keep_member, relabel_to
from worker.pipeline.errors import InputError

Operation = Callable[[Path, str, int, dict], int]


def _decide(decision: str) -> Operation:
    def op(runs_root: Path, run_id: str, sample: int, key: dict) -> int:
        return set_decision(runs_root, run_id, sample, decision)
    return op


def _relabel(runs_root: Path, run_id: str, sample: int, key: dict) -> int:
    return relabel_to(runs_root, run_id, [sample], key.get("label") or "")


def _keep_member(runs_root: Path, run_id: str, sample: int, key: dict) -> int:
    return keep_member(runs_root, run_id, sample)


def _island(decision: str) -> Operation:
    def op(runs_root: Path, run_id: str, sample: int, key: dict) -> int:
        return decide_island(runs_root, run_id, sample, decision)
    return op


@dataclass(frozen=True)
class Action:
    """One key action (module docstring).

    ``keys``: ``KeyboardEvent.key`` values, lower-case, with ``Ctrl+`` (Ctrl or Cmd) and
    ``Shift+`` prefixes. ``help``: the key help's words (an action without is not listed).
    ``label_from``: the row field whose value the action
    sends as its label, and without which it does nothing (a relabel to the suggestion).
    """

    name: str
    keys: tuple[str, ...]
    scope: str
    help: str = ""
    target: str | None = None
    operation: Operation | None = None
    label_from: str | None = None

    def client(self) -> dict:
        """What the scripts read: everything but the operation."""
        return {"name": self.name, "keys": list(self.keys), "scope": self.scope,
                "target": self.target, "store": self.operation is not None,
                "labelFrom": self.label_from}


ACTIONS: tuple[Action, ...] = (
    Action("next", ("j",), "review", "next row"),
    Action("prev", ("k",), "review", "previous row"),
    Action("keep", ("a",), "review", "keep", operation=_decide("keep")),
    Action("drop", ("d",), "review", "drop", operation=_decide("drop")),
    Action("relabel", ("r",), "review", "relabel to the suggestion", operation=_relabel,
           label_from="suggested"),
    Action("pick_class", ("l",), "press", "relabel to any class", target=ids.RELABEL_TO),
    Action("keep_member", ("m",), "review", "keep this copy, drop its near-duplicates",
           operation=_keep_member),
    Action("drop_island", ("i",), "review", "drop this outlier's whole island",
           operation=_island("drop")),
    Action("keep_island", ("Shift+i",), "review", "keep this outlier's whole island",
           operation=_island("keep")),
    # No operation: assets/review.js asks app/curate/similar_panel.py for the neighbours.
    Action("similar", ("s",), "review", "more like this (the hovered point, else the row)"),
    Action("undo", ("u", "Ctrl+z"), "press", "undo", target=ids.UNDO),
    Action("redo", ("Ctrl+Shift+z",), "press", "redo", target=ids.REDO),
    Action("apply", ("Enter",), "params"),
)


def key_help() -> list[tuple[str, str]]:
    """(keys, words) for the on-screen help, in table order: "a" → "keep"."""
    return [(" / ".join(a.keys), a.help) for a in ACTIONS if a.help]


def run_action(runs_root: Path, run_id: str, key: dict) -> int:
    """What a review key sent (assets/review.js: ``{sample, action, label}``): its
    operation, as one undoable step. Returns what the operation returns."""
    action = next((a for a in ACTIONS if a.name == str(key.get("action"))), None)
    if action is None or action.operation is None:
        names = ", ".join(a.name for a in ACTIONS if a.operation)
        raise InputError(f"no action {key.get('action')!r} for a key: use {names}")
    try:
        sample = int(key["sample"])
    except (KeyError, TypeError, ValueError):
        raise InputError("no sample to act on: focus a row of the review list") from None
    return action.operation(runs_root, run_id, sample, key)


def script() -> str:
    """The table as ``window.CURATOR_ACTIONS`` (for ``/ids.js``)."""
    rows = [a.client() for a in ACTIONS]
    return f"window.CURATOR_ACTIONS = Object.freeze({json.dumps(rows)});\n"
