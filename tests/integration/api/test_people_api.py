"""The people who may use the app, from Python: ``tc.tokens``, ``tc.add_token`` and
``tc.revoke_token`` keep the same token file as ``curator token`` (hashes only), and a bad
request is one InputError line."""

from __future__ import annotations

import pytest

import tsne_curator as tc
from worker.people import person_for


def test_tokens_are_added_listed_and_revoked_as_the_command_does(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    assert tc.tokens(root).empty and list(tc.tokens(root).columns) == [
        "name", "role", "created", "revoked"]
    token = tc.add_token(root, "vera", "viewer")
    assert person_for(root, token, "").role == "viewer"
    assert token not in (root / ".curator-tokens.json").read_text()  # only its hash
    assert tc.revoke_token(root, "vera") == 1
    listed = tc.tokens(root)
    assert listed["name"].tolist() == ["vera"] and listed["revoked"].iloc[0] != ""
    assert person_for(root, token, "") is None


@pytest.mark.parametrize("call, line", [
    (lambda root: tc.add_token(root, "ana", "boss"), "no role 'boss': use viewer, reviewer "
                                                      "or admin"),
    (lambda root: tc.add_token(root, "admin"), "name 'admin' is taken: "),
    (lambda root: tc.add_token(root, "a b"), "name 'a b': use 1 to 64 letters"),
    (lambda root: tc.revoke_token(root, "nobody"), "no live token for 'nobody': "),
])
def test_a_bad_request_is_one_line(tmp_path, call, line):
    root = tmp_path / "runs"
    root.mkdir()
    with pytest.raises(tc.InputError) as err:
        call(root)
    assert str(err.value).startswith(line) and "\n" not in str(err.value)
