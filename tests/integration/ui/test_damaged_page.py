"""A run damaged while its Curate page is open says why on the page, in
real headless Chromium against a real ``curator serve``: the class switch drawn by the
server and the one the browser fetches ahead both name the file and what to do."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.by import By

from app.ids import PAGE_ERROR
from bench.browser import (
    Server,
    browser_marks,
    chrome,
    class_cell,
    pick_class,
    trace_markers,
    wait_for,
)

pytestmark = browser_marks()


def _truncate(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _store_garbage(path) -> None:
    path.write_bytes(b"this is not a database" * 100)
    for extra in ("-wal", "-shm"):
        path.with_name(path.name + extra).unlink(missing_ok=True)


# What is done to the open run, and what the page's line must name.
DAMAGE = {
    "truncated": (lambda run: _truncate(run / "embedding.npy"), "embedding.npy is damaged"),
    "missing": (lambda run: (run / "embedding.npy").unlink(), "has no embedding yet"),
    "store": (lambda run: _store_garbage(run / "curation.sqlite"), "curation.sqlite"),
}


@pytest.fixture(scope="module")
def damage_root(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("damage") / "runs"
    for name in DAMAGE:
        shutil.copytree(digits_run.path, root / name)
    shutil.copytree(digits_run.path, root / "ahead")
    return root


@pytest.fixture(scope="module")
def page(damage_root):
    server, driver = Server(damage_root), chrome()
    yield server, driver
    driver.quit()
    server.stop()


def _problem(driver) -> str:
    el = driver.find_element(By.ID, PAGE_ERROR)
    return el.text if el.is_displayed() else ""


def _open(driver, server, run: str) -> None:
    driver.get(f"{server.url}/curate/{run}")
    wait_for(lambda: trace_markers(driver))
    assert _problem(driver) == ""


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_class_switch_on_a_damaged_run_says_why(page, damage_root, case):
    server, driver = page
    _open(driver, server, case)
    damage, words = DAMAGE[case]
    damage(damage_root / case)
    pick_class(driver, 3)
    line = wait_for(lambda: _problem(driver), timeout=60)
    assert words in line and "\n" not in line, line
    # The reason goes with the page: another page starts without it.
    driver.find_element(By.LINK_TEXT, "Runs").click()
    wait_for(lambda: _problem(driver) == "" and "/curate/" not in driver.current_url)


def test_a_class_fetched_ahead_from_a_damaged_run_says_why(page, damage_root):
    """The browser fetches a class's trace while the pointer rests on its row
    (assets/class_map.js): that answer's reason is shown too, before any click."""
    from selenium.webdriver.common.action_chains import ActionChains

    server, driver = page
    _open(driver, server, "ahead")
    _truncate(damage_root / "ahead" / "embedding.npy")
    ActionChains(driver).move_to_element(class_cell(driver, 5)).perform()
    line = wait_for(lambda: _problem(driver), timeout=60)
    assert "embedding.npy is damaged" in line, line
