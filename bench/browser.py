"""Helpers for browser tests and the UI benchmark: a real ``curator serve`` subprocess and
Debian's headless Chromium driven by Selenium."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from bench.common import curator_cmd

CHROMIUM = os.environ.get("CURATOR_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CURATOR_CHROMEDRIVER", "/usr/bin/chromedriver")


def browser_available() -> str | None:
    """None when Chromium and ChromeDriver are installed, else why not."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not shutil.which(path):
            return f"{path} is missing: apt-get install chromium chromium-driver"
    return None


def browser_marks() -> list:
    """The marks of a browser test module: slow, and skipped with the reason when Debian's
    Chromium or ChromeDriver is missing."""
    import pytest

    return [pytest.mark.slow, pytest.mark.skipif(browser_available() is not None,
                                                 reason=browser_available() or "")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``curator serve`` on a free port of 127.0.0.1, for one runs root; with the Curate
    page's test hooks (``window.curateDebug``, CURATOR_DEBUG_HOOKS) unless ``env`` says
    otherwise."""

    def __init__(self, runs_root: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = {**os.environ, "CURATOR_BROKER_URL": "", "CURATOR_DEBUG_HOOKS": "1",
                    **(env or {})}
        self.log = open(runs_root.parent / f"serve-{self.port}.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [*curator_cmd(), "serve", "--runs-root", str(runs_root), "--port", str(self.port)],
            env=full_env, stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=1)
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"curator serve did not start; see {self.log.name}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@contextlib.contextmanager
def served(runs_root: Path) -> Iterator[tuple[Server, object]]:
    """``curator serve`` on ``runs_root`` and a Chromium driving it, both stopped after,
    and the server stopped too when the browser cannot start."""
    with contextlib.ExitStack() as stack:
        srv = Server(runs_root)
        stack.callback(srv.stop)
        driver = chrome()
        stack.callback(driver.quit)
        yield srv, driver


def chrome(width: int = 1366, height: int = 900):
    """Headless Chromium (as root it needs --no-sandbox) with the browser log enabled."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--disable-quic", "--enable-unsafe-swiftshader"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def wait_for(predicate, timeout: float = 20.0, poll: float = 0.02):
    """Poll ``predicate`` until it returns something truthy; return that.

    After 2 s the poll slows to 0.25 s: 50 WebDriver round trips a second kept ChromeDriver
    and Chromium busy enough to halve a CPU training the test was waiting for."""
    start = time.monotonic()
    end = start + timeout
    last_exc = None
    while time.monotonic() < end:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - the page may be mid-render
            last_exc = exc
        time.sleep(poll if time.monotonic() - start < 2.0 else max(poll, 0.25))
    raise AssertionError(f"timed out waiting for {predicate}: {last_exc}")


def shown_text(element) -> str:
    """``element``'s text once it is displayed and has some: Selenium's ``.text`` of an
    element not yet visible (a tab still fading in) is "", which a test would misread."""
    return wait_for(lambda: element.is_displayed() and element.text)


GRAPH_JS = "return document.querySelector('#curate-graph .js-plotly-plot')"


def hex_colours(colours: list) -> list[str]:
    """Marker colours as ``#rrggbb``: the page draws 0-1 channel arrays
    (app/curate/figures.py ``channels``), a scalar colour stays as it is."""
    return [c if isinstance(c, str) else "#" + "".join(f"{round(v * 255):02x}" for v in c[:3])
            for c in colours]


def trace_markers(driver) -> dict | None:
    """Current colours (hex, :func:`hex_colours`) and symbols (names) of the class trace
    (trace 1). The page sends symbol numbers; they are translated back to names here."""
    from app.curate.figures import SYMBOLS

    m = driver.execute_script(
        "const gd = document.querySelector('#curate-graph .js-plotly-plot');"
        "if (!gd || !gd._fullData || gd._fullData.length < 2) return null;"
        "const t = gd._fullData[1]; const m = t.marker;"
        "return {color: Array.from(m.color), symbol: Array.from(m.symbol),"
        " customdata: Array.from(t.customdata), n: gd._fullData.length};")
    if m is None:
        return None
    names = {v: k for k, v in SYMBOLS.items()}
    m["symbol"] = [names.get(s, s) for s in m["symbol"]]
    m["color"] = hex_colours(m["color"])
    return m


def point_position(driver, sample: int) -> tuple[float, float] | None:
    """Page pixel position of sample ``sample`` in the class trace."""
    return driver.execute_script(
        "const gd = document.querySelector('#curate-graph .js-plotly-plot');"
        "const t = gd._fullData[1]; const k = Array.from(t.customdata).indexOf(arguments[0]);"
        "if (k < 0) return null; const L = gd._fullLayout; const box = gd.getBoundingClientRect();"
        "return [box.left + L._size.l + L.xaxis.l2p(t.x[k]),"
        "        box.top + L._size.t + L.yaxis.l2p(t.y[k])];", sample)


def marker_of(driver, sample: int) -> tuple[str, str]:
    """The symbol name and hex colour the map draws ``sample`` with."""
    m = trace_markers(driver)
    k = m["customdata"].index(sample)
    return m["symbol"][k], m["color"][k]


def click_at(driver, x: float, y: float) -> None:
    """A real pointer click at window pixel (x, y)."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(x), int(y)).click()
    actions.perform()


def decide(driver, sample: int, key: str) -> None:
    """Click ``sample``'s point on the map (the review list focuses its row), then press
    ``key`` (a keep, d drop) on it."""
    from selenium.webdriver.common.by import By

    click_at(driver, *point_position(driver, sample))
    wait_for(lambda: focused_sample(driver) == sample)
    driver.find_element(By.TAG_NAME, "body").send_keys(key)


def press_undo(driver) -> None:
    """Press ``u`` once the page has drawn the decision it undoes.

    The store is written before the page hears back; the undo button is enabled only then,
    and a key pressed on a disabled button does nothing, so wait on the button, not on the
    store."""
    from selenium.webdriver.common.by import By

    from app import ids

    wait_for(lambda: driver.find_element(By.ID, ids.UNDO).is_enabled())
    driver.find_element(By.TAG_NAME, "body").send_keys("u")


def listed_of_class(driver) -> list[int]:
    """The review list's samples among the shown class's points, as the map draws them,
    that only the label rule lists (a near-duplicate lies on its copy's spot of the map, so
    a click there may hit the copy)."""
    ids = set(trace_markers(driver)["customdata"])
    rows = wait_for(lambda: grid_rows(driver))
    return [r["sample"] for r in rows if r["sample"] in ids and r["finding"] == "label"]


def status_text(driver) -> str:
    return driver.find_element("id", "curate-status").text


# The class list's grid API and a row's node by its id ("3", or "all": the pinned row), for
# the scripts below (the page's own production code offers none).
CLASS_NODE = """
let api; try { api = dash_ag_grid.getApi('curate-class-list'); } catch (e) { api = null; }
const nodeOf = (id) => id === 'all' ? (api.getPinnedTopRowCount() ? api.getPinnedTopRow(0) : null)
  : api.getRowNode(id) || null;
"""


PICK_CLASS = CLASS_NODE + """
if (!api) return false;
const node = nodeOf(arguments[0]);
if (!node) return false;
if (!node.rowPinned) api.ensureNodeVisible(node);
const row = document.querySelector(`#curate-class-list .ag-row[row-id="${arguments[0]}"] .ag-cell`);
if (!row) return false;
row.click();  // AG Grid's own click handling, as a user's click (wherever the page scrolls)
return true;
"""


CLASS_CELL = CLASS_NODE + """
const node = api && nodeOf(arguments[0]);
if (!node) return null;
if (!node.rowPinned) api.ensureNodeVisible(node);
return document.querySelector(`#curate-class-list .ag-row[row-id="${arguments[0]}"] .ag-cell`);
"""


def class_cell(driver, code: int | str):
    """A cell of class ``code``'s row in the class list, scrolled into view (to point at
    and click with real input)."""
    return wait_for(lambda: driver.execute_script(CLASS_CELL, str(code)))


def pick_class(driver, code: int | str) -> None:
    """Click class ``code`` (or "all") in the Curate page's class list (a dash-ag-grid),
    scrolling its row into view first."""
    wait_for(lambda: driver.execute_script(PICK_CLASS, str(code)))


def class_rows(driver) -> list[dict]:
    """The class list's rows as shown (filtered and sorted), "All classes" first."""
    return driver.execute_script(CLASS_NODE + """
        if (!api) return [];
        const out = []; const top = nodeOf("all"); if (top) out.push(top.data);
        api.forEachNodeAfterFilterAndSort(n => out.push(n.data)); return out;""")


def listed_classes(driver) -> list[str]:
    """The class list's row names, in order, "All classes" first."""
    return [r["class"] for r in class_rows(driver)]


def picked_class(driver) -> str | None:
    """The row id ("3", "all") of the class list's marked row, as drawn."""
    return driver.execute_script(
        "const r = document.querySelector('#curate-class-list .ag-row.class-picked');"
        "return r && r.getAttribute('row-id');")


def grid_rows(driver) -> list[dict]:
    """The review list's rows as shown (filtered and sorted), read through its own API."""
    return driver.execute_script("""
        let api; try { api = dash_ag_grid.getApi('review-grid'); } catch (e) { return []; }
        const out = []; api.forEachNodeAfterFilterAndSort(n => out.push(n.data)); return out;""")


def focus_row(driver, index: int) -> None:
    """Focus the review list's row at display ``index`` (clamped) and scroll it into view,
    as j and k do (assets/review.js)."""
    driver.execute_script("""
        let api; try { api = dash_ag_grid.getApi('review-grid'); } catch (e) { return; }
        const n = api.getDisplayedRowCount(); if (!n) return;
        const at = Math.max(0, Math.min(arguments[0], n - 1));
        api.ensureIndexVisible(at); api.setFocusedCell(at, 'state');""", index)


def focused_sample(driver) -> int | None:
    """The sample of the review list's focused row, or None."""
    return driver.execute_script("""
        let api; try { api = dash_ag_grid.getApi('review-grid'); } catch (e) { return null; }
        const cell = api.getFocusedCell(); if (!cell) return null;
        const node = api.getDisplayedRowAtIndex(cell.rowIndex);
        return node ? node.data.sample : null;""")


def ringed_point(driver) -> tuple[int, float, float] | None:
    """The map's ring (around the point of the hovered or focused review row): its sample
    and its centre in window pixels, or None when it is hidden."""
    return driver.execute_script("""
        const el = document.querySelector('#curate-graph .map-ring');
        if (!el || el.style.display === 'none' || !el.dataset.sample) return null;
        const r = el.getBoundingClientRect();
        return [Number(el.dataset.sample), r.left + r.width / 2, r.top + r.height / 2];""")


def scroll_click(driver, element) -> None:
    """Scroll ``element`` to the middle of the window, then click it as a user would."""
    # Instant: Bootstrap makes scrolling smooth, and a click during the glide misses.
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element)
    element.click()


def lasso_middle(driver, half: int = 25) -> list[int]:
    """Draw a lasso loop around the middle of the shown class; returns the samples it
    selected, once Plotly has them."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

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


def open_review_list(driver, url: str):
    """Open the Curate page at ``url`` on its Review list tab, once the list has rows."""
    from selenium.webdriver.common.by import By

    driver.get(url)
    tab = wait_for(lambda: [t for t in driver.find_elements(By.CSS_SELECTOR, ".nav-link")
                            if t.text.startswith("Review list")])
    tab[0].click()
    wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#review-grid .ag-row"), 30)
    return driver
