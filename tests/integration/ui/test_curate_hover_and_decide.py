"""The map's pointer on the Curate page, in real headless Chromium against a real
``curator serve``: hover shows the image, a click's override survives a reload and undo
reverts it, and a lasso drops what it encloses."""

from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    browser_marks,
    decide,
    lasso_middle,
    listed_of_class,
    marker_of,
    point_position,
    shown_text,
    trace_markers,
    wait_for,
)
from tests.integration.ui.conftest import move_to, open_run
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()


def test_hover_shows_the_image(driver, server):
    open_run(driver, server, "hover")
    sample = trace_markers(driver)["customdata"][0]
    x, y = point_position(driver, sample)
    move_to(driver, x, y)
    img = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, ".hover-card img"))
    wait_for(lambda: driver.execute_script(
        "return arguments[0].complete && arguments[0].naturalWidth > 0", img))
    card = shown_text(driver.find_element(By.CSS_SELECTOR, ".hover-card"))
    # Why it is kept or dropped, in the reviewer's words.
    assert "nearest neighbours are labelled" in card and "DBSCAN: " in card
    assert "5 nearest:" in card and "score " in card
    # The rightmost point's card opens to its left, the lowest point's is lifted: with its
    # facts in, each stays inside the window, and the page does not scroll sideways.
    for axis, extreme in (("x", "max"), ("y", "min")):
        edge = driver.execute_script(
            "const g = document.querySelector('#curate-graph .js-plotly-plot')._fullData[1];"
            "const v = Array.from(g[arguments[0]]);"
            "return g.customdata[v.indexOf(Math[arguments[1]](...v))];", axis, extreme)
        move_to(driver, *point_position(driver, edge))
        wait_for(lambda e=edge: f"#{e} ·" in driver.find_element(
            By.CSS_SELECTOR, ".hover-card").text)

        def placed():  # the card is placed again once the facts have changed its size
            box = driver.execute_script(
                "const r = document.querySelector('.hover-box').getBoundingClientRect(),"
                "      v = document.documentElement;"
                "return [r.left, r.right, r.top, r.bottom, v.clientWidth, v.clientHeight,"
                "        v.scrollWidth];")
            left, right_edge, top, bottom, width, height, scroll_width = box
            return (0 <= left and right_edge <= width and scroll_width <= width
                    and 0 <= top and bottom <= height)

        wait_for(placed, timeout=5)
    # Off the points, the card closes.
    move_to(driver, 2, 2)
    wait_for(lambda: not driver.find_element(By.CSS_SELECTOR, ".hover-box").is_displayed())


def test_click_override_survives_reload_and_undo_reverts(driver, server, ui_root):
    """A clicked point scrolls the review list to its row and focuses it; a key decides it.
    The decision is drawn, survives a reload, and Ctrl+Z / Redo take it back and forth."""
    store = CurationStore(ui_root / "click" / "curation.sqlite")
    open_run(driver, server, "click")
    listed = listed_of_class(driver)
    clicked = listed[len(listed) // 2]
    decide(driver, clicked, "a")
    wait_for(lambda: store.overrides() == {clicked: "keep"})
    want, colour = "diamond", "#1a9e3a"

    wait_for(lambda: marker_of(driver, clicked) == (want, colour))
    driver.refresh()
    open_run(driver, server, "click")
    assert marker_of(driver, clicked) == (want, colour)  # persisted, drawn after a reload
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
    wait_for(lambda: store.overrides() == {})
    wait_for(lambda: marker_of(driver, clicked) != (want, colour))
    driver.find_element(By.ID, "curate-redo").click()
    wait_for(lambda: store.overrides() == {clicked: "keep"})


def test_lasso_then_drop(driver, server, ui_root):
    store = CurationStore(ui_root / "lasso" / "curation.sqlite")
    open_run(driver, server, "lasso")
    lasso_middle(driver)
    driver.find_element(By.ID, "curate-drop").click()
    overrides = wait_for(lambda: store.overrides())
    assert len(overrides) >= 2 and set(overrides.values()) == {"drop"}
