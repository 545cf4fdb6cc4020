"""The Dash app in real headless Chromium against a real ``curator serve`` and a real run."""

from __future__ import annotations

import csv
import json
import shutil
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from tests.integration.browser import (
    Server,
    browser_marks,
    chrome,
    listed_classes,
    pick_class,
    point_position,
    status_text,
    trace_markers,
    wait_for,
)
from worker.pipeline.dbscan import dbscan_once, sklearn_dbscan
from worker.pipeline.store import CurationStore

pytestmark = browser_marks()
RUN_NAMES = ("load", "eps", "hover", "click", "lasso", "export", "retrain", "gallery",
             "parity", "drag", "tabs", "relabel", "triage", "filter")


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


def _open(driver, server, run: str) -> None:
    driver.get(f"{server.url}/curate/{run}")
    wait_for(lambda: trace_markers(driver))
    wait_for(lambda: "kept" in status_text(driver))


def _severe_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _move_to(driver, x: float, y: float) -> None:
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y))
    actions.perform()


def _click_at(driver, x: float, y: float) -> None:
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y)).click()
    actions.perform()


def test_pages_load_without_console_errors(driver, server):
    driver.get_log("browser")
    for path in ("/", "/jobs", "/curate/load"):
        driver.get(server.url + path)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "h4"))
    _open(driver, server, "load")
    wait_for(lambda: listed_classes(driver)[:2] == ["All classes", "0"])  # class list drawn
    assert _severe_errors(driver) == []
    # The map's toolbar offers nothing that uploads it ("Share chart…" to Plotly's cloud).
    titles = wait_for(lambda: driver.execute_script(
        "return [...document.querySelectorAll('#curate-graph .modebar-btn')]"
        ".map(b => b.getAttribute('data-title'))"))
    assert "Zoom" in " ".join(titles) and not [t for t in titles if "Share" in t], titles
    driver.get(server.url + "/curate/no-such-run")
    assert wait_for(lambda: "no run 'no-such-run' in the runs root" in driver.page_source
                    or "invalid run id" in driver.page_source)


def test_eps_change_repaints_counts_and_plot(driver, server, ui_root):
    _open(driver, server, "eps")
    before_status = status_text(driver)
    before = trace_markers(driver)
    box = driver.find_element(By.ID, "curate-eps-input")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("0.6", Keys.ENTER)
    def noise(text: str) -> int:
        return int(text.split(" DBSCAN noise")[0].rsplit("· ", 1)[1])

    wait_for(lambda: noise(status_text(driver)) > noise(before_status))
    # Noise the rule keeps changes colour (a pale dot), flagged noise also its symbol.
    after = wait_for(lambda: (m := trace_markers(driver)) and m["color"] != before["color"]
                     and m)
    assert after["customdata"] == before["customdata"]  # same points, only markers changed
    assert CurationStore(ui_root / "eps" / "curation.sqlite").class_params()[0][0] == 0.6
    thumb = driver.find_element(By.CSS_SELECTOR, "#curate-eps-slider [role=slider]")
    wait_for(lambda: thumb.get_attribute("aria-valuenow") == "0.6")  # the slider follows
    # A refused value: an alert in the page, the store unchanged, the box reset.
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("0", Keys.ENTER)
    alert = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#curate-alert .alert"))
    assert "eps must be" in alert[0].text
    wait_for(lambda: box.get_attribute("value") == "0.6")
    assert CurationStore(ui_root / "eps" / "curation.sqlite").class_params()[0][0] == 0.6


def test_browser_dbscan_equals_scikit_learn(driver, server):
    """assets/recluster.js's DBSCAN on awkward data: points exactly eps apart, duplicates,
    min_samples 1, an eps wider than every cluster."""
    _open(driver, server, "load")
    rng = np.random.default_rng(0)
    blobs = np.concatenate([rng.normal(c, 0.6, (150, 2)) for c in ((0, 0), (4, 1), (1, 5))]
                           + [rng.uniform(-3, 8, (60, 2))]).astype(np.float32)
    grid = np.stack(np.meshgrid(np.arange(12), np.arange(9)), -1).reshape(-1, 2) * 0.5
    lattice = np.concatenate([grid, grid[:20]]).astype(np.float32)  # 20 duplicates
    cases = [(blobs, 0.3, 5), (blobs, 0.8, 10), (blobs, 2.5, 3), (blobs, 0.05, 1),
             (lattice, 0.5, 5), (lattice, 0.5, 6), (lattice, 0.5 * 2 ** 0.5, 9),
             (lattice, 0.49, 2)]
    for points, eps, ms in cases:
        got = driver.execute_script(
            "return Array.from(window.curateDbscan(arguments[0], arguments[1], arguments[2],"
            " arguments[3]))", points[:, 0].tolist(), points[:, 1].tolist(), eps, ms)
        want = sklearn_dbscan(points.astype(np.float64), eps, ms)
        assert got == want.tolist(), (len(points), eps, ms)
        assert got == dbscan_once(points, eps, ms).tolist()


def test_browser_recluster_matches_the_server(driver, server, ui_root):
    """eps and min_samples changes are drawn in the browser before the server answers; the
    markers and counts must be exactly what the server stores and would draw, and the
    server must not repaint them a second time. The run uses the default rule, adaptive,
    whose bits differ from point to point, so the browser must look them up."""
    from app import curate_logic as logic
    from app.data import current_state, run_data
    from app.figures import SYMBOLS, marker_style
    from worker.pipeline.clustering import ALWAYS_FLAGGED, NOISE_FLAGGED, flag_bits

    store = CurationStore(ui_root / "parity" / "curation.sqlite")
    data = run_data(ui_root, "parity")
    assert current_state(data).rule == "adaptive"
    bits = flag_bits(data.inputs.take(data.members[0]), "adaptive", len(data.members[0]))
    # Some DBSCAN noise would stay and some points are flagged wherever they lie.
    assert (bits & NOISE_FLAGGED == 0).any() and (bits & ALWAYS_FLAGGED > 0).any()
    _open(driver, server, "parity")
    markers = trace_markers(driver)
    sample = markers["customdata"][len(markers["customdata"]) // 3]
    _click_at(driver, *point_position(driver, sample))  # an override the browser must draw
    wait_for(lambda: sample in store.overrides())
    time.sleep(0.5)  # the click's repaint and new model land
    driver.execute_script(
        "const gd = document.querySelector('#curate-graph .js-plotly-plot');"
        "window.paints = {restyle: 0, react: 0};"
        "gd.on('plotly_restyle', () => window.paints.restyle++);"
        "gd.on('plotly_react', () => window.paints.react++);")
    base = float(driver.find_element(By.ID, "curate-eps-input").get_attribute("value"))
    names = {v: k for k, v in SYMBOLS.items()}
    ms0 = store.class_params()[0][1]
    low, high = round(base * 0.7, 4), round(base * 1.3, 4)
    steps = [("curate-eps-input", low, (low, ms0)), ("curate-ms-input", 3, (low, 3)),
             ("curate-eps-input", high, (high, 3))]
    for field, value, params in steps:
        box = driver.find_element(By.ID, field)
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(value), Keys.ENTER)
        wait_for(lambda p=params: store.class_params()[0] == p)
        time.sleep(0.5)  # the server's answer (counts, model) lands
        last = driver.execute_script("return window.curateLastRecluster")
        assert (last["eps"], last["ms"]) == params  # drawn by the browser
        data = run_data(ui_root, "parity")
        state = current_state(data)
        colours, symbols, _ = marker_style(data.members[0], state.decisions, state.overrides)
        shown = trace_markers(driver)
        assert shown["color"] == colours
        assert shown["symbol"] == [names[s] for s in symbols]
        rows = logic.class_counts(data, state)
        assert status_text(driver) == logic.status_text(
            rows, logic.noise_per_class(data, state), state.rule)
        # The class list's row counts the same (assets/recluster.js patches them).
        assert driver.execute_script(
            "return document.querySelector('#curate-class-list .class-row[data-code=\"0\"]"
            " .counts').textContent") == " · ".join(
                str(rows[0][k]) for k in ("size", "flagged", "overridden", "kept"))
        assert driver.execute_script("return window.paints") == {"restyle": 1, "react": 0}
        driver.execute_script("window.paints = {restyle: 0, react: 0}")


def test_dragging_eps_previews_live_and_the_release_stores(driver, server, ui_root):
    store = CurationStore(ui_root / "drag" / "curation.sqlite")
    _open(driver, server, "drag")
    stored = store.class_params()[0]
    revision = store.revision()
    before = trace_markers(driver)
    thumb = driver.find_element(By.CSS_SELECTOR, "#curate-eps-slider [role=slider]")
    hold = ActionChains(driver).click_and_hold(thumb)
    for _ in range(4):
        hold.move_by_offset(-12, 0)
    hold.perform()
    preview = wait_for(lambda: driver.execute_script("return window.curateLastRecluster"))
    assert preview["eps"] < stored[0]
    wait_for(lambda: trace_markers(driver)["color"] != before["color"])  # drawn live
    time.sleep(0.3)
    assert store.class_params()[0] == stored and store.revision() == revision  # not stored
    ActionChains(driver).release().perform()
    wait_for(lambda: store.class_params()[0][0] < stored[0])
    eps = store.class_params()[0][0]
    assert abs(eps - driver.execute_script("return window.curateLastRecluster")["eps"]) < 1e-9
    wait_for(lambda: abs(float(driver.find_element(By.ID, "curate-eps-input")
                               .get_attribute("value")) - eps) < 1e-4)  # the box follows
    # Dragged to 0 and released: refused, and the plot goes back to the stored eps.
    hold = ActionChains(driver).click_and_hold(thumb).move_by_offset(-40, 0)
    hold.release().perform()
    alert = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#curate-alert .alert"))
    assert "eps must be" in alert[0].text and store.class_params()[0][0] == eps
    from app.data import current_state, run_data
    from app.figures import marker_style

    data = run_data(ui_root, "drag")
    state = current_state(data)
    colours, _, _ = marker_style(data.members[0], state.decisions, state.overrides)
    wait_for(lambda: trace_markers(driver)["color"] == colours)
    # Again from there: a preview P, then 0 (refused; the server repaints the stored eps
    # under the same model). Dragging back to P must draw P again.
    last = driver.execute_script("return window.curateLastRecluster")
    to_left_edge = -(thumb.location["x"] + 30)  # from P to below 0
    (ActionChains(driver).click_and_hold(thumb).move_by_offset(30, 0).pause(0.5)
     .move_by_offset(to_left_edge, 0).pause(0.3).release().perform())
    preview = driver.execute_script("return window.curateLastRecluster")  # P; 0 is not drawn
    assert preview["at"] > last["at"] and 0 < preview["eps"] != eps
    wait_for(lambda: trace_markers(driver)["color"] == colours)
    assert store.class_params()[0][0] == eps
    ActionChains(driver).click_and_hold(thumb).move_by_offset(30, 0).perform()
    again = wait_for(lambda: (v := driver.execute_script(
        "return window.curateLastRecluster"))["at"] > preview["at"] and v)
    assert again["eps"] == preview["eps"]
    ActionChains(driver).release().perform()
    wait_for(lambda: store.class_params()[0][0] == preview["eps"])


def test_two_tabs_keep_each_others_changes(driver, server, ui_root):
    """Tab B re-clusters in the browser from a model that predates tab A's override: the
    server sees the store moved on and repaints B with A's override; both changes stay."""
    store = CurationStore(ui_root / "tabs" / "curation.sqlite")
    first = driver.current_window_handle
    _open(driver, server, "tabs")
    driver.switch_to.new_window("tab")
    second = driver.current_window_handle
    _open(driver, server, "tabs")

    def marker_of(sample):
        m = trace_markers(driver)
        k = m["customdata"].index(sample)
        return m["symbol"][k], m["color"][k]

    try:
        ids = trace_markers(driver)["customdata"]
        a, b = ids[len(ids) // 4], ids[3 * len(ids) // 4]
        driver.switch_to.window(first)
        _click_at(driver, *point_position(driver, a))
        wait_for(lambda: a in store.overrides())
        decision_a = store.overrides()[a]
        want_a = ("diamond", "#1a9e3a") if decision_a == "keep" else ("x", "#d62728")
        driver.switch_to.window(second)  # still shows the store before A's click
        assert marker_of(a) != want_a
        box = driver.find_element(By.ID, "curate-eps-input")
        eps = round(float(box.get_attribute("value")) * 0.8, 4)
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(eps), Keys.ENTER)
        wait_for(lambda: store.class_params()[0][0] == eps)
        wait_for(lambda: marker_of(a) == want_a)  # the server repainted B
        _click_at(driver, *point_position(driver, b))
        wait_for(lambda: b in store.overrides())
        assert set(store.overrides()) == {a, b} and store.class_params()[0][0] == eps
        driver.switch_to.window(first)
        driver.refresh()
        _open(driver, server, "tabs")
        assert marker_of(a) == want_a and marker_of(b)[0] in ("diamond", "x")
        assert driver.find_element(By.ID, "curate-eps-input").get_attribute("value") == str(eps)
    finally:
        driver.switch_to.window(second)
        driver.close()
        driver.switch_to.window(first)


def test_gallery_toggle_and_summary_tab(driver, server, ui_root):
    store = CurationStore(ui_root / "gallery" / "curation.sqlite")
    _open(driver, server, "gallery")
    # The native String.prototype.trim is back (assets/native_builtins.js) and works.
    assert driver.execute_script("return window.__nativeBuiltinsRestored === true && "
                                 "' a '.trim() === 'a' && parseInt(' 08') === 8")
    for code in range(10):  # the first class with something flagged
        pick_class(driver, code)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, ".gallery-toggle")
                 or "No points here" in driver.page_source)
        if driver.find_elements(By.CSS_SELECTOR, ".gallery-toggle"):
            break
    button = driver.find_elements(By.CSS_SELECTOR, ".gallery-toggle")[0]
    sample, before = int(button.get_attribute("data-sample")), button.text
    why = driver.find_elements(By.CSS_SELECTOR, ".gallery-why")[0].text
    assert why.startswith("flagged: ") and "nearest neighbours are labelled" in why, why
    # A DOM click: below the fold of the headless window, a pointer click is intercepted.
    driver.execute_script("arguments[0].click()", button)
    wait_for(lambda: sample in store.overrides())
    wait_for(lambda: driver.find_element(
        By.CSS_SELECTOR, f".gallery-toggle[data-sample='{sample}']").text != before)
    tab = driver.find_element(By.LINK_TEXT, "Summary")
    driver.execute_script("arguments[0].click()", tab)
    table = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#curate-summary table"))
    assert "reduction" in table[0].text and "total" in table[0].text


def test_hover_shows_the_image(driver, server):
    _open(driver, server, "hover")
    sample = trace_markers(driver)["customdata"][0]
    x, y = point_position(driver, sample)
    _move_to(driver, x, y)
    img = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, ".hover-card img"))
    wait_for(lambda: driver.execute_script(
        "return arguments[0].complete && arguments[0].naturalWidth > 0", img))
    card = driver.find_element(By.CSS_SELECTOR, ".hover-card").text
    # Why it is kept or dropped, in the reviewer's words.
    assert "nearest neighbours are labelled" in card and "DBSCAN: " in card
    assert "5 nearest:" in card and "score " in card
    # The rightmost point's card opens to its left: it stays in the window, and the page
    # does not scroll sideways.
    right = driver.execute_script(
        "const t = document.querySelector('#curate-graph .js-plotly-plot')._fullData[1];"
        "const x = Array.from(t.x); return t.customdata[x.indexOf(Math.max(...x))];")
    _move_to(driver, *point_position(driver, right))
    wait_for(lambda: f"#{right} ·" in driver.find_element(By.CSS_SELECTOR, ".hover-card").text)
    box = driver.execute_script(
        "const r = document.querySelector('.hover-card').getBoundingClientRect();"
        "return [r.right, window.innerWidth, document.documentElement.scrollWidth];")
    assert box[0] <= box[1] and box[2] <= box[1], box


def test_click_override_survives_reload_and_undo_reverts(driver, server, ui_root):
    store = CurationStore(ui_root / "click" / "curation.sqlite")
    _open(driver, server, "click")
    markers = trace_markers(driver)
    sample = markers["customdata"][len(markers["customdata"]) // 2]
    _click_at(driver, *point_position(driver, sample))
    wait_for(lambda: store.overrides())
    (clicked, decision), = store.overrides().items()
    want = "diamond" if decision == "keep" else "x"
    colour = "#1a9e3a" if decision == "keep" else "#d62728"

    def marker_of(s):
        m = trace_markers(driver)
        k = m["customdata"].index(s)
        return m["symbol"][k], m["color"][k]

    wait_for(lambda: marker_of(clicked) == (want, colour))
    driver.refresh()
    _open(driver, server, "click")
    assert marker_of(clicked) == (want, colour)  # persisted, drawn after a reload
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
    wait_for(lambda: store.overrides() == {})
    wait_for(lambda: marker_of(clicked) != (want, colour))
    driver.find_element(By.ID, "curate-redo").click()
    wait_for(lambda: store.overrides() == {clicked: decision})


def _lasso_middle(driver, half: int = 25) -> list[int]:
    """Draw a lasso loop around the middle of the shown class; returns the samples it
    selected, once Plotly has them."""
    ids = trace_markers(driver)["customdata"]
    pts = [point_position(driver, s) for s in ids]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    cx, cy = sorted(xs)[len(xs) // 2], sorted(ys)[len(ys) // 2]
    loop = [(cx - half, cy - half), (cx + half, cy - half), (cx + half, cy + half),
            (cx - half, cy + half), (cx - half, cy - half + 1)]
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(loop[0][0]), int(loop[0][1])).pointer_down()
    for x, y in loop[1:]:
        actions.pointer_action.move_to_location(int(x), int(y))
    actions.pointer_action.pointer_up()
    actions.perform()
    chosen = wait_for(lambda: driver.execute_script(
        "const gd = document.querySelector('#curate-graph .js-plotly-plot');"
        "const sel = gd._fullData[1].selectedpoints; return sel && sel.length > 0 && sel"))
    return [ids[k] for k in chosen]


def test_lasso_then_drop(driver, server, ui_root):
    store = CurationStore(ui_root / "lasso" / "curation.sqlite")
    _open(driver, server, "lasso")
    _lasso_middle(driver)
    driver.find_element(By.ID, "curate-drop").click()
    overrides = wait_for(lambda: store.overrides())
    assert len(overrides) >= 2 and set(overrides.values()) == {"drop"}


def _gallery_cards(driver) -> list[int]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#curate-gallery .gallery-toggle'))"
        ".map(b => Number(b.dataset.sample));")


def test_gallery_follows_the_lasso_and_the_state_filter(driver, server, ui_root):
    """A lasso selection narrows the gallery to the selected points, most likely wrong
    first; a double-click clears it. The state filter shows what is left to review, so
    a decided card leaves it."""
    from app.data import current_state, run_data

    data = run_data(ui_root, "filter")
    store = CurationStore(ui_root / "filter" / "curation.sqlite")
    _open(driver, server, "filter")
    Select(driver.find_element(By.ID, "curate-gallery-filter")).select_by_value("all")
    everything = wait_for(lambda: len(_gallery_cards(driver)) == 24 and _gallery_cards(driver))
    selected = _lasso_middle(driver)
    assert 0 < len(selected) < len(data.members[0])
    header = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, ".gallery-selection"))
    assert f"({len(selected)})" in header[0].text
    shown = wait_for(lambda: (c := _gallery_cards(driver)) != everything and c)
    assert set(shown) <= set(selected) and len(shown) == min(24, len(selected))
    scores = [data.score[s] for s in shown]
    assert scores == sorted(scores, reverse=True)  # most likely wrong first
    graph = driver.find_element(By.CSS_SELECTOR, "#curate-graph .nsewdrag")
    corner = (-graph.size["width"] // 2 + 4, -graph.size["height"] // 2 + 4)  # no points
    (ActionChains(driver).move_to_element_with_offset(graph, *corner).double_click()
     .perform())  # Plotly: clears the selection
    assert store.overrides() == {}
    wait_for(lambda: not driver.find_elements(By.CSS_SELECTOR, ".gallery-selection"))
    wait_for(lambda: _gallery_cards(driver) == everything)

    Select(driver.find_element(By.ID, "curate-gallery-filter")).select_by_value("left")
    state = current_state(data)
    flagged = data.members[0][state.decisions.flagged[data.members[0]]]
    left = wait_for(lambda: (c := _gallery_cards(driver)) != everything and c)
    assert set(left) <= set(flagged.tolist()) and len(left) == min(24, len(flagged))
    button = driver.find_element(By.CSS_SELECTOR, f".gallery-toggle[data-sample='{left[0]}']")
    driver.execute_script("arguments[0].click()", button)
    wait_for(lambda: left[0] in store.overrides())
    wait_for(lambda: left[0] not in _gallery_cards(driver))
    counts = driver.find_element(By.CSS_SELECTOR, ".gallery-counts").text
    assert f"{len(flagged) - 1} left to review" in counts


def test_class_search_and_sort_narrow_the_class_list(driver, server):
    _open(driver, server, "load")

    def listed() -> list[str]:
        return listed_classes(driver)

    assert listed()[:3] == ["All classes", "0", "1"]
    box = driver.find_element(By.ID, "curate-class-search")
    box.send_keys("7")
    wait_for(lambda: listed() == ["All classes", "0", "7"])  # the shown class stays
    assert "1 of 10 classes match" in driver.find_element(By.ID, "curate-class-more").text
    box.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    Select(driver.find_element(By.ID, "curate-class-sort")).select_by_value("flagged")
    wait_for(lambda: len(listed()) == 11 and listed()[1:3] != ["0", "1"])


def test_tabs_start_under_the_map_at_1366x768(server):
    """At 1366×768 the map leaves the tab headers in view without scrolling."""
    small = chrome(1366, 768)
    try:
        _open(small, server, "load")
        top, bottom, inner = small.execute_script(
            "const tabs = document.getElementById('curate-tabs').getBoundingClientRect();"
            "const graph = document.getElementById('curate-graph').getBoundingClientRect();"
            "return [tabs.top, graph.bottom, window.innerHeight];")
        assert bottom <= top < inner - 20, (bottom, top, inner)
        assert bottom >= 360 + 100  # the map keeps a usable height
    finally:
        small.quit()


def test_export_produces_the_manifest(driver, server, ui_root):
    _open(driver, server, "export")
    tab = driver.find_element(By.LINK_TEXT, "Export")
    driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)
    name = wait_for(lambda: driver.find_element(By.ID, "export-name"))
    name.send_keys("from-browser")
    driver.execute_script("arguments[0].click();", driver.find_element(By.ID, "export-go"))
    link = wait_for(lambda: driver.find_element(By.ID, "export-download"), timeout=60)
    manifest = ui_root / "export" / "exports" / "from-browser" / "manifest.csv"
    rows = list(csv.DictReader(open(manifest)))
    assert len(rows) == 1797 and "reason" in rows[0]
    with urllib.request.urlopen(link.get_attribute("href")) as resp:
        assert resp.read().decode().startswith("index,path,label")


def _set(driver, element_id: str, value: str) -> None:
    box = driver.find_element(By.ID, element_id)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(value)


def _click(driver, element_id: str) -> None:
    driver.execute_script("arguments[0].click();", driver.find_element(By.ID, element_id))


def test_retrain_with_the_panel_defaults_trains_and_reuses_only_an_identical_subset(
        driver, server, ui_root):
    """One click with the panel's defaults trains on the demo to ≥ 90%; the same click
    again reuses that training and says so; after an override the same click trains anew.
    The Results page, reached from the navigation bar, shows both.

    How long the first click takes depends on the host (about 2 minutes on 2 AVX-512
    cores, about 3.5 minutes on 2 AVX2 cores beside the browser), so it is not asserted here."""
    _open(driver, server, "retrain")
    tab = driver.find_element(By.LINK_TEXT, "Retrain")
    driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)
    plan = wait_for(lambda: driver.find_element(By.ID, "train-plan-text"))
    wait_for(lambda: plan.text)  # the tab fades in: hidden text reads as ""
    assert "batch 32" in plan.text and "chosen from the subset size" in plan.text
    # A batch too large for the subset warns before anything runs; clearing it goes back.
    _set(driver, "train-batch", "512")
    wait_for(lambda: "may not train" in driver.find_element(By.ID, "train-plan").text)
    driver.find_element(By.ID, "train-batch").send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    wait_for(lambda: "batch 32" in driver.find_element(By.ID, "train-plan").text
             and "may not train" not in driver.find_element(By.ID, "train-plan").text)

    _click(driver, "train-go")
    # Live progress per optimizer step, with elapsed time.
    wait_for(lambda: "step" in driver.find_element(By.ID, "train-status").text
             and "elapsed" in driver.find_element(By.ID, "train-status").text, timeout=120)
    wait_for(lambda: driver.find_element(By.ID, "train-results-link"), timeout=540)
    trainings = list((ui_root / "retrain" / "train").iterdir())
    assert len(trainings) == 1
    summary = json.loads((trainings[0] / "summary.json").read_text())
    assert summary["final_test_acc"] >= 0.90, summary["final_test_acc"]

    _click(driver, "train-go")  # the same subset and settings: reused, and said so
    wait_for(lambda: "reusing training" in driver.find_element(By.ID, "train-status").text,
             timeout=60)
    assert len(list((ui_root / "retrain" / "train").iterdir())) == 1

    CurationStore(ui_root / "retrain" / "curation.sqlite").set_overrides(range(40), "drop")
    # The same click after an override: another subset. Two epochs keep the suite short;
    # what is checked is that the new subset is trained, not how well.
    _set(driver, "train-epochs", "2")
    _click(driver, "train-go")
    wait_for(lambda: len(list((ui_root / "retrain" / "train").iterdir())) == 2)
    wait_for(lambda: "training finished" in driver.find_element(By.ID, "train-status").text
             and "reusing" not in driver.find_element(By.ID, "train-status").text, timeout=300)
    newest = max((ui_root / "retrain" / "train").iterdir(), key=lambda p: p.stat().st_mtime)
    config = json.loads((newest / "config.json").read_text())
    assert config["subset_key"] != summary["config"]["subset_key"]
    assert config["subset_size"] < summary["config"]["subset_size"]

    driver.execute_script("arguments[0].click();",
                          driver.find_element(By.LINK_TEXT, "Results"))
    wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "a[href='/results/retrain']"))
    _click_link(driver, "/results/retrain")
    names = wait_for(lambda: driver.execute_script(
        "const gd = document.querySelector('#results-curves .js-plotly-plot');"
        "return gd && gd.data && gd.data.length ? gd.data.map(t => t.name) : null"), timeout=30)
    assert {p.name for p in (ui_root / "retrain" / "train").iterdir()} <= set(names)
    table = driver.find_element(By.ID, "results-trainings-table").text
    assert table.count("completed") == 2


def _click_link(driver, href: str) -> None:
    # Found and clicked in one script: the page may re-render between a lookup and a click.
    wait_for(lambda: driver.execute_script(
        "const a = document.querySelector(arguments[0]); if (a) a.click(); return !!a;",
        f"a[href='{href}']"))


def test_new_run_form_starts_the_pipeline_with_live_progress(driver, server, ui_root):
    driver.get(server.url + "/")
    # Runs come first; the form is collapsed under them and opens on a click.
    table = wait_for(lambda: driver.find_element(By.ID, "runs-table"))
    toggle = driver.find_element(By.ID, "new-run-toggle")
    assert table.location["y"] < toggle.location["y"]
    assert not driver.find_element(By.ID, "new-name").is_displayed()
    toggle.click()
    # Up to a minute: once in a full suite (a fresh clone, after the 100k scale test) the
    # form took over 20 s to open; alone, and in this file's run, it opens at once.
    wait_for(lambda: driver.find_element(By.ID, "new-name").is_displayed(), timeout=60)
    # The recommended model is the default: pretrained for images, pixels for the digits.
    assert Select(driver.find_element(By.ID, "new-model")).first_selected_option.text \
        == "recommended: efficientnet-lite0 (pixels for digits)"
    assert "random weights" in driver.find_element(By.ID, "model-help").get_attribute(
        "textContent")
    _set(driver, "new-name", "fromform")
    _set(driver, "new-noise", "0.1")
    driver.execute_script("arguments[0].click();", driver.find_element(By.ID, "new-go"))
    wait_for(lambda: "started" in driver.find_element(By.ID, "runs-alert").text)
    # The run appears at once with its job's progress, and becomes curatable when done.
    wait_for(lambda: "fromform" in driver.find_element(By.ID, "runs-table").text)
    link = wait_for(lambda: driver.find_element(By.CSS_SELECTOR, "a[href='/curate/fromform']"),
                    timeout=180)
    assert (ui_root / "fromform" / "embedding.npy").is_file()
    # Its row counts what is flagged and, with true labels known, the F1 of the drops.
    # The cells are read in one script: the table re-renders every second as it polls.
    cells = wait_for(lambda: driver.execute_script(
        "const tr = [...document.querySelectorAll('#runs-table tr')].find(r =>"
        " r.innerText.startsWith('fromform') && r.innerText.includes('0.'));"
        "return tr ? [...tr.querySelectorAll('td')].map(td => td.innerText) : null;"))
    assert int(cells[4].replace(",", "")) > 0 and 0 < float(cells[6]) <= 1, cells
    # The model the default chose for digits, with the feature-quality gauge's badge.
    badge = wait_for(lambda: driver.execute_script(
        "const tr = [...document.querySelectorAll('#runs-table tr')].find(r =>"
        " r.innerText.startsWith('fromform'));"
        "return tr ? tr.querySelectorAll('td')[2].innerText : '';"), timeout=30)
    assert badge.startswith("pixels") and "features 0." in badge and "strong" in badge, badge
    driver.execute_script("arguments[0].click();", link)
    wait_for(lambda: trace_markers(driver))


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


def test_relabel_from_the_gallery_reaches_the_export_and_the_training_subset(
        driver, server, ui_root):
    """The gallery offers the suggested label; one click stores the relabel (the card then
    says so), the exported manifest carries it beside the given label, the filtered
    subset trains with it, and Undo takes it back."""
    from worker.pipeline.rundir import RunDir
    from worker.train.data import holdout_mask, select_subset

    store = CurationStore(ui_root / "relabel" / "curation.sqlite")
    samples = RunDir(ui_root / "relabel").read_samples()
    classes, held_out = samples.classes, holdout_mask(samples.labels)

    def trainable() -> list:  # relabel buttons of samples a training can use
        return [b for b in driver.find_elements(By.CSS_SELECTOR, ".gallery-relabel")
                if not held_out[int(b.get_attribute("data-sample"))]]

    _open(driver, server, "relabel")
    for code in range(10):
        pick_class(driver, code)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, ".gallery-item")
                 or "No points here" in driver.page_source)
        if trainable():
            break
    button = trainable()[0]
    sample, new = int(button.get_attribute("data-sample")), button.get_attribute("data-label")
    driver.execute_script("arguments[0].click()", button)
    wait_for(lambda: store.relabels() == {sample: classes.index(new)})
    wait_for(lambda: any(w.text.startswith(f"relabelled to {new}") for w in
                         driver.find_elements(By.CSS_SELECTOR, ".gallery-why")))

    tab = driver.find_element(By.LINK_TEXT, "Export")
    driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)
    _set(driver, "export-name", "relabelled")
    _click(driver, "export-go")
    wait_for(lambda: driver.find_element(By.ID, "export-download"), timeout=60)
    manifest = ui_root / "relabel" / "exports" / "relabelled" / "manifest.csv"
    row = list(csv.DictReader(open(manifest)))[sample]
    assert row["label"] == new != row["given_label"] and row["reason"] == "relabel"
    subset = select_subset(RunDir(ui_root / "relabel"), "filtered", 0)
    assert subset.labels[list(subset.indices).index(sample)] == classes.index(new)

    _click(driver, "curate-undo")
    wait_for(lambda: store.relabels() == {})


def test_keyboard_triage_moves_keeps_drops_relabels_and_undoes(driver, server, ui_root):
    store = CurationStore(ui_root / "triage" / "curation.sqlite")
    _open(driver, server, "triage")
    for code in range(10):
        pick_class(driver, code)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, ".gallery-item")
                 or "No points here" in driver.page_source)
        if len(driver.find_elements(By.CSS_SELECTOR, ".gallery-relabel")) >= 1 and \
                len(driver.find_elements(By.CSS_SELECTOR, ".gallery-item")) >= 3:
            break
    assert "keys:" in driver.find_element(By.CSS_SELECTOR, ".gallery-keys").text

    # Read in the page, in one go: the server re-renders the gallery after each change.
    def focused() -> int | None:
        return driver.execute_script(
            "const b = document.querySelector('.gallery-item.focused .gallery-toggle');"
            "return b ? Number(b.dataset.sample) : null;")

    def cards() -> list[int]:
        return driver.execute_script(
            "return Array.from(document.querySelectorAll('.gallery-toggle'))"
            ".map(b => Number(b.dataset.sample));")

    body = driver.find_element(By.TAG_NAME, "body")
    wait_for(lambda: focused() is not None)
    first = focused()
    body.send_keys("j")
    wait_for(lambda: focused() == cards()[1])
    body.send_keys("d")  # drop the second card; the focus moves on to the third
    wait_for(lambda: store.overrides().get(cards()[1]) == "drop")
    wait_for(lambda: focused() == cards()[2])
    body.send_keys("k", "k")
    wait_for(lambda: focused() == first)
    body.send_keys("a")
    wait_for(lambda: store.overrides().get(first) == "keep")
    body.send_keys("u")  # undo the keep
    wait_for(lambda: first not in store.overrides())
    target = driver.execute_script(
        "return Number(document.querySelector('.gallery-relabel').dataset.sample);")
    body.send_keys(*["k"] * len(cards()))  # back to the first card
    for _ in range(len(cards())):
        if focused() == target:
            break
        body.send_keys("j")
    assert focused() == target
    body.send_keys("r")
    wait_for(lambda: target in store.relabels())



def test_class_list_scrolls_virtually_through_300_classes(driver, tmp_path_factory):
    """A features: run with 300 classes: the list holds every class but draws only the
    rows in view; the last class can be scrolled to and shown, and search narrows it."""
    import os
    import subprocess

    from bench.synth import SynthSpec, write_synthetic
    from tests.unit.test_cli import CURATOR

    base = tmp_path_factory.mktemp("many")
    feats, labels = write_synthetic(base / "data", SynthSpec(n=3000, classes=300, dim=32,
                                                             class_offset=0.5))
    env = {**os.environ, "CURATOR_BROKER_URL": ""}
    subprocess.run([CURATOR, "pipeline", "--dataset", f"features:{feats}", "--labels",
                    str(labels), "--out", str(base / "runs" / "many")], env=env, check=True,
                   capture_output=True, timeout=300)
    srv = Server(base / "runs")
    try:
        _open(driver, srv, "many")
        wait_for(lambda: listed_classes(driver)[:2] == ["All classes", "c0000"])
        drawn = len(listed_classes(driver))
        assert 5 < drawn < 60  # of 301 rows
        height = driver.execute_script(
            "return document.querySelector('#curate-class-list .class-space').offsetHeight")
        assert height == 301 * 28
        pick_class(driver, 299)
        wait_for(lambda: driver.execute_script(
            "const r = document.querySelector('#curate-class-list .class-row.active');"
            "return r && r.dataset.code") == "299")
        assert "c0299" in listed_classes(driver) and len(listed_classes(driver)) < 60
        given = [row["label"] for row in csv.DictReader(open(labels))]
        wait_for(lambda: {given[i] for i in trace_markers(driver)["customdata"]} == {"c0299"})
        box = driver.find_element(By.ID, "curate-class-search")
        box.send_keys("c015")
        # The shown class stays first, then the ten matches.
        wait_for(lambda: listed_classes(driver) == ["All classes", "c0299",
                                                    *[f"c{c:04d}" for c in range(150, 160)]])
        assert "10 of 300 classes match" in driver.find_element(By.ID, "curate-class-more").text
    finally:
        srv.stop()
