"""The Curate page in real headless Chromium against a real ``curator serve`` and copies of
the digits run: pages load without console errors, the page store is the one model,
two tabs keep each other's changes, the map and the review list share one screen, the
token is required everywhere, and ``curator serve`` prints the Curate URL."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    Server,
    browser_marks,
    chrome,
    decide,
    focused_sample,
    grid_rows,
    lasso_middle,
    listed_classes,
    listed_of_class,
    marker_of,
    pick_class,
    trace_markers,
    wait_for,
)
from tests.integration.ui.conftest import open_run, severe_errors
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()


def test_pages_load_without_console_errors(driver, server):
    driver.get_log("browser")
    for path in ("/", "/jobs", "/curate/load"):
        driver.get(server.url + path)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "h4"))
    open_run(driver, server, "load")
    wait_for(lambda: listed_classes(driver)[:2] == ["All classes", "0"])  # class list drawn
    assert severe_errors(driver) == []
    # The map's toolbar offers nothing that uploads it ("Share chart…" to Plotly's cloud).
    titles = wait_for(lambda: driver.execute_script(
        "return [...document.querySelectorAll('#curate-graph .modebar-btn')]"
        ".map(b => b.getAttribute('data-title'))"))
    assert "Zoom" in " ".join(titles) and not [t for t in titles if "Share" in t], titles
    driver.get(server.url + "/curate/no-such-run")
    assert wait_for(lambda: "no run 'no-such-run' in the runs root" in driver.page_source
                    or "invalid run id" in driver.page_source)


# The window globals the Curate page's scripts shared before they had one store
# (assets/00-curate-store.js), and the debug hooks.
OLD_GLOBALS = ("curateDebug", "curateMap", "curateClassList", "curateReview",
               "curateMapSelection", "curateKeys")


STORE = "const s = window.curateStore.get(); s.selection = s.selection && [...s.selection]; " \
        "return s;"


def test_the_page_store_is_the_one_model_and_production_has_no_hooks(driver, digits_run,
                                                                     tmp_path_factory):
    """Served as in production (no CURATOR_DEBUG_HOOKS): no debug script and none of the old
    globals are on the page, yet it works, and its one store (window.curateStore) holds
    what the page shows: the picked and shown class and revision, the draft of an eps
    drag and then its stored value, the map's selection and the focused row."""
    from app.run_data import run_data

    root = tmp_path_factory.mktemp("store") / "runs"  # its own: the module root keeps 16 runs
    shutil.copytree(digits_run.path, root / "store")
    store = CurationStore(root / "store" / "curation.sqlite")
    srv = Server(root, env={"CURATOR_DEBUG_HOOKS": "0"})
    try:
        driver.get_log("browser")  # what earlier tests left
        open_run(driver, srv, "store")
        assert driver.execute_script(
            "return arguments[0].filter((name) => name in window)", list(OLD_GLOBALS)) == []
        assert not driver.find_elements(By.CSS_SELECTOR, "script[src*='curate_debug']")
        pick_class(driver, 3)
        members = run_data(root, "store").members[3].tolist()
        wait_for(lambda: trace_markers(driver)["customdata"] == members)
        wait_for(lambda: (lambda s: s["pick"] == s["shown"] == 3
                          and s["revision"] == store.revision())(
            driver.execute_script(STORE)))
        # A drag of eps: the store's draft is what the map draws and the slider shows.
        stored = store.class_params()[3]
        thumb = driver.find_element(By.CSS_SELECTOR, "#curate-eps-slider [role=slider]")
        ActionChains(driver).click_and_hold(thumb).move_by_offset(-30, 0).perform()
        draft = wait_for(lambda: driver.execute_script(STORE)["draft"])
        wait_for(lambda: abs(float(thumb.get_attribute("aria-valuenow"))
                             - driver.execute_script(STORE)["draft"]["eps"]) < 1e-9)
        assert draft["class"] == 3 and draft["painted"] and draft["eps"] < stored[0]
        assert draft["base_revision"] == store.revision()  # nothing stored yet
        ActionChains(driver).release().perform()
        wait_for(lambda: store.class_params()[3][0] < stored[0])
        eps, revision = store.class_params()[3][0], store.revision()
        s = wait_for(lambda: (lambda s: s["revision"] == revision and s)(
            driver.execute_script(STORE)))
        assert s["shown"] == 3 and abs(s["draft"]["eps"] - eps) < 1e-9
        assert s["draft"]["base_revision"] == revision - 1
        wait_for(lambda: abs(float(driver.find_element(By.ID, "curate-eps-input")
                                   .get_attribute("value")) - eps) < 1e-4)
        # The review list's focused row, and the map's selection.
        wait_for(lambda: grid_rows(driver))
        driver.find_element(By.TAG_NAME, "body").send_keys("j")
        sample = wait_for(lambda: focused_sample(driver))
        wait_for(lambda: driver.execute_script(STORE)["focus"] == sample)
        selected = set(lasso_middle(driver))
        wait_for(lambda: set(driver.execute_script(STORE)["selection"] or []) == selected)
        wait_for(lambda: {r["sample"] for r in grid_rows(driver)} <= selected)
        assert severe_errors(driver) == []
    finally:
        srv.stop()


def test_two_tabs_keep_each_others_changes(driver, server, ui_root):
    """Tab B re-clusters in the browser from a model that predates tab A's override: the
    server sees the store moved on and repaints B with A's override; both changes stay."""
    store = CurationStore(ui_root / "tabs" / "curation.sqlite")
    first = driver.current_window_handle
    open_run(driver, server, "tabs")
    driver.switch_to.new_window("tab")
    second = driver.current_window_handle
    open_run(driver, server, "tabs")

    try:
        listed = listed_of_class(driver)
        a, b = listed[0], listed[-1]
        driver.switch_to.window(first)
        decide(driver, a, "a")
        wait_for(lambda: a in store.overrides())
        decision_a = store.overrides()[a]
        want_a = ("diamond", "#1a9e3a") if decision_a == "keep" else ("x", "#d62728")
        driver.switch_to.window(second)  # still shows the store before A's click
        assert marker_of(driver, a) != want_a
        box = driver.find_element(By.ID, "curate-eps-input")
        eps = round(float(box.get_attribute("value")) * 0.8, 4)
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(eps), Keys.ENTER)
        wait_for(lambda: store.class_params()[0][0] == eps)
        wait_for(lambda: marker_of(driver, a) == want_a)  # the server repainted B
        decide(driver, b, "d")
        wait_for(lambda: b in store.overrides())
        assert set(store.overrides()) == {a, b} and store.class_params()[0][0] == eps
        driver.switch_to.window(first)
        driver.refresh()
        open_run(driver, server, "tabs")
        assert marker_of(driver, a) == want_a and marker_of(driver, b)[0] in ("diamond", "x")
        assert driver.find_element(By.ID, "curate-eps-input").get_attribute("value") == str(eps)
    finally:
        driver.switch_to.window(second)
        driver.close()
        driver.switch_to.window(first)


@pytest.mark.parametrize("size", [(1366, 768), (1440, 900)])
def test_map_and_review_list_share_one_screen(server, size):
    """At 1366×768 and 1440×900 the map and the review list sit side by side, both in the
    window, with Summary, Versions, Export and Retrain in view; nothing scrolls sideways."""
    small = chrome(*size)
    try:
        open_run(small, server, "load")
        wait_for(lambda: grid_rows(small))
        boxes = small.execute_script("""
            const box = (id) => document.getElementById(id).getBoundingClientRect();
            const tabs = Array.from(document.querySelectorAll('#curate-tabs .nav-link'))
              .map((t) => [t.textContent, t.getBoundingClientRect().bottom]);
            return {graph: box('curate-graph'), grid: box('review-grid'), tabs,
                    inner: [window.innerWidth, window.innerHeight],
                    scroll: document.documentElement.scrollWidth};""")
        graph, grid, (width, height) = boxes["graph"], boxes["grid"], boxes["inner"]
        assert graph["right"] <= grid["left"], boxes  # side by side
        assert graph["bottom"] <= height and grid["top"] < height - 200, boxes
        assert graph["height"] >= 340 and graph["width"] >= 380, boxes
        assert [t for t, _ in boxes["tabs"]] == ["Review list", "Summary", "Versions", "Export",
                                                 "Retrain"]
        assert all(bottom < height for _, bottom in boxes["tabs"]), boxes
        assert boxes["scroll"] <= width, boxes
    finally:
        small.quit()


def test_a_tab_built_on_opening_keeps_what_was_typed(driver, server):
    """Export and Retrain are not on the page until first opened (fewer mounted
    components on every class switch); once built they stay, with what the user typed."""
    open_run(driver, server, "export")
    assert not driver.find_elements(By.ID, "export-name")  # not built yet

    def open_tab(title: str) -> None:
        tab = driver.find_element(By.LINK_TEXT, title)
        driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)

    def shown_name():
        found = driver.find_elements(By.ID, "export-name")
        return found[0] if found and found[0].is_displayed() else None

    open_tab("Export")
    wait_for(shown_name).send_keys("typed-before")
    wait_for(lambda: shown_name().get_attribute("value") == "typed-before")
    open_tab("Review list")
    wait_for(lambda: shown_name() is None)
    open_tab("Export")
    assert wait_for(shown_name).get_attribute("value") == "typed-before"
    assert not severe_errors(driver)


def test_token_is_required_everywhere(ui_root):
    srv = Server(ui_root, env={"CURATOR_AUTH_TOKEN": "s3cret"})
    try:
        for path in ("/", "/curate/load", "/thumb/load/0.png", "/_dash-layout",
                     "/download/load/exports/x/manifest.csv"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(srv.url + path)
            assert err.value.code == 401
        ok = urllib.request.urlopen(srv.url + "/thumb/load/0.png?token=s3cret")
        assert ok.status == 200 and ok.headers["Content-Type"] == "image/png"
        req = urllib.request.Request(srv.url + "/", headers={"Authorization": "Bearer s3cret"})
        assert urllib.request.urlopen(req).status == 200
        # A bad run id or a path outside the runs root is a 404, never a file.
        for path in ("/thumb/..%2F..%2Fetc/0.png", "/download/load/exports/..%2F..%2F/run.json"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(srv.url + path + "?token=s3cret")
            assert err.value.code == 404
    finally:
        srv.stop()


def test_serve_prints_the_curate_url_of_the_demo_run(driver, tmp_path, digits_run):
    """`make run` ends in `curator serve`: the URL it prints opens the demo's Curate page."""
    root = tmp_path / "runs"
    shutil.copytree(digits_run.path, root / "demo")
    srv = Server(root)
    try:
        log = (root.parent / f"serve-{srv.port}.log").read_text()
        url = next(ln.split(": ", 1)[1] for ln in log.splitlines()
                   if ln.startswith("curate demo: "))
        assert url == f"{srv.url}/curate/demo"
        driver.get(url)
        wait_for(lambda: trace_markers(driver))
    finally:
        srv.stop()
