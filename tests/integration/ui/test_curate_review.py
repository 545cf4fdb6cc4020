"""Reviewing on the Curate page, in real headless Chromium against a real ``curator
serve``: a key pressed as the list appears is explained, the focused row says why, and a
relabel from the review list reaches the export and the training subset."""

from __future__ import annotations

import csv

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    browser_marks,
    focus_row,
    focused_sample,
    grid_rows,
    shown_text,
    status_text,
    wait_for,
)
from tests.integration.ui.conftest import open_run
from worker.pipeline.findings import kinds
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.rundir import RunDir
from worker.train.data import select_subset

pytestmark = browser_marks()


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
    open_run(driver, server, "gallery")
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
    # finding kind besides label, in the registry's order.
    others = [k.name for k in kinds() if k.name != "label"]
    assert others[:3] == ["duplicate", "leak", "outlier"] and "low_info" in others
    assert head == ["class", "size", "flagged", "overridden", "relabelled", "kept",
                    "proposed", *others, "reduction"] and "total" in table[0].text
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


def test_relabel_from_the_review_list_reaches_the_export_and_the_training_subset(
        driver, server, ui_root):
    """The r key relabels the focused row to its suggestion (its badge then says so), the
    exported manifest carries it beside the given label, the filtered subset trains with
    it, and Undo takes it back."""
    from worker.train.data import holdout_mask

    store = CurationStore(ui_root / "relabel" / "curation.sqlite")
    samples = RunDir(ui_root / "relabel").read_samples()
    classes, held_out = samples.classes, holdout_mask(samples.labels)
    open_run(driver, server, "relabel")
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
