"""People and roles on the Curate page, in real headless Chromium against a real
``curator serve`` whose runs root holds three people's tokens (``curator token add``): a
viewer's keep is refused with a clear line and nothing changes; a reviewer's keep is
stored and signed with their name, their retrain refused; an admin's decision is signed
with theirs; two reviewers in two browsers see each other's decisions; a revoked token
stops working at the next request."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from selenium.webdriver.common.by import By

from bench.browser import (
    browser_marks,
    chrome,
    curator_cmd,
    focus_row,
    focused_sample,
    grid_rows,
    open_review_list,
    served,
    wait_for,
)
from worker.people import add_token
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.decision_log import last_decision, sample_history

pytestmark = browser_marks()


@pytest.fixture(scope="module")
def roles_root(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("roles") / "runs"
    shutil.copytree(digits_run.path, root / "roles")
    return root


@pytest.fixture(scope="module")
def tokens(roles_root):
    return {role: add_token(roles_root, name, role)
            for name, role in (("vera", "viewer"), ("rui", "reviewer"), ("ada", "admin"))}


@pytest.fixture(scope="module")
def page(roles_root, tokens):
    with served(roles_root) as both:
        yield both


def _store(roles_root) -> CurationStore:
    return CurationStore(roles_root / "roles" / "curation.sqlite")


def _press_on_first_row(d, url: str, key: str) -> int:
    """Open the page as the token in ``url``, focus the list's first row, press ``key``;
    returns the row's sample."""
    open_review_list(d, url)
    focus_row(d, 0)
    sample = wait_for(lambda: focused_sample(d))
    d.find_element(By.TAG_NAME, "body").send_keys(key)
    return sample


def _alert(d) -> str:
    el = d.find_element(By.ID, "curate-alert-line")
    return el.text if el.is_displayed() else ""


def test_each_role_is_allowed_and_refused_on_the_server(page, roles_root, tokens):
    srv, d = page
    url = f"{srv.url}/curate/roles?token="
    store = _store(roles_root)

    _press_on_first_row(d, url + tokens["viewer"], "a")
    line = wait_for(lambda: _alert(d))
    assert line.startswith("vera is a viewer here and cannot keep, drop, relabel or "
                           "re-cluster: ask an admin for a token with the reviewer role")
    assert store.overrides() == {} and store.history()[0]["pipeline"]

    sample = _press_on_first_row(d, url + tokens["reviewer"], "a")
    wait_for(lambda: store.overrides().get(sample) == "keep")
    assert last_decision(store, sample).author == "rui"
    tab = d.find_element(By.LINK_TEXT, "Retrain")
    d.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)
    plan = wait_for(lambda: d.find_element(By.ID, "train-plan-text"), timeout=60)
    wait_for(lambda: plan.text)  # the tab fades in: hidden text reads as ""
    d.execute_script("arguments[0].scrollIntoView(); arguments[0].click();",
                     d.find_element(By.ID, "train-go"))
    wait_for(lambda: "rui is a reviewer here and cannot retrain: ask an admin for a token "
             "with the admin role" in d.find_element(By.ID, "train-status").text)
    assert not (roles_root / "roles" / "train").exists()

    # The admin drops the same sample: the later decision stands, signed with their name.
    assert _press_on_first_row(d, url + tokens["admin"], "d") == sample
    wait_for(lambda: store.overrides().get(sample) == "drop")
    assert last_decision(store, sample).author == "ada"


def test_a_revoked_token_stops_working_at_the_next_request(page, roles_root, tokens):
    srv, d = page
    open_review_list(d, f"{srv.url}/curate/roles?token={tokens['reviewer']}")
    subprocess.run([*curator_cmd(), "token", "revoke", "rui", "--runs-root", str(roles_root)],
                   check=True, capture_output=True)
    d.get(f"{srv.url}/curate/roles")  # the cookie still holds rui's token
    wait_for(lambda: "needs an access token" in d.find_element(By.TAG_NAME, "body").text)


def test_two_reviewers_at_once_see_each_others_decisions(page, roles_root, tokens):
    """Two browsers on one run: each decision is stored as it is made; a second person's
    decision on the same sample stands, and the first sees whose it is, and that hers was
    replaced, at their next refresh; the history keeps both."""
    srv, first = page
    url = f"{srv.url}/curate/roles?token="
    ana, bo = add_token(roles_root, "ana", "reviewer"), add_token(roles_root, "bo", "reviewer")
    store = _store(roles_root)
    second = chrome()
    try:
        sample = _press_on_first_row(first, url + ana, "a")
        wait_for(lambda: store.overrides().get(sample) == "keep")
        assert _press_on_first_row(second, url + bo, "d") == sample
        wait_for(lambda: store.overrides().get(sample) == "drop")
        open_review_list(first, f"{srv.url}/curate/roles")  # ana's next refresh
        row = wait_for(lambda: next((r for r in grid_rows(first) if r["sample"] == sample
                                     and r["decided"].startswith("bo · ")), None))
        assert row["state"] == "dropped"
        # ana is told, on the page, that bo replaced her keep.
        told = first.find_element(By.ID, "curate-overridden").text
        assert f"#{sample}: your keep → drop by bo, " in told
        assert [(r["author"], r["after"]) for r in sample_history(store, sample)][-2:] == \
            [("ana", "keep"), ("bo", "drop")]
    finally:
        second.quit()
