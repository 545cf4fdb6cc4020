"""One store for the notebook and the browser: a decision made through
``tsne_curator`` shows on an open Curate page at its next refresh, a decision made on the
page shows in ``run.findings()``, and both share one undo history. Real ``curator serve``,
real headless Chromium, the digits run."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.by import By

import tsne_curator as tc
from bench.browser import (
    browser_marks,
    decide,
    listed_of_class,
    marker_of,
    served,
    status_text,
    trace_markers,
    wait_for,
)

pytestmark = browser_marks()
DROPPED = ("x", "#d62728")  # how the map draws a person's drop (app/curate/figures.py)
KEPT = ("diamond", "#1a9e3a")  # and a person's keep


@pytest.fixture(scope="module")
def page(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("notebook") / "runs"
    shutil.copytree(digits_run.path, root / "nb")
    with served(root) as (srv, driver):
        yield srv, driver, tc.open(root / "nb")


def _open(srv, driver) -> None:
    driver.get(f"{srv.url}/curate/nb")
    wait_for(lambda: trace_markers(driver))
    wait_for(lambda: "kept" in status_text(driver))


def _decision(run: tc.Run, sample: int) -> tuple[str, str]:
    """``run.findings()``'s decision and reason for ``sample``'s label row."""
    df = run.findings()
    row = df[(df["index"] == sample) & (df["kind"].isin(["label", ""]))]
    return tuple(row[["decision", "reason"]].iloc[0])


def test_notebook_and_page_see_each_others_decisions_and_undo(page):
    srv, driver, run = page
    _open(srv, driver)
    listed = listed_of_class(driver)
    a, b = listed[0], listed[-1]
    before = {s: marker_of(driver, s) for s in (a, b)}
    assert DROPPED not in before.values() and KEPT not in before.values()
    assert _decision(run, a)[0] == "dropped" and _decision(run, b)[0] == "dropped"  # flags

    # Notebook → page: the drop is drawn at the page's next refresh.
    assert run.drop([a]) == 1
    driver.refresh()
    _open(srv, driver)
    wait_for(lambda: marker_of(driver, a) == DROPPED)

    # Page → notebook: a keep pressed on the map is in the next findings() call.
    decide(driver, b, "a")
    wait_for(lambda: _decision(run, b) == ("kept", "override_keep"))
    assert _decision(run, a) == ("dropped", "override_drop")

    # One undo history: the notebook's undo takes back the page's keep ...
    assert run.undo() is not None
    assert _decision(run, b)[1] != "override_keep"
    driver.refresh()
    _open(srv, driver)
    wait_for(lambda: marker_of(driver, b) == before[b])
    assert marker_of(driver, a) == DROPPED
    # ... and the page's Undo then takes back the notebook's drop.
    driver.find_element(By.ID, "curate-undo").click()
    wait_for(lambda: _decision(run, a)[1] != "override_drop")
    wait_for(lambda: marker_of(driver, a) == before[a])
