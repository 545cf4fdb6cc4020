"""The page's one render path: the shown class and the store's snapshot → what each
component shows.

One server callback, so a class switch or a change is one request, and the map's answer
comes in it. Each component brings its own part: the outputs it owns (``OUTPUTS``), the
states it reads (``STATES``) and ``render(view, states)``, which returns a value (or
``no_update``) for each of its outputs. No part writes another's outputs.

Outputs whose value the page already shows go back as ``no_update``: each updated
component costs the Dash renderer a store update that re-runs every component's
selector, which on this page took more time than Plotly's repaint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType

from dash import Input, Output, Patch, State, callback, ctx, no_update

from app.app_context import settings
from app.curate import CLASS_PICK, RUN, SHOWN, SHOWN_REV, changes, code_of, page_actions
from app.run_data import RunData, RunState, current_state, run_data


@dataclass
class PageRequest:
    """What the page is asked to show, for each component's ``render``.

    ``switched``: the shown class changes; ``stored``: the store changed since the page
    last showed it (counts and history follow); ``fired``: what asked for it: ``"class"``
    (the class to show), ``"change"`` (a component's change store) or both.
    """

    root: Path
    run_id: str
    data: RunData
    state: RunState
    code: int | None
    shown: int | str | None
    switched: bool
    stored: bool
    fired: frozenset[str] = field(default_factory=frozenset)

    @cached_property
    def noise(self) -> list[int]:
        """DBSCAN noise per class, shape (n_classes,)."""
        return page_actions.noise_per_class(self.data, self.state)

    @cached_property
    def counts(self) -> list[dict]:
        """Per-class count rows, the total last (:func:`~app.curate.page_actions.class_counts`)."""
        return page_actions.class_counts(self.data, self.state)


def changed(new, old):  # noqa: ANN001, ANN201 - any output's value
    """``new``, or ``no_update`` where the page shows it already."""
    return no_update if new == old else new


def wire(value):  # noqa: ANN001, ANN201 - any output's value
    """``value`` as the browser receives it: a Patch as its operations.

    Why: Dash hands a response to orjson whole only when every value in it is plain JSON;
    one Patch (an object) makes Plotly's encoder walk every list element in Python
    instead, most of the server's time on a class switch (docs/benchmarks.md).
    """
    return value.to_plotly_json() if isinstance(value, Patch) else value


def register(parts: dict[str, ModuleType]) -> None:
    """The render callback over ``parts`` (name → component module), for the page module
    to call as Dash imports it."""
    def on_render(class_value, _changes, run_id, shown, shown_rev, states):
        root = settings().runs_root
        data = run_data(root, run_id)
        state = current_state(data)
        code = code_of(class_value)
        change = changes.fired(ctx.triggered_prop_ids)
        picked = CLASS_PICK in ctx.triggered_prop_ids.values()
        view = PageRequest(root, run_id, data, state, code, shown,
                    switched=shown != ("all" if code is None else code),
                    # A new revision (the first paint, or one stored before a class
                    # switch), or an answer that may have refused what the browser drew.
                    stored=change or state.revision != shown_rev,
                    fired=frozenset(name for name, yes in (("change", change),
                                                           ("class", picked)) if yes))
        return {"shown": changed("all" if code is None else code, shown),
                "shown_rev": changed(state.revision, shown_rev),
                "parts": {name: {key: wire(value)
                                 for key, value in part.render(view, states[name]).items()}
                          for name, part in parts.items()}}

    callback(
        output={"shown": Output(SHOWN, "data"), "shown_rev": Output(SHOWN_REV, "data"),
                "parts": {name: part.OUTPUTS for name, part in parts.items()}},
        inputs={"class_value": Input(CLASS_PICK, "data"),
                "_changes": Input(changes.CHANGES, "data"),
                "run_id": State(RUN, "data"), "shown": State(SHOWN, "data"),
                "shown_rev": State(SHOWN_REV, "data"),
                "states": {name: part.STATES for name, part in parts.items()}},
    )(on_render)
