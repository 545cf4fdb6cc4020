"""UI latency of the Curate page on a CIFAR-scale run (50,000 points, ~5,000 per class).

Starts ``curator serve`` on a copy of the run and drives headless Chromium. Every time is
taken inside the page with ``performance.now()``: from the user's input event (Enter in
the eps box, the mouse reaching a point, the click on a class) to the end of the repaint
(Plotly's ``plotly_afterplot`` and the counts updated) or, for hover, the later of the
hover card image's ``load`` event and the card being opened; "eps change, stored" is when
the server's answer to the browser's re-cluster has arrived (the change is in the store).
The eps change is timed twice: through the server alone (the baseline,
:data:`SERVER_PATH`) and as the page does it, re-clustered in the browser
(assets/class_map.js). A class switch is a real click after the pointer rested on the
class's row (``--rest``, during which the map may fetch the class), timed also with that
fetching switched off (drawn by the server, as before it). Prints p50/p95 per action,
their ratio and, last, ``p95_ms=<eps change p95>``. "triage step" is a real key press in
the review list (``j``, assets/review.js, sent through the DevTools protocol), from the
key event's timestamp until the first frame painted with the next row focused and its
point ringed on the map (``triage_ms``); "more like this" is the same for ``s``, until the
list holds the focused row's nearest samples (``similar_ms``), the key pressed ``--look``
seconds after the row took focus (``--similar-only`` also times it pressed at once);
"triage step, scripted" is
the older timing (a dispatched event to two animation frames later, one frame more than
the paint). "apply to all classes" is a click on Apply to all until the server's answer
arrives (every class stored and re-clustered); the server's peak resident memory (VmHWM)
is printed after the table.

    python -m bench.ui_latency [--run runs/cifar10n] [--eps-changes 30]
    python -m bench.ui_latency --run RUN --similar-only   # more like this beside triage
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    CLASS_NODE,
    Server,
    class_cell,
    pick_class,
    point_position,
    served,
    trace_markers,
    wait_for,
)
from bench.common import machine

HOOKS = """
const gd = document.querySelector('#curate-graph .js-plotly-plot');
window.bench = {plot: 0, status: 0, img: 0, card: 0, t0: 0, answered: 0, figure: 0};
// When the server's answer to a callback has arrived (for an eps change: stored), and
// the last one that carried a new figure for the map.
const fetch0 = window.fetch;
window.fetch = function (...args) {
  return fetch0.apply(this, args).then((r) => {
    if (String(args[0]).includes('_dash-update-component')) {
      r.clone().text().then((text) => {
        window.bench.answered = performance.now();
        if (text.includes('"curate-graph":{"figure"')) window.bench.figure = performance.now();
      });
    }
    return r;
  });
};
gd.on('plotly_afterplot', () => { window.bench.plot = performance.now(); });
new MutationObserver(() => { window.bench.status = performance.now(); })
  .observe(document.getElementById('curate-status'), {childList: true, subtree: true,
                                                       characterData: true});
// t0: when the browser took the input (the event's own time stamp, on performance.now()'s
// clock), whichever listener runs first: the page's key listener (assets/keyboard.js)
// repaints on Enter before a listener added here would run.
document.addEventListener('keydown', e => {
  if (e.key === 'Enter') window.bench.t0 = e.timeStamp;
}, true);
document.addEventListener('click', e => { window.bench.t0 = e.timeStamp; }, true);
document.addEventListener('mousemove', e => { window.bench.t0 = e.timeStamp; }, true);
// The hover card shown (its box displayed), the first time since window.bench.card = 0.
const card = document.querySelector('.hover-box');
new MutationObserver(() => {
  if (card.classList.contains('open') && !window.bench.card) window.bench.card = performance.now();
}).observe(card, {attributes: true, attributeFilter: ['class']});
document.addEventListener('load', e => {
  // The first load since window.bench.img = 0: the image is there from then on (a
  // second load, from its src set again to the same URL, changes nothing on screen).
  if (e.target.classList && e.target.classList.contains('hover-img') && !window.bench.img) {
    window.bench.img = performance.now();
  }
}, true);
"""


@contextlib.contextmanager
def served_run(run: Path, prefix: str) -> Iterator[tuple[Server, object]]:
    """``curator serve`` on a copy of ``run`` (as run id ``bench``, without its exports and
    its cache but for the map's PCA, which every run the pipeline made keeps there) and a
    headless Chromium, both stopped and the copy removed after."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    root = work / "runs"
    root.mkdir()
    shutil.copytree(run, root / "bench", ignore=shutil.ignore_patterns("cache", "exports"))
    # Without it the server's first s fits the PCA again, which no user's server does.
    (root / "bench" / "cache").mkdir(exist_ok=True)
    for pca in (run / "cache").glob("pca-*.npz"):
        shutil.copy2(pca, root / "bench" / "cache" / pca.name)
    try:
        with served(root) as (server, driver):
            yield server, driver
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def repaint_ms(driver, counts: bool = True, timeout: float = 30.0) -> float:
    """Wait for the plot (and, for edits, the counts) to repaint after the last input;
    return the latency. A class switch leaves the run-wide counts as they are, and so may
    an edit whose re-cluster changes no count (a small class all noise at both eps): the
    counts are waited for 1 s past the plot, then the plot's time stands alone."""
    def painted(b):
        return b["plot"] > b["t0"]

    def counted(b):
        return b["status"] > b["t0"] or not counts

    first = wait_for(lambda: (b := driver.execute_script("return window.bench")) and painted(b)
                     and b, timeout=timeout, poll=0.01)
    if not counted(first):
        try:
            wait_for(lambda: counted(driver.execute_script("return window.bench")),
                     timeout=1.0, poll=0.01)
        except AssertionError:
            counts = False  # nothing to count: the plot's repaint is the answer
    time.sleep(0.15)  # let any second repaint land, so it is counted too
    b = driver.execute_script("return window.bench")
    return max(b["plot"], b["status"] if counts else 0) - b["t0"]


# One keyboard triage step, as a user's key arrives: a real ("trusted") key press sent
# through the DevTools protocol, timed from the event's own timestamp (when the browser
# took the key, so any input delay counts) to just after the first frame painted with the
# next row focused and its point ringed: a message posted from an animation-frame callback
# runs after that frame's paint, and the check is repeated each frame until both show.
# Chrome's Event Timing entries (its own measure, the one INP uses: from the key to the
# frame presented on screen, so a little later than the paint; it reports only those of
# 16 ms or more, in steps of 8 ms) are printed beside it as a check.
# Checks ``shown()`` after each frame's paint (a message posted from an animation-frame
# callback runs after that frame's paint) until it holds; then ``rec.ms`` is the time from
# ``t0`` and ``rec.done`` is set. Every probe below starts with it.
UNTIL_PAINTED = """
window.untilPainted = (shown, rec, t0) => {
  const frame = () => requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      if (shown()) { rec.ms = performance.now() - t0; rec.done = true; } else frame();
    };
    ch.port2.postMessage(0);
  });
  frame();
};
"""
TRIAGE_PROBE = UNTIL_PAINTED + """
window.triage = [];
window.triageEvents = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.name === 'keydown') window.triageEvents.push(e.duration);
}).observe({type: 'event', durationThreshold: 16});
const api = () => dash_ag_grid.getApi('review-grid');
const focused = () => { const c = api().getFocusedCell(); return c ? c.rowIndex : -1; };
// The row each "j" should reach: counted here from the row focused before the first key
// (window.triageAt, set by the bench), since the page's own key listener has already
// moved the focus when this one runs.
document.addEventListener('keydown', (e) => {
  if (e.key !== 'j') return;
  // The last row stays focused at the end of the list (review.js clamps the same way).
  const t0 = e.timeStamp;
  const want = window.triageAt = Math.min(window.triageAt + 1, api().getDisplayedRowCount() - 1);
  const rec = {done: false};
  window.triage.push(rec);
  const shown = () => {
    const node = api().getDisplayedRowAtIndex(want);
    const cell = document.querySelector('#review-grid .ag-cell-focus');
    const ring = document.querySelector('#curate-graph .map-ring');
    return node && cell && cell.closest('.ag-row').getAttribute('row-index') === String(want)
      && ring && ring.dataset.sample === String(node.data.sample);
  };
  untilPainted(shown, rec, t0);
}, true);
"""
# More like this (app/curate/similar_panel.py): from the s key's event until the first frame
# painted with the review list holding the focused row's nearest samples (rows set after
# the key, their distance column filled, the line naming the sample asked about).
SIMILAR_PROBE = UNTIL_PAINTED + """
window.similarSteps = [];
const grid = () => dash_ag_grid.getApi('review-grid');
// The rows must be the new listing's: the last listing's rows also have distances.
window.similarRows = 0;
grid().addEventListener('rowDataUpdated', () => { window.similarRows = performance.now(); });
// The sample asked about is the one the bench focused (similarAnchor): a listing asked for
// early is painted before this listener runs (after the page's own, on the window).
document.addEventListener('keydown', (e) => {
  if (e.key !== 's') return;
  const t0 = e.timeStamp;
  const anchor = window.similarAnchor;
  const rec = {done: false, anchor};
  window.similarSteps.push(rec);
  const shown = () => {
    const first = grid().getDisplayedRowAtIndex(0);
    const line = document.getElementById('similar-line').textContent;
    return window.similarRows > t0 && first && first.data.distance !== null
      && first.data.sample !== anchor && line.startsWith('similar to #' + anchor + ' ');
  };
  untilPainted(shown, rec, t0);
}, true);
"""
# An image file picked in the upload box (app/curate/similar_panel.py): from the file
# input's change event until the first frame painted with the file's nearest samples.
UPLOAD_PROBE = UNTIL_PAINTED + """
window.uploads = [];
const input = document.querySelector('#similar-upload input[type=file]');
input.addEventListener('change', (e) => {
  const t0 = e.timeStamp, name = input.files[0].name;
  const rec = {done: false};
  window.uploads.push(rec);
  const shown = () => window.similarRows > t0 &&
    document.getElementById('similar-line').textContent.startsWith('similar to ' + name);
  untilPainted(shown, rec, t0);
}, true);
"""
# The same step as the bench first timed it: "j" dispatched by a script, timed to two
# animation frames later (that counts one frame more than the paint).
TRIAGE_SCRIPTED = """
const done = arguments[arguments.length - 1];
const t0 = performance.now();
document.dispatchEvent(new KeyboardEvent('keydown', {key: 'j', bubbles: true}));
requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
"""


def triage_ms(driver, n: int) -> tuple[dict[str, list[float]], str]:
    """``n`` triage steps (key "j") through real key presses, then ``n`` scripted ones:
    their times in ms, and a line on Chrome's Event Timing entries (16 ms or more)."""
    driver.execute_script(TRIAGE_PROBE)
    # The keys go where a reviewer's would: to the list, its first row focused (as by a
    # click), not to the eps box typed in last.
    driver.execute_script("dash_ag_grid.getApi('review-grid').setFocusedCell(0, 'state');"
                          "window.triageAt = 0;")
    key = {"key": "j", "code": "KeyJ", "windowsVirtualKeyCode": 74}
    for k in range(n):
        driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyDown", "text": "j", **key})
        driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyUp", **key})
        wait_for(lambda k=k: driver.execute_script(
            "return window.triage.length > arguments[0] && window.triage[arguments[0]].done",
            k), timeout=10, poll=0.01)
        time.sleep(0.1)  # keys a tenth of a second apart, as a reviewer's j held down
    steps = driver.execute_script("return window.triage.map((r) => r.ms)")
    events = driver.execute_script("return window.triageEvents")
    scripted = [driver.execute_async_script(TRIAGE_SCRIPTED) for _ in range(n)]
    # Chrome leaves out keys under 16 ms: they count as 0 ("under 16") in the ranks.
    ranked = events + [0.0] * (len(steps) - len(events))

    def ms(q: float) -> str:
        v = pct(ranked, q)
        return f"{v:.0f} ms" if v else "under 16 ms"

    line = (f"p50 {ms(0.5)}, p95 {ms(0.95)}, max {ms(1.0)} "
            f"({len(steps) - len(events)} of {len(steps)} under 16 ms)")
    return {"triage step": steps, "triage step, scripted": scripted}, line


# One sort or filter of the review list (app/curate/review_list.py), through the grid's own API:
# from the call until the grid's model is updated and the rows are painted (two animation
# frames later). Returns [ms, rows shown].
GRID_STEP = """
const done = arguments[arguments.length - 1];
const api = dash_ag_grid.getApi('review-grid');
const kind = arguments[0], arg = arguments[1];
const t0 = performance.now();
api.addEventListener('modelUpdated', function once() {
  api.removeEventListener('modelUpdated', once);
  requestAnimationFrame(() => requestAnimationFrame(
    () => done([performance.now() - t0, api.getDisplayedRowCount()])));
});
if (kind === 'sort') {
  api.applyColumnState({state: [{colId: arg[0], sort: arg[1]}], defaultState: {sort: null}});
} else {
  api.setFilterModel(arg);
}
"""
SORTS = [("given", "asc"), ("score", "desc"), ("suggested", "asc"), ("state", "asc"),
         ("sample", "desc"), ("score", "asc")]
# The same sort of the same rows in plain JavaScript (a copy of the grid's rows, by the same
# column, then the rendering's two animation frames): a baseline of the CPU the page has at
# that moment, taken between the grid's steps so that load on the machine slows both alike.
PLAIN_SORT = """
const done = arguments[arguments.length - 1];
const [col, dir] = arguments[0];
const rows = [];
dash_ag_grid.getApi('review-grid').forEachNode((n) => rows.push(n.data));
const t0 = performance.now();
const key = (r) => r[col] === null || r[col] === undefined ? '' : r[col];
rows.slice().sort((a, b) => {
  const x = key(a), y = key(b);
  const c = typeof x === 'number' && typeof y === 'number' ? x - y
    : String(x).localeCompare(String(y));
  return dir === 'asc' ? c : -c;
});
requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
"""


def _filters(rows: list[dict]) -> list[dict]:
    """Filter models a reviewer would use, in turn: a class, a given → suggested pair, a
    score range, a state, and none; each differs from the one before."""
    given = sorted({r["given"] for r in rows})
    pair = next((r for r in rows if r["suggested"]), rows[0])

    def text(value: str) -> dict:
        return {"filterType": "text", "type": "equals", "filter": value}

    return [{"given": text(given[0])},
            {"given": text(pair["given"]), "suggested": text(pair["suggested"])},
            {"score": {"filterType": "number", "type": "greaterThanOrEqual", "filter": 0.9}},
            {"state": text("flagged")}, {"given": text(given[-1])}, {}]


def similar_ms(driver, n: int, look: float = 0.0) -> list[float]:
    """``n`` "more like this" steps through real key presses (``s``, on the focused row,
    the pointer off the map): each from the key's event to the painted listing, in ms.
    Each step asks about a row of the last listing, so every ask is a new sample; the key
    comes ``look`` seconds after the row took focus (a reader's look at it, during which
    the page may ask for the answer: assets/review.js ``askEarly``). With ``look`` 0 the
    key comes at once, on the row before the last: the page asks early for the row focused
    when a listing lands (the last, the step before), and this one must not be that."""
    if not driver.execute_script("return window.similarSteps !== undefined"):
        driver.execute_script(SIMILAR_PROBE)
    done = driver.execute_script("return window.similarSteps.length")
    key = {"key": "s", "code": "KeyS", "windowsVirtualKeyCode": 83}
    ActionChains(driver).move_to_element(driver.find_element("id", "review-count")).perform()
    for k in range(done, done + n):
        driver.execute_script("const api = dash_ag_grid.getApi('review-grid');"
                              "const row = api.getDisplayedRowCount() - arguments[0];"
                              "api.setFocusedCell(row, 'state');"
                              "window.similarAnchor = api.getDisplayedRowAtIndex(row)"
                              ".data.sample;", 1 if look else 2)
        if look:
            time.sleep(look)
        driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyDown", "text": "s", **key})
        driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyUp", **key})
        wait_for(lambda k=k: driver.execute_script(
            "return window.similarSteps.length > arguments[0] && "
            "window.similarSteps[arguments[0]].done", k), timeout=30, poll=0.01)
        time.sleep(0.2)
    return driver.execute_script("return window.similarSteps.slice(arguments[0])"
                                 ".map((r) => r.ms)", done)


def upload_ms(driver, files: list[Path]) -> list[float]:
    """Each image file of ``files`` picked in the upload box in turn: ms from the pick to
    its listing painted (the first is the server's first image query of the run; the page
    started loading the run's network when it opened)."""
    driver.execute_script(UPLOAD_PROBE)
    for k, path in enumerate(files):
        box = driver.find_element("css selector", "#similar-upload input[type=file]")
        box.send_keys(str(path.resolve()))
        wait_for(lambda k=k: driver.execute_script(
            "return window.uploads.length > arguments[0] && window.uploads[arguments[0]].done",
            k), timeout=120, poll=0.01)
        time.sleep(0.2)
    return driver.execute_script("return window.uploads.map((r) => r.ms)")


def review_list(driver, steps: int) -> dict[str, list[float]]:
    """List every class's flags ("All classes") and time sorts and filters of the review
    list; the keys name the number of rows."""
    pick_class(driver, "all")
    wait_for(lambda: driver.execute_script(
        "return !Object.keys(dash_ag_grid.getApi('review-grid').getFilterModel()).length"),
        timeout=120)
    wait_for(lambda: driver.find_elements("css selector", "#review-grid .ag-row"), timeout=120)
    rows = driver.execute_script("const out = []; dash_ag_grid.getApi('review-grid')"
                                 ".forEachNode(n => out.push(n.data)); return out;")
    filters = _filters(rows)
    sort, filter_, plain = (f"review list, {len(rows)} rows: {what}"
                            for what in ("sort", "filter", "plain sort (baseline)"))
    out: dict[str, list[float]] = {sort: [], filter_: [], plain: []}
    for k in range(steps):
        out[sort].append(
            driver.execute_async_script(GRID_STEP, "sort", SORTS[k % len(SORTS)])[0])
        out[plain].append(driver.execute_async_script(PLAIN_SORT, SORTS[k % len(SORTS)]))
        out[filter_].append(
            driver.execute_async_script(GRID_STEP, "filter", filters[k % len(filters)])[0])
    return out


def hover_ms(driver, n: int) -> list[float]:
    """``n`` hovers over points of the shown class, each from outside the plot: the later
    of the image's first load and the card being displayed, from the mouse's arrival."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    ids = trace_markers(driver)["customdata"]
    out = []
    for k in range(n):
        a = ActionBuilder(driver)
        a.pointer_action.move_to_location(5, 5)
        a.perform()
        time.sleep(0.2)
        x, y = point_position(driver, ids[(k * 997) % len(ids)])
        driver.execute_script("window.bench.img = 0; window.bench.card = 0")
        a = ActionBuilder(driver)
        a.pointer_action.move_to_location(int(x), int(y))
        a.perform()
        b = wait_for(lambda: (v := driver.execute_script("return window.bench"))["img"] > 0
                     and v["card"] > 0 and v, timeout=10, poll=0.01)
        out.append(max(b["img"], b["card"]) - b["t0"])
    return out


# A continuous drag of the eps slider's thumb, as a hand does it: real ("trusted") mouse
# events sent through the DevTools protocol, a move every 8 ms (a 125 Hz mouse) in 2 px
# steps, left and back. Timed in the page: every animation frame's interval while the
# drag lasts (a frame that misses the 60 Hz deadline shows as 33 ms), and for each
# browser-side repaint (a Plotly restyle of the class) the time from the latest pointer
# move before it to just after the frame that painted it.
DRAG_PROBE = """
window.drag = {on: false, frames: [], paints: [], moved: 0, last: 0};
document.addEventListener('pointermove', (e) => {
  if (window.drag.on) window.drag.moved = e.timeStamp;
}, true);
const gd = document.querySelector('#curate-graph .js-plotly-plot');
gd.on('plotly_restyle', () => {
  if (!window.drag.on) return;
  const t0 = window.drag.moved;
  requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => window.drag.paints.push(performance.now() - t0);
    ch.port2.postMessage(0);
  });
});
const tick = (t) => {
  if (!window.drag.on) { window.drag.last = 0; return; }
  if (window.drag.last) window.drag.frames.push(t - window.drag.last);
  window.drag.last = t;
  requestAnimationFrame(tick);
};
window.drag.start = () => { window.drag.on = true; requestAnimationFrame(tick); };
"""


def idle_frames(driver, seconds: float) -> list[float]:
    """The page's animation-frame intervals (ms) while it is left alone for ``seconds``:
    the baseline a page's own work is measured against (a frame is the display's, 16.7 ms
    at 60 Hz, whatever the machine's speed)."""
    driver.execute_script(DRAG_PROBE)
    driver.execute_script("window.drag.start()")
    time.sleep(seconds)
    driver.execute_script("window.drag.on = false")
    return driver.execute_script("const f = window.drag.frames; window.drag.frames = [];"
                                 "return f")


def open_page(driver, server: Server) -> tuple[float, float]:
    """Load the served run's Curate page and put the bench's hooks on it: the first load's
    time (every class clustered) in s, and the shown class's stored eps."""
    t_load = time.perf_counter()
    driver.get(f"{server.url}/curate/bench")
    # The first paint clusters every class (memoized afterwards): minutes at 1,000
    # classes of a 1.28M-point run.
    wait_for(lambda: trace_markers(driver), timeout=1200)
    first_load = time.perf_counter() - t_load
    time.sleep(1)
    driver.execute_script(HOOKS)
    return first_load, float(driver.find_element("id", "curate-eps-input").get_attribute("value"))


def show_class_listed(driver, code: int) -> None:
    """Pick class ``code`` and wait until the review list shows its rows: the list follows
    the class after the map has painted, and keys sent before its filter would race the
    refilter (which moves the rows under the focus)."""
    pick_class(driver, code)
    name = driver.execute_script(CLASS_NODE + "return nodeOf(arguments[0]).data.class;",
                                 str(code))
    # The class's own filter: the page's first class had one already, and keys sent while
    # the list still showed that class's rows reached rows the map no longer draws.
    wait_for(lambda: driver.execute_script(
        "const f = dash_ag_grid.getApi('review-grid').getFilterModel().given;"
        "return !!f && f.filter === arguments[0];", name), timeout=30)
    wait_for(lambda: len(driver.find_elements("css selector", "#review-grid .ag-row")) > 2,
             timeout=30)
    time.sleep(0.3)


def drag_frames(driver, drags: int, span_px: int = 120) -> dict[str, list[float]]:
    """``drags`` continuous drags of the eps slider (left ``span_px`` and back, then
    released where they began): frame intervals and move-to-paint times, in ms; and, as
    the baseline, the frame intervals of the page left alone for as long."""
    idle = idle_frames(driver, 8 * 0.008 * span_px / 2)  # as long as the drags' moves take
    thumb = driver.find_element("css selector", "#curate-eps-slider [role=slider]")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", thumb)
    r = driver.execute_script("const r = arguments[0].getBoundingClientRect();"
                              "return [r.left + r.width / 2, r.top + r.height / 2]", thumb)
    x0, y = r

    def mouse(kind: str, x: float) -> None:
        driver.execute_cdp_cmd("Input.dispatchMouseEvent", {
            "type": kind, "x": x, "y": y, "button": "left",
            "buttons": 0 if kind == "mouseReleased" else 1, "clickCount": 1})

    for _ in range(drags):
        mouse("mousePressed", x0)
        driver.execute_script("window.drag.start()")
        path = [x0 - 2 * k for k in range(1, span_px // 2 + 1)]
        for x in path + path[::-1][1:] + [x0]:
            t = time.perf_counter()
            mouse("mouseMoved", x)
            time.sleep(max(0.0, 0.008 - (time.perf_counter() - t)))
        driver.execute_script("window.drag.on = false")
        mouse("mouseReleased", x0)
        time.sleep(0.5)  # the release's store and the server's answer land
    d = driver.execute_script("return window.drag")
    return {"idle frame interval": idle, "drag frame interval": d["frames"],
            "drag move → repaint": d["paints"]}


# The baseline path of an eps change, in the bench's page only: through the server alone,
# as every eps change went before assets/class_map.js. Enter no longer repaints the map (the
# page store's "key:params" action, assets/00-curate-store.js, does nothing) and the typed
# value goes to the server as a draft the browser did not paint (the map's clientside
# `typed`, which Dash looks up at each call, is replaced), so the server re-clusters,
# stores and draws it. PAGE_PATH puts the page's own back.
SERVER_PATH = """
const dc = window.dash_clientside, store = window.curateStore;
window.benchPage = window.benchPage || {typed: dc.map.typed,
                                         params: store.provide('key:params', () => false)};
dc.map.typed = (eps, ms, m) => (eps === null || eps === undefined || ms === null ||
                                ms === undefined || !m) ? dc.no_update
  : {class: m['class'], eps: Number(eps), min_samples: Number(ms), base_revision: m.revision,
     painted: false, typed: true, at: Date.now()};
"""
PAGE_PATH = """
if (window.benchPage) {
  window.dash_clientside.map.typed = window.benchPage.typed;
  window.curateStore.provide('key:params', window.benchPage.params);
  delete window.benchPage;
}
"""


def eps_changes(driver, base: float, n: int, eps_range: str) -> dict[str, list[float]]:
    """``n`` eps changes typed into the box, through the server alone first (the baseline:
    request, server re-cluster, Dash renderer, Plotly, as every eps change went before
    assets/class_map.js: :data:`SERVER_PATH`), then as the page does it."""
    out: dict[str, list[float]] = {"eps change, server path": [], "eps change": [],
                                   "eps change, stored": []}
    box = driver.find_element("id", "curate-eps-input")
    low, high = (float(v) for v in eps_range.split(","))
    for name, server_only in (("eps change, server path", True), ("eps change", False)):
        driver.execute_script(SERVER_PATH if server_only else PAGE_PATH)
        for k in range(n):
            box.send_keys(Keys.CONTROL, "a")
            eps = base * (low + (high - low) * (k % 10) / 9) + 1e-3 * server_only
            box.send_keys(f"{eps:.4f}", Keys.ENTER)
            out[name].append(repaint_ms(driver))
            if not server_only:
                b = driver.execute_script("return window.bench")
                if b["answered"] > b["t0"]:
                    out["eps change, stored"].append(b["answered"] - b["t0"])
    return out


def class_switches(driver, run: Path, n: int,
                   rest: float) -> tuple[dict[str, list[float]], int]:
    """``n`` switches from the overview to a class and back with the map's fetching
    ahead switched off (drawn by the server), then ``n`` as the page makes them, each
    timed to the repaint; returns the times and how many of the latter ``n`` the browser
    drew (the server's answer carried no figure).

    A class is picked as with a mouse: the pointer moves onto its row, rests ``rest``
    seconds and clicks (real input events, through the DevTools protocol); the map may
    fetch the class while the pointer rests (assets/class_map.js).
    """
    n_classes = len(json.loads((run / "run.json").read_text())["classes"])
    out: dict[str, list[float]] = {"class switch": [], "class switch, drawn by the server": [],
                                   "overview (all classes)": []}
    # The server's path first, while the map holds no class: its fetching ahead (the page
    # store's prefetchClass action) is replaced by nothing here, in the bench's page only.
    driver.execute_script("window.benchPrefetch = "
                          "window.curateStore.provide('prefetchClass', () => {});")
    drawn = 0
    for name in ("class switch, drawn by the server", "class switch"):
        for k in range(n):
            point_and_click(driver, 1 + (k + 1) % (n_classes - 1), rest)
            out[name].append(repaint_ms(driver, counts=False))
            b = driver.execute_script("return window.bench")
            drawn += name == "class switch" and b["figure"] < b["t0"]
            pick_class(driver, "all")
            out["overview (all classes)"].append(repaint_ms(driver, counts=False))
        driver.execute_script("window.curateStore.provide('prefetchClass', window.benchPrefetch);")
    return out, drawn


def point_and_click(driver, code: int, rest: float) -> None:
    """Move the pointer onto class ``code``'s row in the class list at once, rest ``rest``
    seconds and click it, as a mouse would."""
    cell = class_cell(driver, code)
    ActionChains(driver, duration=0).move_to_element(cell).perform()
    time.sleep(rest)
    ActionChains(driver, duration=0).click(cell).perform()


def report(results: dict[str, list[float]]) -> None:
    """One line per action timed (n > 0): n, p50 and p95 in ms."""
    for name, values in results.items():
        if not values:
            continue  # an action switched off (e.g. --hovers 0)
        print(f"{name:<24} n={len(values):>3}  p50 {statistics.median(values):7.1f} ms  "
              f"p95 {pct(values, 0.95):7.1f} ms")


def _peak_rss_gb(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in GB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


def main() -> None:  # noqa: PLR0915 - one script, every action timed in turn
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", type=Path, default=Path("runs/cifar10n"))
    ap.add_argument("--eps-changes", type=int, default=30)
    ap.add_argument("--drags", type=int, default=3,
                    help="continuous drags of the eps slider, frames timed throughout")
    ap.add_argument("--hovers", type=int, default=20)
    # 30, not 10: the p95 of 10 values is their maximum (pct rounds 0.95 × 9 up to 9).
    ap.add_argument("--switches", type=int, default=30)
    ap.add_argument("--rest", type=float, default=0.15,
                    help="seconds the pointer rests on a class's row before the click")
    ap.add_argument("--triage", type=int, default=30)
    ap.add_argument("--apply-all", type=int, default=3)
    ap.add_argument("--review", type=int, default=30,
                    help="sorts and filters of the review list (every class's flags)")
    ap.add_argument("--review-only", action="store_true",
                    help="time the review list alone, not the map's actions")
    ap.add_argument("--similar", type=int, default=30,
                    help="more-like-this steps (s on the focused row)")
    ap.add_argument("--look", type=float, default=0.3,
                    help="seconds between a row taking focus and its s key (a reader's "
                         "look at the row; --similar-only also times s at once)")
    ap.add_argument("--similar-only", action="store_true",
                    help="time more like this alone, beside the triage step (baseline)")
    ap.add_argument("--upload-dir", type=Path,
                    help="with --similar-only: also pick each image file here (not in the "
                         "run) in the upload box, after the s key's steps")
    ap.add_argument("--eps-range", default="0.6,1.4",
                    help="eps changes span these multiples of the stored eps; they must "
                         "change the counts (the repaint is timed to the counts too)")
    args = ap.parse_args()
    if not (args.run / "embedding.npy").is_file():
        raise SystemExit(f"{args.run} is not a finished run: build one first, e.g. "
                         "python -m bench.detection (makes runs/bench-cifar10n)")
    import numpy as np

    n_total = len(np.load(args.run / "embedding.npy", mmap_mode="r"))
    results: dict[str, list[float]] = {"eps change, server path": [], "eps change": [],
                                       "eps change, stored": [], "idle frame interval": [],
                                       "drag frame interval": [],
                                       "drag move → repaint": [],
                                       "hover image": [], "class switch": [],
                                       "class switch, drawn by the server": [],
                                       "overview (all classes)": [], "triage step": [],
                                       "triage step, scripted": [],
                                       "apply to all classes": [],
                                       "more like this (s → listing painted)": []}
    with served_run(args.run, "bench-ui-") as (server, driver):
        first_load, base = open_page(driver, server)
        if args.similar_only:  # target: p95 ≤ 100 ms at 50,000 samples
            show_class_listed(driver, 1)
            out, _ = triage_ms(driver, 10)
            # The server's first ask of the run (the triage steps read none of what it
            # reads), a few seconds after the page opened.
            first = similar_ms(driver, 1, args.look)
            out = {"more like this, the server's first": first,
                   "triage step (baseline)": out["triage step"],
                   "more like this (s → listing painted)": similar_ms(driver, args.similar,
                                                                   args.look),
                   "more like this, s at once (no look)": similar_ms(driver, args.similar)}
            if args.upload_dir:
                files = sorted(f for f in args.upload_dir.rglob("*")
                               if f.suffix.lower() in (".png", ".jpg", ".jpeg"))[:21]
                times = upload_ms(driver, files)
                out["image file, the first since the page opened"] = times[:1]
                out["image file (pick → listing painted)"] = times[1:]
            print(f"# more like this, {n_total} points · {machine()}")
            report(out)
            ratio = pct(out["more like this (s → listing painted)"], 0.95) / pct(
                out["triage step (baseline)"], 0.95)
            print(f"more like this p95 / triage step p95: {ratio:.2f}x")
            return
        if args.review_only:  # target: p95 ≤ 100 ms for both
            print(f"# review list across classes, {n_total} points · {machine()}")
            report(review_list(driver, args.review))
            return
        n_points = driver.execute_script(
            "const gd = document.querySelector('#curate-graph .js-plotly-plot');"
            "return [gd._fullData[0].x.length, gd._fullData[1].x.length]")
        results.update(eps_changes(driver, base, args.eps_changes, args.eps_range))
        if args.drags:
            results.update(drag_frames(driver, args.drags))
        dbscan_ms = driver.execute_script(
            "const gd = document.querySelector('#curate-graph .js-plotly-plot');"
            "const x = gd._fullData[1].x, y = gd._fullData[1].y, times = [];"
            "for (let k = 0; k < 20; k++) { const t = performance.now();"
            "  window.curateDebug.dbscan(x, y, arguments[0], 5);"
            "  times.push(performance.now() - t); }"
            "return times.sort((a, b) => a - b)[10];", base)
        results["hover image"] = hover_ms(driver, args.hovers)
        switches, drawn = class_switches(driver, args.run, args.switches, args.rest)
        results.update(switches)
        show_class_listed(driver, 1)
        triage, triage_events = triage_ms(driver, args.triage) if args.triage else ({}, "")
        results.update(triage)
        # Apply to all classes: from the click until the server's answer (every class
        # stored and re-clustered, the page's counts computed) has arrived.
        for k in range(args.apply_all):
            box = driver.find_element("id", "curate-eps-input")
            box.send_keys(Keys.CONTROL, "a")
            box.send_keys(f"{base * (0.8 + 0.1 * k):.4f}", Keys.ENTER)
            repaint_ms(driver, counts=False)  # on compact classes counts may not move
            time.sleep(0.5)  # the stored change's answer lands first
            t0 = driver.execute_script("window.bench.t0 = performance.now();"
                                       "document.getElementById('curate-apply-all').click();"
                                       "return window.bench.t0;")
            b = wait_for(lambda t=t0: (v := driver.execute_script("return window.bench"))
                         ["answered"] > t and v, timeout=1200, poll=0.05)
            results["apply to all classes"].append(b["answered"] - t0)
        if args.review:
            results.update(review_list(driver, args.review))
        if args.similar:  # last: it leaves the review list holding a listing
            results["more like this (s → listing painted)"] = similar_ms(
                driver, args.similar, args.look)
        server_rss = _peak_rss_gb(server.proc.pid)
    print(f"# UI latency, {n_total} points, class of {n_points[1]} · {machine()}")
    report(results)
    print(f"browser DBSCAN of the class (inside the eps change): {dbscan_ms:.1f} ms median")
    print(f"class switches drawn by the browser (no figure in the server's answer): "
          f"{drawn} of {args.switches}")
    print(f"first page load (every class clustered): {first_load:.1f} s")
    print(f"server peak RSS while serving: {server_rss:.2f} GB")
    if triage_events:
        print("triage step by Chrome's Event Timing (key to the frame presented, in steps of "
              f"8 ms): {triage_events}")
    if results["eps change"]:
        ratio = pct(results["eps change, server path"], 0.95) / pct(results["eps change"], 0.95)
        print(f"eps change p95, server path / browser path: {ratio:.2f}x")
        print(f"p95_ms={pct(results['eps change'], 0.95):.1f}")
    if results["drag frame interval"]:
        ratio = pct(results["drag frame interval"], 0.95) / pct(results["idle frame interval"],
                                                                 0.95)
        print(f"drag frame interval p95 / idle frame interval p95: {ratio:.2f}x")


if __name__ == "__main__":
    main()
