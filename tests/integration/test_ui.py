"""The Dash app in real headless Chromium against a real ``curator serve`` and a real run."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import urllib.error
import urllib.request

import numpy as np
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from app.curate.retrain import train_field
from bench.browser import (
    Server,
    browser_marks,
    chrome,
    class_cell,
    class_rows,
    decide,
    focus_row,
    focused_sample,
    grid_rows,
    hex_colours,
    lasso_middle,
    listed_classes,
    listed_of_class,
    marker_of,
    pick_class,
    picked_class,
    point_position,
    shown_text,
    status_text,
    trace_markers,
    wait_for,
)
from tests.unit.test_cli import CURATOR
from worker.pipeline.map.dbscan import dbscan_once, sklearn_dbscan
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.rundir import RunDir
from worker.train.data import select_subset

pytestmark = browser_marks()
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
    assert "eps must be" in shown_text(alert[0])
    wait_for(lambda: box.get_attribute("value") == "0.6")
    assert CurationStore(ui_root / "eps" / "curation.sqlite").class_params()[0][0] == 0.6


def test_browser_dbscan_equals_scikit_learn(driver, server):
    """assets/class_map.js's DBSCAN on awkward data: points exactly eps apart, duplicates,
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
    from app.curate import class_list, logic
    from app.curate.figures import SYMBOLS, marker_style
    from app.run_data import current_state, run_data
    from worker.pipeline.map.clustering import ALWAYS_FLAGGED, NOISE_FLAGGED, flag_bits

    store = CurationStore(ui_root / "parity" / "curation.sqlite")
    data = run_data(ui_root, "parity")
    assert current_state(data).rule == "adaptive"
    bits = flag_bits(data.inputs.take(data.members[0]), "adaptive", len(data.members[0]))
    # Some DBSCAN noise would stay and some points are flagged wherever they lie.
    assert (bits & NOISE_FLAGGED == 0).any() and (bits & ALWAYS_FLAGGED > 0).any()
    _open(driver, server, "parity")
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
    line = logic.status_text(logic.class_counts(data, state), logic.noise_per_class(data, state),
                             state.rule)
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
        rows = logic.class_counts(data, state)
        line = logic.status_text(rows, logic.noise_per_class(data, state), state.rule)
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
    from app.curate import logic
    from app.run_data import current_state, run_data

    subprocess.run([CURATOR, "cluster", str(ui_root / "proposed"), "--rule", "dbscan"],
                   check=True, capture_output=True)
    store = CurationStore(ui_root / "proposed" / "curation.sqlite")
    before = logic.class_counts(run_data(ui_root, "proposed"),
                                current_state(run_data(ui_root, "proposed")))[-1]["proposed"]
    _open(driver, server, "proposed")
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
    rows = logic.class_counts(data, state)
    assert rows[-1]["proposed"] < before  # the change drops proposed samples
    line = logic.status_text(rows, logic.noise_per_class(data, state), state.rule)
    # The server's answer has landed (its line, in the hidden element the script copies
    # from as React writes it).
    wait_for(lambda: driver.find_element(By.ID, ids.STATUS_DATA).get_attribute("textContent")
             == line)
    assert driver.execute_script("return window.lines") == [line]


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
        _open(driver, srv, "store")
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
        assert _severe_errors(driver) == []
    finally:
        srv.stop()


def test_two_tabs_keep_each_others_changes(driver, server, ui_root):
    """Tab B re-clusters in the browser from a model that predates tab A's override: the
    server sees the store moved on and repaints B with A's override; both changes stay."""
    store = CurationStore(ui_root / "tabs" / "curation.sqlite")
    first = driver.current_window_handle
    _open(driver, server, "tabs")
    driver.switch_to.new_window("tab")
    second = driver.current_window_handle
    _open(driver, server, "tabs")

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
        _open(driver, server, "tabs")
        assert marker_of(driver, a) == want_a and marker_of(driver, b)[0] in ("diamond", "x")
        assert driver.find_element(By.ID, "curate-eps-input").get_attribute("value") == str(eps)
    finally:
        driver.switch_to.window(second)
        driver.close()
        driver.switch_to.window(first)


def test_a_key_the_moment_the_list_appears_is_explained(driver, server):
    """A ``j`` pressed in the same frame the review list first has rows (before any timer of
    assets/review.js has run) still rings its point and brings the row's explanation."""
    driver.get(f"{server.url}/curate/gallery")
    driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        (function poll() {
          let api = null;
          try { api = dash_ag_grid.getApi('review-grid'); } catch (e) { api = null; }
          if (api && api.getDisplayedRowCount() > 0) {
            document.dispatchEvent(new KeyboardEvent('keydown', {key: 'j', bubbles: true}));
            done();
          } else requestAnimationFrame(poll);
        })();""")
    sample = wait_for(lambda: focused_sample(driver))
    why = wait_for(lambda: driver.find_element(By.ID, "review-detail").text, timeout=10)
    assert why.startswith(f"#{sample} · "), why
    wait_for(lambda: driver.execute_script(
        "const r = document.querySelector('#curate-graph .map-ring');"
        "return r && r.style.display !== 'none' && r.dataset.sample") == str(sample))


def test_focused_row_says_why_and_summary_counts_relabels(driver, server, ui_root):
    """The review list's focused row is explained in words under it; the Summary tab has a
    relabelled column beside overridden, and its table is there only while it is open."""
    _open(driver, server, "gallery")
    # The native String.prototype.trim is back (assets/native_builtins.js) and works.
    assert driver.execute_script("return window.curateDebug.nativeBuiltinsRestored === true && "
                                 "' a '.trim() === 'a' && parseInt(' 08') === 8")
    wait_for(lambda: grid_rows(driver))
    driver.find_element(By.TAG_NAME, "body").send_keys("j")
    sample = wait_for(lambda: focused_sample(driver))
    why = wait_for(lambda: driver.find_element(By.ID, "review-detail").text)
    assert why.startswith(f"#{sample} · ") and "nearest neighbours are labelled" in why, why
    assert "flagged: " in why
    tab = driver.find_element(By.LINK_TEXT, "Summary")
    driver.execute_script("arguments[0].click()", tab)
    table = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#curate-summary table"))
    head = shown_text(table[0].find_element(By.TAG_NAME, "thead")).split()
    # The Table I counts, the proposed ones (kept until someone decides), then one count per
    # finding kind besides label.
    assert head == ["class", "size", "flagged", "overridden", "relabelled", "kept",
                    "proposed", "duplicate", "leak", "outlier", "reduction"] \
        and "total" in table[0].text
    # Under it, what pruned@F would train at 70/50/30%: the sizes the training
    # job's own subset selection gives.
    pruning = wait_for(lambda: driver.find_element(By.ID, "curate-summary-pruning").text)
    for f in (0.7, 0.5, 0.3):
        n = len(select_subset(RunDir(ui_root / "gallery"), f"pruned@{f}", 0).indices)
        assert f"pruned@{f} {n:,} " in pruning, pruning
    assert "--subsets full,pruned@0.5,random@0.5,pruned@0.3,random@0.3" in pruning
    # The wide table scrolls inside its panel: the page never scrolls sideways.
    assert driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")
    # Left, the table is taken down (its cells would cost every class switch); back, it
    # is there again.
    for title, shown in (("Review list", False), ("Summary", True)):
        tab = driver.find_element(By.LINK_TEXT, title)
        driver.execute_script("arguments[0].click()", tab)
        wait_for(lambda shown=shown: bool(driver.find_elements(
            By.CSS_SELECTOR, "#curate-summary table")) == shown)


def test_hover_shows_the_image(driver, server):
    _open(driver, server, "hover")
    sample = trace_markers(driver)["customdata"][0]
    x, y = point_position(driver, sample)
    _move_to(driver, x, y)
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
        _move_to(driver, *point_position(driver, edge))
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
    _move_to(driver, 2, 2)
    wait_for(lambda: not driver.find_element(By.CSS_SELECTOR, ".hover-box").is_displayed())


def test_click_override_survives_reload_and_undo_reverts(driver, server, ui_root):
    """A clicked point scrolls the review list to its row and focuses it; a key decides it.
    The decision is drawn, survives a reload, and Ctrl+Z / Redo take it back and forth."""
    store = CurationStore(ui_root / "click" / "curation.sqlite")
    _open(driver, server, "click")
    listed = listed_of_class(driver)
    clicked = listed[len(listed) // 2]
    decide(driver, clicked, "a")
    wait_for(lambda: store.overrides() == {clicked: "keep"})
    want, colour = "diamond", "#1a9e3a"

    wait_for(lambda: marker_of(driver, clicked) == (want, colour))
    driver.refresh()
    _open(driver, server, "click")
    assert marker_of(driver, clicked) == (want, colour)  # persisted, drawn after a reload
    ActionChains(driver).key_down(Keys.CONTROL).send_keys("z").key_up(Keys.CONTROL).perform()
    wait_for(lambda: store.overrides() == {})
    wait_for(lambda: marker_of(driver, clicked) != (want, colour))
    driver.find_element(By.ID, "curate-redo").click()
    wait_for(lambda: store.overrides() == {clicked: "keep"})


def test_lasso_then_drop(driver, server, ui_root):
    store = CurationStore(ui_root / "lasso" / "curation.sqlite")
    _open(driver, server, "lasso")
    lasso_middle(driver)
    driver.find_element(By.ID, "curate-drop").click()
    overrides = wait_for(lambda: store.overrides())
    assert len(overrides) >= 2 and set(overrides.values()) == {"drop"}


CLASS_FILTER = "#curate-class-list .ag-floating-filter input"


def test_a_class_switch_shows_the_stored_clustering(driver, server, ui_root):
    """Switching classes sets the eps slider to the class's stored eps (snapped to the
    slider's step): that is no drag, so the browser must not re-cluster at the snapped
    value. The map and the counts are the server's, and nothing is stored."""
    from app.curate import logic
    from app.curate.figures import SYMBOLS, marker_style
    from app.run_data import current_state, run_data

    store = CurationStore(ui_root / "switch" / "curation.sqlite")
    before = store.revision()
    _open(driver, server, "switch")
    names = {v: k for k, v in SYMBOLS.items()}
    for code in (3, 7, 1):
        pick_class(driver, code)
        data = run_data(ui_root, "switch")
        members = set(data.members[code].tolist())
        wait_for(lambda m=members: set(trace_markers(driver)["customdata"]) == m)
        state = current_state(data)
        # What follows the switch (the controls at the class's stored eps, the counts) has
        # landed before anything is read: the slider setting itself is what must not
        # re-cluster.
        wait_for(lambda st=state, c=code: float(driver.find_element(
            By.ID, "curate-eps-input").get_attribute("value")) == round(st.params[c][0], 4))
        line = logic.status_text(logic.class_counts(data, state),
                                 logic.noise_per_class(data, state), state.rule)
        wait_for(lambda t=line: status_text(driver) == t)
        last = "return (window.curateDebug || {}).lastRecluster || null"
        assert driver.execute_script(last) is None
        colours, symbols, _ = marker_style(data.members[code], state.decisions, state.marks,
                                           data.proposals)
        assert trace_markers(driver)["color"] == hex_colours(colours)
        assert trace_markers(driver)["symbol"] == [names[s] for s in symbols]
    assert store.revision() == before


# Which of the server's answers carried a new figure for the map (recorded in the page).
FIGURE_ANSWERS = """
window.figureAnswers = [];
const fetch0 = window.fetch;
window.fetch = function (...args) {
  return fetch0.apply(this, args).then((r) => {
    if (String(args[0]).includes('_dash-update-component')) {
      r.clone().json().then((a) => {
        const graph = (a.response || {})['curate-graph'];
        window.figureAnswers.push(Boolean(graph && graph.figure));
      }).catch(() => {});
    }
    return r;
  });
};
"""


# Whether the map shows the other classes' backdrop.
_BACKDROP = ("const gd = document.querySelector('#curate-graph .js-plotly-plot');"
             "return gd.layout.images[0].visible;")


def _rest_on_class(driver, code: int, revision: int) -> None:
    """Move the pointer onto class ``code``'s row, leave it there until the map holds the
    class at store ``revision``, then click."""
    cell = class_cell(driver, code)
    ActionChains(driver, duration=0).move_to_element(cell).perform()
    wait_for(lambda: [code, revision] in driver.execute_script(
        "return window.curateDebug.heldClasses()"))
    ActionChains(driver, duration=0).click(cell).perform()


def test_a_class_drawn_ahead_is_the_servers_and_takes_later_changes(driver, server,
                                                                   ui_root):
    """A class picked with the pointer resting on its row is drawn by the browser from the
    trace fetched meanwhile (assets/class_map.js): the map shows what the server draws, the
    server's answer leaves the plot as it is, and a change made next is drawn over it. A
    class held from before a change is drawn by the server."""
    from app.curate.figures import SYMBOLS, marker_style
    from app.run_data import current_state, run_data

    names = {v: k for k, v in SYMBOLS.items()}

    def shows(code: int) -> bool:
        data = run_data(ui_root, "ahead")
        state = current_state(data)
        colours, symbols, _ = marker_style(data.members[code], state.decisions, state.marks,
                                           data.proposals)
        m = trace_markers(driver)
        return (m["customdata"] == data.members[code].tolist()
                and m["color"] == hex_colours(colours)
                and m["symbol"] == [names[s] for s in symbols])

    def settled(code: int) -> bool:  # the server has answered the pick (the eps box follows)
        state = current_state(run_data(ui_root, "ahead"))
        return float(driver.find_element(By.ID, "curate-eps-input").get_attribute(
            "value")) == round(state.params[code][0], 4)

    store = CurationStore(ui_root / "ahead" / "curation.sqlite")
    _open(driver, server, "ahead")
    driver.find_element(By.ID, "curate-background").click()  # the other classes hidden
    wait_for(lambda: driver.execute_script(_BACKDROP) is False)
    pick_class(driver, "all")
    wait_for(lambda: len(trace_markers(driver)["customdata"]) > 0 and picked_class(driver)
             == "all")
    driver.execute_script(FIGURE_ANSWERS)
    before = store.revision()
    _rest_on_class(driver, 5, before)
    wait_for(lambda: shows(5))
    wait_for(lambda: settled(5))
    assert driver.execute_script(_BACKDROP) is False  # drawn as the switch says
    _rest_on_class(driver, 3, before)
    wait_for(lambda: shows(3))
    wait_for(lambda: settled(3))
    answers = driver.execute_script("return window.figureAnswers")
    assert len(answers) >= 2 and True not in answers

    # A decision on the class drawn ahead: the server's marker patch lands on it.
    sample = listed_of_class(driver)[0]
    decide(driver, sample, "d")
    wait_for(lambda: store.revision() > before)
    wait_for(lambda: shows(3))
    assert store.overrides()[sample] == "drop"

    # Class 5 is held at the revision before the decision: the server draws it.
    driver.execute_script("window.figureAnswers = []")
    pick_class(driver, 5)
    wait_for(lambda: shows(5))
    wait_for(lambda: settled(5))
    assert True in driver.execute_script("return window.figureAnswers")


def test_class_list_filters_and_sorts_by_any_column(driver, server):
    """The class list is a grid: its name filter narrows it ("1 of 10 classes"), a click on
    a column header sorts it, and "All classes" stays on top through both."""
    _open(driver, server, "load")
    assert listed_classes(driver)[:3] == ["All classes", "0", "1"]
    assert picked_class(driver) == "0"
    box = driver.find_element(By.CSS_SELECTOR, CLASS_FILTER)
    box.send_keys("7")
    wait_for(lambda: listed_classes(driver) == ["All classes", "7"])
    wait_for(lambda: driver.find_element(By.ID, "curate-class-matched").text
             == "1 of 10 classes")
    box.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
    wait_for(lambda: len(listed_classes(driver)) == 11)
    wait_for(lambda: driver.find_element(By.ID, "curate-class-matched").text == "")
    header = driver.find_element(By.CSS_SELECTOR,
                                 "#curate-class-list .ag-header-cell[col-id='share']")
    driver.execute_script("arguments[0].querySelector('.ag-header-cell-label').click()", header)
    wait_for(lambda: [r["share"] for r in class_rows(driver)[1:]]
             == sorted((r["share"] for r in class_rows(driver)[1:]), reverse=True))
    assert listed_classes(driver)[0] == "All classes"
    pick_class(driver, 7)
    wait_for(lambda: picked_class(driver) == "7")


@pytest.mark.parametrize("size", [(1366, 768), (1440, 900)])
def test_map_and_review_list_share_one_screen(server, size):
    """At 1366×768 and 1440×900 the map and the review list sit side by side, both in the
    window, with Summary, Export and Retrain in view; nothing scrolls sideways."""
    small = chrome(*size)
    try:
        _open(small, server, "load")
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
        assert [t for t, _ in boxes["tabs"]] == ["Review list", "Summary", "Export", "Retrain"]
        assert all(bottom < height for _, bottom in boxes["tabs"]), boxes
        assert boxes["scroll"] <= width, boxes
    finally:
        small.quit()


def test_a_tab_built_on_opening_keeps_what_was_typed(driver, server):
    """Export and Retrain are not on the page until first opened (fewer mounted
    components on every class switch); once built they stay, with what the user typed."""
    _open(driver, server, "export")
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
    assert not _severe_errors(driver)


def test_export_produces_the_manifest(driver, server, ui_root):
    _open(driver, server, "export")
    tab = driver.find_element(By.LINK_TEXT, "Export")
    driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)
    name = wait_for(lambda: driver.find_element(By.ID, "export-name"))
    wait_for(name.is_displayed)  # built on opening, then faded in
    name.send_keys("from-browser")
    driver.execute_script("arguments[0].click();", driver.find_element(By.ID, "export-go"))
    link = wait_for(lambda: driver.find_element(By.ID, "export-download"), timeout=60)
    manifest = ui_root / "export" / "exports" / "from-browser" / "manifest.csv"
    rows = list(csv.DictReader(open(manifest)))
    assert len(rows) == 1797 and "reason" in rows[0]
    with urllib.request.urlopen(link.get_attribute("href")) as resp:
        assert resp.read().decode().startswith("index,path,label")
    # An export from a shell is a job like the app's: the Jobs page lists both, done.
    r = subprocess.run([CURATOR, "export", str(ui_root / "export"), "--dest", "from-shell"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    driver.get(f"{server.url}/jobs")
    rows = wait_for(lambda: driver.execute_script(
        "return Array.from(document.querySelectorAll('#jobs-table tr'))"
        ".map(r => Array.from(r.cells).map(c => c.textContent))"
        ".filter(c => c[1] === 'export' && c[2] === 'export');"))
    assert len(rows) == 2 and all(": succeeded · took " in r[3] and r[3].endswith(" · done")
                                  for r in rows), rows


def _field(name: str) -> str:
    """The DOM id of the Retrain form's field ``name`` (a pattern-matching id, which Dash
    writes as its JSON with sorted keys)."""
    return json.dumps(train_field(name), sort_keys=True, separators=(",", ":"))


def _element(driver, element_id: str):
    """The element with id ``element_id``, any characters (a JSON id is no CSS selector)."""
    return wait_for(lambda: driver.execute_script(
        "return document.getElementById(arguments[0])", element_id))


def _set(driver, element_id: str, value: str) -> None:
    box = _element(driver, element_id)
    wait_for(box.is_displayed)  # a tab's content is built on opening, then fades in
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(value)


def _click(driver, element_id: str) -> None:
    driver.execute_script("arguments[0].click();", driver.find_element(By.ID, element_id))


def test_retrain_with_the_panel_defaults_trains_and_reuses_only_an_identical_subset(
        driver, server, ui_root):
    """One click with the panel's defaults trains on the demo to ≥ 90%; the same click
    again reuses that training and says so; after an override the same click trains anew.
    The Results page, reached from the navigation bar, shows both.

    The model is the panel's smallest, CIFAR ResNet-20 (0.27M parameters), instead of its
    default ResNet-18: the same plan (batch and epochs chosen from the subset size) reached
    0.969 on the demo in 110 s on a loaded 2-core host, where ResNet-18 took over twice as
    long (docs/benchmarks.md, "The suite's time"). How long it takes is not asserted."""
    _open(driver, server, "retrain")
    tab = driver.find_element(By.LINK_TEXT, "Retrain")
    driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)
    plan = wait_for(lambda: driver.find_element(By.ID, "train-plan-text"))
    wait_for(lambda: plan.text)  # the tab fades in: hidden text reads as ""
    assert "batch 32" in plan.text and "chosen from the subset size" in plan.text
    model = _element(driver, _field("model"))
    assert Select(model).first_selected_option.get_attribute("value") == "resnet18"
    Select(model).select_by_value("cifar-resnet20")
    # A batch too large for the subset warns before anything runs; clearing it goes back.
    _set(driver, _field("batch_size"), "512")
    wait_for(lambda: "may not train" in driver.find_element(By.ID, "train-plan").text)
    _element(driver, _field("batch_size")).send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)
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
    assert summary["config"]["model"] == "cifar-resnet20"
    assert summary["final_test_acc"] >= 0.90, summary["final_test_acc"]

    _click(driver, "train-go")  # the same subset and settings: reused, and said so
    wait_for(lambda: "reusing training" in driver.find_element(By.ID, "train-status").text,
             timeout=60)
    assert len(list((ui_root / "retrain" / "train").iterdir())) == 1

    CurationStore(ui_root / "retrain" / "curation.sqlite").set_overrides(range(40), "drop")
    # The same click after an override: another subset. Two epochs keep the suite short;
    # what is checked is that the new subset is trained, not how well.
    _set(driver, _field("epochs"), "2")
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
    # Up to a minute: the table's refresh counts every run in this module's root (16), and
    # beside a CPU hog on a slow host the row took over 20 s to appear.
    wait_for(lambda: "fromform" in driver.find_element(By.ID, "runs-table").text, timeout=60)
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


def test_relabel_from_the_review_list_reaches_the_export_and_the_training_subset(
        driver, server, ui_root):
    """The r key relabels the focused row to its suggestion (its badge then says so), the
    exported manifest carries it beside the given label, the filtered subset trains with
    it, and Undo takes it back."""
    from worker.train.data import holdout_mask

    store = CurationStore(ui_root / "relabel" / "curation.sqlite")
    samples = RunDir(ui_root / "relabel").read_samples()
    classes, held_out = samples.classes, holdout_mask(samples.labels)
    _open(driver, server, "relabel")
    rows = wait_for(lambda: grid_rows(driver))
    at, row = next((k, r) for k, r in enumerate(rows)
                   if r["suggested"] and not held_out[r["sample"]])
    focus_row(driver, at)
    wait_for(lambda: focused_sample(driver) == row["sample"])
    driver.find_element(By.TAG_NAME, "body").send_keys("r")
    sample, new = row["sample"], row["suggested"]
    wait_for(lambda: store.relabels() == {sample: classes.index(new)})
    wait_for(lambda: any(r["sample"] == sample and r["state"] == "relabelled"
                         for r in grid_rows(driver)))
    assert "· 1 relabelled ·" in status_text(driver)

    tab = driver.find_element(By.LINK_TEXT, "Export")
    driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();", tab)
    _set(driver, "export-name", "relabelled")
    _click(driver, "export-go")
    wait_for(lambda: driver.find_element(By.ID, "export-download"), timeout=60)
    manifest = ui_root / "relabel" / "exports" / "relabelled" / "manifest.csv"
    exported = list(csv.DictReader(open(manifest)))[sample]
    assert exported["label"] == new != exported["given_label"]
    assert exported["reason"] == "relabel"
    subset = select_subset(RunDir(ui_root / "relabel"), "filtered", 0)
    assert subset.labels[list(subset.indices).index(sample)] == classes.index(new)

    _click(driver, "curate-undo")
    wait_for(lambda: store.relabels() == {})


def test_class_list_scrolls_through_300_classes(driver, tmp_path_factory):
    """A features: run with 300 classes: the list holds every class but draws only the
    rows in view; the last class can be scrolled to and shown, and the filter narrows it."""
    import os

    from bench.synth import SynthSpec, write_synthetic

    base = tmp_path_factory.mktemp("many")
    feats, labels = write_synthetic(base / "data", SynthSpec(n=3000, classes=300, dim=32,
                                                             class_offset=0.5))
    env = {**os.environ, "CURATOR_BROKER_URL": ""}
    # A short t-SNE: the list is what is tested here, not the map's quality.
    subprocess.run([CURATOR, "pipeline", "--dataset", f"features:{feats}", "--labels",
                    str(labels), "--out", str(base / "runs" / "many"), "--n-iter", "100",
                    "--exaggeration-iter", "50"], env=env, check=True, capture_output=True,
                   timeout=300)
    srv = Server(base / "runs")
    try:
        _open(driver, srv, "many")
        wait_for(lambda: listed_classes(driver)[:2] == ["All classes", "c0000"])
        assert len(class_rows(driver)) == 301
        drawn = len(driver.find_elements(By.CSS_SELECTOR, "#curate-class-list .ag-row"))
        assert 5 < drawn < 80  # of 301 rows: the grid draws those in view
        pick_class(driver, 299)
        wait_for(lambda: picked_class(driver) == "299")
        given = [row["label"] for row in csv.DictReader(open(labels))]
        wait_for(lambda: {given[i] for i in trace_markers(driver)["customdata"]} == {"c0299"})
        driver.find_element(By.CSS_SELECTOR, CLASS_FILTER).send_keys("c015")
        wait_for(lambda: listed_classes(driver) == ["All classes",
                                                    *[f"c{c:04d}" for c in range(150, 160)]])
        assert driver.find_element(By.ID, "curate-class-matched").text == "10 of 300 classes"
    finally:
        srv.stop()
