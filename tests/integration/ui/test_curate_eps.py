"""eps and the re-cluster on the Curate page, in real headless Chromium against a real
``curator serve``: an eps change repaints the counts and the plot, the browser's DBSCAN
equals scikit-learn's and the server's, the preview counts proposed samples as the server
does, and dragging eps previews live and stores on release."""

from __future__ import annotations

import subprocess

import numpy as np
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    browser_marks,
    class_rows,
    decide,
    grid_rows,
    hex_colours,
    shown_text,
    status_text,
    trace_markers,
    wait_for,
)
from tests.integration.conftest import CURATOR
from tests.integration.ui.conftest import open_run
from worker.pipeline.map.dbscan import dbscan_once, sklearn_dbscan
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()


def test_eps_change_repaints_counts_and_plot(driver, server, ui_root):
    open_run(driver, server, "eps")
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
    assert "eps must be" in shown_text(alert[0])
    wait_for(lambda: box.get_attribute("value") == "0.6")
    assert CurationStore(ui_root / "eps" / "curation.sqlite").class_params()[0][0] == 0.6


def test_browser_dbscan_equals_scikit_learn(driver, server):
    """assets/class_map.js's DBSCAN on awkward data: points exactly eps apart, duplicates,
    min_samples 1, an eps wider than every cluster."""
    open_run(driver, server, "load")
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
            "return Array.from(window.curateDebug.dbscan(arguments[0], arguments[1], arguments[2],"
            " arguments[3]))", points[:, 0].tolist(), points[:, 1].tolist(), eps, ms)
        want = sklearn_dbscan(points.astype(np.float64), eps, ms)
        assert got == want.tolist(), (len(points), eps, ms)
        assert got == dbscan_once(points, eps, ms).tolist()


def test_browser_recluster_matches_the_server(driver, server, ui_root):
    """eps and min_samples changes are drawn in the browser before the server answers; the
    markers and counts must be exactly what the server stores and would draw, and the
    server must not repaint them a second time. The run uses the default rule, adaptive,
    whose bits differ from point to point, so the browser must look them up."""
    from app.curate import class_list, page_actions
    from app.curate.figures import SYMBOLS, marker_style
    from app.run_data import current_state, run_data
    from worker.pipeline.map.clustering import ALWAYS_FLAGGED, NOISE_FLAGGED, flag_bits

    store = CurationStore(ui_root / "parity" / "curation.sqlite")
    data = run_data(ui_root, "parity")
    assert current_state(data).rule == "adaptive"
    bits = flag_bits(data.inputs.take(data.members[0]), "adaptive", len(data.members[0]))
    # Some DBSCAN noise would stay and some points are flagged wherever they lie.
    assert (bits & NOISE_FLAGGED == 0).any() and (bits & ALWAYS_FLAGGED > 0).any()
    open_run(driver, server, "parity")
    # A keep override and a relabel the browser must draw and count apart.
    rows = wait_for(lambda: grid_rows(driver))
    relabel = next(r["sample"] for r in rows if r["suggested"])
    sample = next(r["sample"] for r in rows if r["sample"] != relabel)
    decide(driver, sample, "a")
    wait_for(lambda: sample in store.overrides())
    decide(driver, relabel, "r")
    wait_for(lambda: relabel in store.relabels())
    data = run_data(ui_root, "parity")
    state = current_state(data)
    line = page_actions.status_text(page_actions.class_counts(data, state),
                                    page_actions.noise_per_class(data, state), state.rule)
    wait_for(lambda: status_text(driver) == line)  # the key's repaint and new model landed
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
        data = run_data(ui_root, "parity")
        state = current_state(data)
        rows = page_actions.class_counts(data, state)
        line = page_actions.status_text(rows, page_actions.noise_per_class(data, state), state.rule)
        # The server's answer (counts, model) has landed once the line shows its counts.
        wait_for(lambda t=line: status_text(driver) == t)
        last = driver.execute_script("return window.curateDebug.lastRecluster")
        assert (last["eps"], last["ms"]) == params  # drawn by the browser
        # The line the browser wrote at the key press already said what the server says,
        # proposed samples included: the server's answer leaves the line as it is.
        assert driver.execute_script("return window.curateStore.get('draft').status") == line
        assert last.get("key") == "Enter"  # at the key press, before Dash's round
        colours, symbols, _ = marker_style(data.members[0], state.decisions, state.marks,
                                           data.proposals)
        shown = trace_markers(driver)
        assert shown["color"] == hex_colours(colours)
        assert shown["symbol"] == [names[s] for s in symbols]
        # The class list's rows count the same (assets/class_map.js previews them, the
        # render path sends the stored ones).
        grid, total = class_list.grid_rows(rows)
        assert class_rows(driver)[0] == total
        assert next(r for r in class_rows(driver) if r["code"] == 0) == grid[0]
        assert (rows[0]["overridden"], rows[0]["relabelled"]) == (1, 1)
        assert driver.execute_script("return window.paints") == {"restyle": 1, "react": 0}
        driver.execute_script("window.paints = {restyle: 0, react: 0}")


def test_the_preview_counts_proposed_samples_as_the_server_does(driver, server, ui_root):
    """Under the plain DBSCAN rule a finding's proposed sample is dropped once it turns
    noise: the line the browser writes at the key press counts the proposed samples the
    server will count, so the server's answer does not rewrite the line (a rewrite is what
    the user would wait for)."""
    from app import ids
    from app.curate import page_actions
    from app.run_data import current_state, run_data

    subprocess.run([CURATOR, "cluster", str(ui_root / "proposed"), "--rule", "dbscan"],
                   check=True, capture_output=True)
    store = CurationStore(ui_root / "proposed" / "curation.sqlite")
    before = page_actions.class_counts(run_data(ui_root, "proposed"),
                                current_state(run_data(ui_root, "proposed")))[-1]["proposed"]
    open_run(driver, server, "proposed")
    driver.execute_script(
        "window.lines = [];"
        "new MutationObserver(() => window.lines.push("
        "  document.getElementById(arguments[0]).textContent))"
        ".observe(document.getElementById(arguments[0]),"
        "  {childList: true, subtree: true, characterData: true});", "curate-status")
    eps = round(float(driver.find_element(By.ID, "curate-eps-input").get_attribute("value"))
                * 0.5, 4)
    box = driver.find_element(By.ID, "curate-eps-input")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(str(eps), Keys.ENTER)
    wait_for(lambda: store.class_params()[0][0] == eps)
    data = run_data(ui_root, "proposed")
    state = current_state(data)
    rows = page_actions.class_counts(data, state)
    assert rows[-1]["proposed"] < before  # the change drops proposed samples
    line = page_actions.status_text(rows, page_actions.noise_per_class(data, state), state.rule)
    # The server's answer has landed (its line, in the hidden element the script copies
    # from as React writes it).
    wait_for(lambda: driver.find_element(By.ID, ids.STATUS_DATA).get_attribute("textContent")
             == line)
    assert driver.execute_script("return window.lines") == [line]


def test_dragging_eps_previews_live_and_the_release_stores(driver, server, ui_root):
    store = CurationStore(ui_root / "drag" / "curation.sqlite")
    open_run(driver, server, "drag")
    stored = store.class_params()[0]
    revision = store.revision()
    before = trace_markers(driver)
    thumb = driver.find_element(By.CSS_SELECTOR, "#curate-eps-slider [role=slider]")
    hold = ActionChains(driver).click_and_hold(thumb)
    for _ in range(4):
        hold.move_by_offset(-12, 0)
    hold.perform()
    preview = wait_for(lambda: driver.execute_script("return window.curateDebug.lastRecluster"))
    assert preview["eps"] < stored[0]
    wait_for(lambda: trace_markers(driver)["color"] != before["color"])  # drawn live
    # The preview's counts are in the status line (the drag's last visible effect), and
    # nothing was stored by then.
    wait_for(lambda: float(thumb.get_attribute("aria-valuenow")) < stored[0])
    assert store.class_params()[0] == stored and store.revision() == revision  # not stored
    ActionChains(driver).release().perform()
    wait_for(lambda: store.class_params()[0][0] < stored[0])
    eps = store.class_params()[0][0]
    assert abs(eps - driver.execute_script("return window.curateDebug.lastRecluster")["eps"]) < 1e-9
    wait_for(lambda: abs(float(driver.find_element(By.ID, "curate-eps-input")
                               .get_attribute("value")) - eps) < 1e-4)  # the box follows
    # Dragged to 0 and released: refused, and the plot goes back to the stored eps.
    hold = ActionChains(driver).click_and_hold(thumb).move_by_offset(-40, 0)
    hold.release().perform()
    alert = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#curate-alert .alert"))
    assert "eps must be" in shown_text(alert[0]) and store.class_params()[0][0] == eps
    from app.curate.figures import marker_style
    from app.run_data import current_state, run_data

    data = run_data(ui_root, "drag")
    state = current_state(data)
    colours, _, _ = marker_style(data.members[0], state.decisions, state.overrides,
                                  data.proposals)
    wait_for(lambda: trace_markers(driver)["color"] == hex_colours(colours))
    # Again from there: a preview P, then 0 (refused; the server repaints the stored eps
    # under the same model). Dragging back to P must draw P again.
    last = driver.execute_script("return window.curateDebug.lastRecluster")
    to_left_edge = -(thumb.location["x"] + 30)  # from P to below 0
    (ActionChains(driver).click_and_hold(thumb).move_by_offset(30, 0).pause(0.5)
     .move_by_offset(to_left_edge, 0).pause(0.3).release().perform())
    preview = driver.execute_script("return window.curateDebug.lastRecluster")  # P; 0 is not drawn
    assert preview["at"] > last["at"] and 0 < preview["eps"] != eps
    wait_for(lambda: trace_markers(driver)["color"] == hex_colours(colours))
    assert store.class_params()[0][0] == eps
    ActionChains(driver).click_and_hold(thumb).move_by_offset(30, 0).perform()
    again = wait_for(lambda: (v := driver.execute_script(
        "return window.curateDebug.lastRecluster"))["at"] > preview["at"] and v)
    assert again["eps"] == preview["eps"]
    ActionChains(driver).release().perform()
    wait_for(lambda: store.class_params()[0][0] == preview["eps"])
