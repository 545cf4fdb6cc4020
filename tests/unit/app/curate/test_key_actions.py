"""The Curate page's key actions come from one table (app/curate/key_actions.py): the scripts get it
through /ids.js, one listener dispatches every key, the key help is made from it, and a
row added to it (here a toy one, inside the test) reaches all of them with no other edit."""

from __future__ import annotations

import re

from app.curate.key_actions import ACTIONS
from tests.conftest import ROOT

ASSETS = ROOT / "assets"


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
