"""The Curate page's browser tests (``test_curate_*.py``): a runs root of copies of the
digits run, one per test that changes its run, served by a real ``curator serve`` to one
headless Chromium, built once per test file."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.actions.action_builder import ActionBuilder

from bench.browser import Server, chrome, status_text, trace_markers, wait_for

# One run per test that changes its run, so that the tests of a file share one server and
# one browser but never each other's decisions.
RUN_NAMES = ("load", "eps", "hover", "click", "lasso", "export", "retrain", "gallery",
             "parity", "drag", "tabs", "relabel", "triage", "filter", "switch", "ahead",
             "proposed")


@pytest.fixture(scope="module")
def ui_root(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("ui") / "runs"
    for name in RUN_NAMES:
        shutil.copytree(digits_run.path, root / name)
    return root


@pytest.fixture(scope="module")
def server(ui_root):
    srv = Server(ui_root)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def driver():
    d = chrome()
    yield d
    d.quit()


def open_run(driver, server, run: str) -> None:
    """Open ``run``'s Curate page and wait until its map and its counts are drawn. A run's
    first page reads its arrays and draws its figures cold, beside the other pytest
    worker's jobs and trainings on a 2-core machine: the map and its counts get a minute,
    not 20 s."""
    driver.get(f"{server.url}/curate/{run}")
    wait_for(lambda: trace_markers(driver), timeout=60)
    wait_for(lambda: "kept" in status_text(driver), timeout=60)


def severe_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def move_to(driver, x: float, y: float) -> None:
    """Move the pointer to the page point (x, y), as a mouse does."""
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y))
    actions.perform()
