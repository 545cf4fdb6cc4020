"""The class switch and the class list on the Curate page, in real headless Chromium
against a real ``curator serve``: a switch shows the stored clustering, a class drawn
ahead is the server's and takes later changes, and the list filters, sorts and scrolls
through 300 classes."""

from __future__ import annotations

import csv
import subprocess

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    Server,
    browser_marks,
    class_cell,
    class_rows,
    decide,
    hex_colours,
    listed_classes,
    listed_of_class,
    pick_class,
    picked_class,
    status_text,
    trace_markers,
    wait_for,
)
from tests.integration.conftest import CURATOR
from tests.integration.ui.conftest import open_run
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()


CLASS_FILTER = "#curate-class-list .ag-floating-filter input"


def test_a_class_switch_shows_the_stored_clustering(driver, server, ui_root):
    """Switching classes sets the eps slider to the class's stored eps (snapped to the
    slider's step): that is no drag, so the browser must not re-cluster at the snapped
    value. The map and the counts are the server's, and nothing is stored."""
    from app.curate import page_actions
    from app.curate.figures import SYMBOLS, marker_style
    from app.run_data import current_state, run_data

    store = CurationStore(ui_root / "switch" / "curation.sqlite")
    before = store.revision()
    open_run(driver, server, "switch")
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
        line = page_actions.status_text(page_actions.class_counts(data, state),
                                 page_actions.noise_per_class(data, state), state.rule)
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
    open_run(driver, server, "ahead")
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
    open_run(driver, server, "load")
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
        open_run(driver, srv, "many")
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
