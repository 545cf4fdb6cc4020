"""The Curate page's key actions come from one table (app/curate/key_actions.py): the scripts get it
through /ids.js, one listener dispatches every key, the key help is made from it, and a
row added to it (here a toy one, inside the test) reaches all of them with no other edit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from app.curate import key_actions as actions
from app.curate.key_actions import ACTIONS, Action, run_action
from app.run_data import current_state, run_data
from worker.settings import Settings

ASSETS = Path(__file__).resolve().parents[2] / "assets"


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


def _served_table(client) -> list[dict]:
    body = client.get("/ids.js", headers={"Host": "127.0.0.1"}).get_data(as_text=True)
    return json.loads(re.search(r"CURATOR_ACTIONS = Object\.freeze\((.*)\);", body).group(1))


def test_every_key_is_one_action_and_every_store_action_has_its_operation():
    keys = [k for a in ACTIONS for k in a.keys]
    assert len(keys) == len(set(keys)), keys
    assert len({a.name for a in ACTIONS}) == len(ACTIONS)
    for a in ACTIONS:
        assert a.scope in ("review", "press", "params"), a
        assert (a.scope == "press") == (a.target is not None), a
        assert all(re.fullmatch(r"(Ctrl\+)?(Shift\+)?([a-z]|Enter)", k) for k in a.keys), a
    assert {a.name for a in ACTIONS if a.operation} == {"keep", "drop", "relabel",
                                                        "keep_member", "drop_island",
                                                        "keep_island"}


def test_one_script_listens_for_keys():
    """assets/keyboard.js is the page's only keydown listener; the others provide a
    handler for their scope, the page store's action "key:<scope>"."""
    listening = [s.name for s in ASSETS.glob("*.js") if "keydown" in s.read_text()]
    assert listening == ["keyboard.js"], listening
    scopes = {a.scope for a in ACTIONS} - {"press"}  # keyboard.js's own
    registered = {m for s in ASSETS.glob("*.js")
                  for m in re.findall(r'provide\("key:(\w+)"', s.read_text())}
    assert scopes == registered, (scopes, registered)


def test_a_new_row_reaches_the_scripts_the_help_and_the_server(root, monkeypatch):
    """A toy action, one row with its operation: /ids.js serves it, the key help lists it,
    and a key's request runs its operation, whose decision the review list's state shows."""
    from app.curate import Page, review_list
    from app.curate.logic import set_decision
    from app.server import create_app

    def op(runs_root, run_id, sample, key):
        return set_decision(runs_root, run_id, sample, "drop")

    toy = Action("toss", ("x",), "review", "toss it", operation=op)
    monkeypatch.setattr(actions, "ACTIONS", (*ACTIONS, toy))
    client = create_app(Settings(runs_root=root)).server.test_client()
    served = {a["name"]: a for a in _served_table(client)}
    assert served["toss"] == {"name": "toss", "keys": ["x"], "scope": "review",
                              "target": None, "store": True, "labelFrom": None}
    assert "toss it" in str(review_list.layout(Page("r", ["a", "b"], {})))  # the key help
    data = run_data(root, "digits")
    sample = int(np.flatnonzero(current_state(data).decisions.kept)[0])
    run_action(root, "digits", {"sample": sample, "action": "toss"})
    state = current_state(data)
    assert state.overrides.get(sample) == "drop"
    from app.curate.review_queue import row_states

    assert row_states(state, np.array([sample])) == ["dropped"]


def test_the_served_table_is_the_table(root):
    from app.server import create_app

    client = create_app(Settings(runs_root=root)).server.test_client()
    assert _served_table(client) == [a.client() for a in ACTIONS]
