"""People and roles (worker/people.py): tokens kept hashed in the runs root, each naming a
person and a role; a revoked token is no one at once; each role may do what ALLOWED says
and is refused the rest in one line."""

from __future__ import annotations

import json

import pytest

from worker.people import (
    ALLOWED,
    ROLES,
    Person,
    add_token,
    person_for,
    records,
    revoke_token,
    tokens_path,
    tokens_required,
)
from worker.pipeline.errors import InputError


def test_a_token_names_its_person_and_is_kept_only_hashed(tmp_path):
    assert not tokens_required(tmp_path, "")
    token = add_token(tmp_path, "ana", "reviewer")
    assert tokens_required(tmp_path, "")
    assert person_for(tmp_path, token, "") == Person("ana", "reviewer")
    assert person_for(tmp_path, token + "x", "") is None and person_for(tmp_path, "", "") is None
    kept = tokens_path(tmp_path).read_text()
    assert token not in kept and json.loads(kept)[0]["name"] == "ana"
    assert tokens_path(tmp_path).stat().st_mode & 0o777 == 0o600


def test_the_one_admin_token_still_works(tmp_path):
    assert tokens_required(tmp_path, "s3cret")
    assert person_for(tmp_path, "s3cret", "s3cret") == Person("admin", "admin")
    assert person_for(tmp_path, "other", "s3cret") is None


def test_a_revoked_token_is_no_one_at_once(tmp_path):
    token = add_token(tmp_path, "ben", "viewer")
    assert revoke_token(tmp_path, "ben") == 1
    assert person_for(tmp_path, token, "") is None
    assert tokens_required(tmp_path, "")  # the last one revoked: still no open door
    assert records(tmp_path)[0].revoked_at
    again = add_token(tmp_path, "ben", "admin")  # a new token after a revoke
    assert person_for(tmp_path, again, "") == Person("ben", "admin")


@pytest.mark.parametrize("call, match", [
    (lambda root: add_token(root, "a b", "viewer"), "1 to 64 letters"),
    (lambda root: add_token(root, "", "viewer"), "1 to 64 letters"),
    (lambda root: add_token(root, "cho", "owner"), "no role 'owner'"),
    (lambda root: revoke_token(root, "zed"), "no live token for 'zed'"),
    (lambda root: add_token(root, "admin", "reviewer"), "'admin' is taken"),
    (lambda root: add_token(root, "Pipeline", "viewer"), "'Pipeline' is taken"),
])
def test_a_bad_token_request_is_one_line(tmp_path, call, match):
    with pytest.raises(InputError, match=match) as e:
        call(tmp_path)
    assert "\n" not in str(e.value)


def test_a_name_with_a_live_token_gets_no_second(tmp_path):
    add_token(tmp_path, "ana", "viewer")
    with pytest.raises(InputError, match="already has a token"):
        add_token(tmp_path, "ana", "admin")


def test_each_role_may_do_what_allowed_says_and_no_more():
    for role in ROLES:
        person = Person("p", role)
        for action, least in ALLOWED.items():
            allowed = ROLES.index(role) >= ROLES.index(least)
            assert person.may(action) is allowed
            if not allowed:
                with pytest.raises(InputError, match=f"p is a {role} here and cannot"):
                    person.require(action)


def test_a_damaged_token_file_is_one_line(tmp_path):
    tokens_path(tmp_path).write_text("{not json")
    with pytest.raises(InputError, match="is damaged"):
        records(tmp_path)
