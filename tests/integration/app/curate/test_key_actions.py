"""The Curate page's key actions (app/curate/key_actions.py) on a real run: a row added to
the table (a toy one, inside the test) reaches the scripts, the key help and the server with
no other edit, and the served table is the table."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from app.curate import key_actions as actions
from app.curate.key_actions import ACTIONS, Action, run_action
from app.run_data import current_state, run_data
from worker.settings import Settings


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


def _served_table(client) -> list[dict]:
    body = client.get("/ids.js", headers={"Host": "127.0.0.1"}).get_data(as_text=True)
    return json.loads(re.search(r"CURATOR_ACTIONS = Object\.freeze\((.*)\);", body).group(1))


def test_a_new_row_reaches_the_scripts_the_help_and_the_server(root, monkeypatch):
    """A toy action, one row with its operation: /ids.js serves it, the key help lists it,
    and a key's request runs its operation, whose decision the review list's state shows."""
    from app.curate import Page, review_list
    from app.curate.page_actions import set_decision
    from app.server import create_app

    def op(runs_root, run_id, sample, key):
        return set_decision(runs_root, run_id, sample, "drop")

    toy = Action("toss", ("x",), "review", "toss it", operation=op)
    monkeypatch.setattr(actions, "ACTIONS", (*ACTIONS, toy))
    server = create_app(Settings(runs_root=root)).server
    served = {a["name"]: a for a in _served_table(server.test_client())}
    assert served["toss"] == {"name": "toss", "keys": ["x"], "scope": "review",
                              "target": None, "store": True, "labelFrom": None}
    with server.app_context():  # the layout reads the server's settings (the upload limit)
        assert "toss it" in str(review_list.layout(Page("r", ["a", "b"], {})))  # key help
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
