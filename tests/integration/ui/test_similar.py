"""More like this on the Curate page, in real headless Chromium against a real
``curator serve`` on the digits run: the s key turns the review list into a sample's
nearest samples across classes (the rows ``run.similar`` and ``curator similar`` return),
ringed on the map; a bulk relabel of them is one step that one undo takes back; an image
file picked in the upload box lists its neighbours, and a file that is not an image gets
one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    browser_marks,
    focus_row,
    focused_sample,
    grid_rows,
    open_review_list,
    pick_class,
    press_undo,
    scroll_click,
    served,
    trace_markers,
    wait_for,
)
from tsne_curator import Run
from worker.pipeline.storage.author import os_user
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()
CURATOR = str(Path(sys.executable).parent / "curator")


@pytest.fixture(scope="module")
def similar_root(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("similar") / "runs"
    for name in ("keys", "upload"):
        shutil.copytree(digits_run.path, root / name)
    return root


@pytest.fixture(scope="module")
def page(similar_root):
    with served(similar_root) as both:
        yield both


def _line(d) -> str:
    return d.find_element(By.ID, "similar-line").text


def _set_k(d, k: int) -> None:
    box = d.find_element(By.ID, "similar-k")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(str(k))
    wait_for(lambda: box.get_attribute("value") == str(k))


def _listed_as(d, expected: list[int]) -> list[dict]:
    """Wait until the review list shows exactly ``expected``'s samples, in that order."""
    return wait_for(lambda: (rows := grid_rows(d))
                    and [r["sample"] for r in rows] == expected and rows, timeout=30)


def _ringed(d) -> set[int]:
    return set(d.execute_script(
        "return Array.from(document.querySelectorAll('#curate-graph .map-ring-similar'))"
        ".filter(e => e.style.display !== 'none').map(e => Number(e.dataset.sample))"))


def test_s_lists_the_nearest_across_classes_and_a_bulk_relabel_is_one_undo(page,
                                                                           similar_root):
    srv, d = page
    open_review_list(d, f"{srv.url}/curate/keys")
    _set_k(d, 10)
    focus_row(d, 0)
    anchor = wait_for(lambda: focused_sample(d))
    # The pointer away from the map: s takes the focused row.
    ActionChains(d).move_to_element(d.find_element(By.ID, "review-count")).perform()
    d.find_element(By.TAG_NAME, "body").send_keys("s")
    api = Run(similar_root / "keys").similar(anchor, k=10)
    rows = _listed_as(d, api["index"].tolist())
    assert [r["distance"] for r in rows] == pytest.approx(api["distance"].tolist(), abs=1e-3)
    assert len({r["given"] for r in rows}) >= 2, "the neighbours span several classes"
    assert _line(d).startswith(f"similar to #{anchor} · ")
    # The distance column is shown and sorts the list.
    assert d.find_elements(By.CSS_SELECTOR, "#review-grid .ag-header-cell[col-id='distance']")
    # The CLI lists the same rows.
    out = subprocess.run([CURATOR, "similar", str(similar_root / "keys"), str(anchor),
                          "--k", "10", "--json"], capture_output=True, text=True, check=True)
    assert [r["index"] for r in json.loads(out.stdout)] == api["index"].tolist()

    # Select every listed row (a click, then Shift+click on the last), relabel them all.
    first = d.find_element(By.CSS_SELECTOR, "#review-grid .ag-row[row-index='0'] .ag-cell")
    scroll_click(d, first)
    last = d.find_element(By.CSS_SELECTOR,
                          f"#review-grid .ag-row[row-index='{len(rows) - 1}'] .ag-cell")
    ActionChains(d).key_down(Keys.SHIFT).click(last).key_up(Keys.SHIFT).perform()
    wait_for(lambda: len(d.execute_script(
        "return dash_ag_grid.getApi('review-grid').getSelectedRows()")) == len(rows))
    target = "7"
    d.find_element(By.TAG_NAME, "body").send_keys("l")
    picker = wait_for(lambda: (a := d.switch_to.active_element)
                      and "dash-dropdown-search" in (a.get_attribute("class") or "") and a)
    picker.send_keys(target)
    wait_for(lambda: [o.text for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")]
             == [target])
    picker.send_keys(Keys.ENTER)
    scroll_click(d, d.find_element(By.ID, "review-relabel"))
    store = CurationStore(similar_root / "keys" / "curation.sqlite")
    labels = dict(zip(api["index"], api["label"], strict=True))
    changed = {s: 7 for s, given in labels.items() if given != target}
    wait_for(lambda: store.relabels() == changed)
    # Each relabelled row names who decided it (no token: the server's OS user).
    wait_for(lambda: all(r["decided"].startswith(f"{os_user()} · ") for r in grid_rows(d)
                         if r["sample"] in changed))
    # The listing stays, its rows now relabelled; one undo takes the whole step back.
    wait_for(lambda: all(r["state"] == "relabelled" for r in grid_rows(d)
                         if r["sample"] in changed))
    press_undo(d)
    wait_for(lambda: store.relabels() == {})
    wait_for(lambda: not any(r["state"] == "relabelled" for r in grid_rows(d)))
    # Another class shown: the map rings the listed samples drawn there; the listing stays
    # whole (it spans classes).
    code = int(api["label"].iloc[0])
    pick_class(d, code)
    wait_for(lambda: set(trace_markers(d)["customdata"]) >= {api["index"].iloc[0]})
    drawn = set(trace_markers(d)["customdata"])
    in_class = {s for s in api["index"] if s in drawn}
    wait_for(lambda: _ringed(d) == in_class)
    assert [r["sample"] for r in grid_rows(d)] == api["index"].tolist()
    # Back to the list: the review queue again, sorted by score, no rings.
    scroll_click(d, d.find_element(By.ID, "similar-back"))
    wait_for(lambda: _line(d) == "" and not _ringed(d))
    wait_for(lambda: (rows := grid_rows(d)) and rows[0]["distance"] is None)


def test_a_key_pressed_while_s_is_answered_acts_on_its_row_and_the_listing_stays_whole(
        page, similar_root):
    """d pressed at once after s, before the listing arrives: the queue row it was pressed
    on (the sample asked about, which its own listing leaves out) is dropped, and the list
    then holds exactly the listing, no queue row mixed in, and follows the next change.
    The row is reached by j in the same burst: a row looked at for a moment has its
    answer asked for already, and s would then show it before d."""
    srv, d = page
    open_review_list(d, f"{srv.url}/curate/keys")
    _set_k(d, 8)
    focus_row(d, 1)
    wait_for(lambda: focused_sample(d) is not None)
    anchor = grid_rows(d)[2]["sample"]
    ActionChains(d).move_to_element(d.find_element(By.ID, "review-count")).perform()
    ActionChains(d).send_keys("j").send_keys("s").send_keys("d").perform()  # one burst
    api = Run(similar_root / "keys").similar(anchor, k=8)
    store = CurationStore(similar_root / "keys" / "curation.sqlite")
    wait_for(lambda: store.overrides().get(anchor) == "drop")
    _listed_as(d, api["index"].tolist())
    assert anchor not in api["index"].tolist()
    # The listing's rows follow the store: a keep of its first row shows there.
    focus_row(d, 0)
    first = wait_for(lambda: focused_sample(d))
    d.find_element(By.TAG_NAME, "body").send_keys("a")
    wait_for(lambda: store.overrides().get(first) == "keep")
    wait_for(lambda: next(r["state"] for r in grid_rows(d) if r["sample"] == first) == "kept")
    assert [r["sample"] for r in grid_rows(d)] == api["index"].tolist()
    press_undo(d)
    press_undo(d)
    wait_for(lambda: anchor not in store.overrides() and first not in store.overrides())
    scroll_click(d, d.find_element(By.ID, "similar-back"))
    wait_for(lambda: _line(d) == "")


def test_the_queues_rows_coming_back_over_a_listing_bring_the_listing_back(page,
                                                                          similar_root):
    """A change made before an s whose answer comes back after the listing painted puts the
    review queue's rows and revision over it (what the grid holds, REV, no longer the
    listing SIMILAR names). That answer is played here as Dash would apply it; the page
    asks for the listing again and ends holding exactly it."""
    srv, d = page
    open_review_list(d, f"{srv.url}/curate/keys")
    _set_k(d, 8)
    focus_row(d, 1)
    ActionChains(d).move_to_element(d.find_element(By.ID, "review-count")).perform()
    d.find_element(By.TAG_NAME, "body").send_keys("s")
    anchor = int(_line_anchor(d))
    api = Run(similar_root / "keys").similar(anchor, k=8)
    _listed_as(d, api["index"].tolist())
    queue = d.execute_script("""
        const rows = [];
        dash_ag_grid.getApi('review-grid').forEachNode(n => rows.push(n.data));
        return rows.slice(0, 3).map(r => ({...r, sample: r.sample + 1000, id: 'q' + r.id}));""")
    d.execute_script("""
        dash_clientside.set_props('review-grid', {rowData: arguments[0]});
        dash_clientside.set_props('review-rev', {data: {rev: 0, similar: null}});""", queue)
    _listed_as(d, api["index"].tolist())
    scroll_click(d, d.find_element(By.ID, "similar-back"))
    wait_for(lambda: _line(d) == "")


def _line_anchor(d) -> str:
    """The sample the "similar to #i · class" line names, once it names one."""
    return wait_for(lambda: (t := _line(d)).startswith("similar to #") and
                    t.removeprefix("similar to #").split(" ")[0], timeout=30)


def test_an_image_file_lists_its_neighbours_and_a_text_file_gets_one_line(
        page, similar_root, tmp_path):
    srv, d = page
    open_review_list(d, f"{srv.url}/curate/upload")
    _set_k(d, 8)
    run = Run(similar_root / "upload")
    thumbs = np.load(similar_root / "upload" / "thumbnails.npy", mmap_mode="r")
    image = tmp_path / "query.png"
    Image.fromarray(np.asarray(thumbs[5])).save(image)
    upload = d.find_element(By.CSS_SELECTOR, "#similar-upload input[type=file]")
    upload.send_keys(str(image))
    api = run.similar(image, k=8)
    rows = _listed_as(d, api["index"].tolist())
    assert [r["distance"] for r in rows] == pytest.approx(api["distance"].tolist(), abs=1e-3)
    assert _line(d).startswith("similar to query.png")

    text = tmp_path / "notes.txt"
    text.write_text("not an image\n")
    upload = d.find_element(By.CSS_SELECTOR, "#similar-upload input[type=file]")
    upload.send_keys(str(text))
    line = wait_for(lambda: (t := _line(d)).startswith("notes.txt:") and t)
    assert "\n" not in line and "Traceback" not in line
    # The listing it refused leaves the list as it was.
    assert [r["sample"] for r in grid_rows(d)] == api["index"].tolist()
    # The same file picked again is answered again (a file input fires no change for the
    # file it already holds, so the page empties it after each pick).
    for _ in range(2):
        scroll_click(d, d.find_element(By.ID, "similar-back"))
        wait_for(lambda: _line(d) == "")
        d.find_element(By.CSS_SELECTOR, "#similar-upload input[type=file]").send_keys(str(image))
        wait_for(lambda: _line(d).startswith("similar to query.png"))
        _listed_as(d, api["index"].tolist())


def _asked(d, sample: int) -> int:
    """How many times the page has asked the server for ``sample``'s listing."""
    return d.execute_script(
        "return performance.getEntriesByType('resource').filter(e => "
        "e.name.includes('/' + arguments[0] + '.json?')).length", sample)


def test_the_answer_asked_while_a_row_is_looked_at_is_shown_unless_something_changed(
        page, similar_root):
    """The page asks for a row's listing once its focus rests, before s: s then shows
    that answer without asking again. A change after that ask (here an undo, whose key
    clicks the Undo button) drops it: the page asks again, and s shows the change."""
    srv, d = page
    open_review_list(d, f"{srv.url}/curate/keys")
    d.execute_script("performance.setResourceTimingBufferSize(100000)")
    _set_k(d, 8)
    ActionChains(d).move_to_element(d.find_element(By.ID, "review-count")).perform()
    focus_row(d, 3)
    anchor = wait_for(lambda: focused_sample(d))
    wait_for(lambda: _asked(d, anchor) == 1)  # asked while the row is looked at
    d.find_element(By.TAG_NAME, "body").send_keys("s")
    run = Run(similar_root / "keys")
    listed = [r["sample"] for r in _listed_as(d, run.similar(anchor, k=8)["index"].tolist())]
    assert _asked(d, anchor) == 1, "s showed the answer asked before it"
    # Two listed rows one after the other, the first among the second's neighbours.
    row = next(i for i in range(len(listed) - 1)
               if listed[i] in run.similar(listed[i + 1], k=8)["index"].tolist())
    dropped, looked = listed[row], listed[row + 1]
    store = CurationStore(similar_root / "keys" / "curation.sqlite")
    focus_row(d, row)
    wait_for(lambda: focused_sample(d) == dropped)
    d.find_element(By.TAG_NAME, "body").send_keys("d")  # the focus moves on to `looked`
    wait_for(lambda: store.overrides().get(dropped) == "drop")
    wait_for(lambda: focused_sample(d) == looked and _asked(d, looked) >= 1)
    wait_for(lambda: next(r["state"] for r in grid_rows(d) if r["sample"] == dropped)
             == "dropped")
    before = _asked(d, looked)
    press_undo(d)
    wait_for(lambda: dropped not in store.overrides())
    wait_for(lambda: next(r["state"] for r in grid_rows(d) if r["sample"] == dropped)
             != "dropped")
    d.find_element(By.TAG_NAME, "body").send_keys("s")
    rows = _listed_as(d, run.similar(looked, k=8)["index"].tolist())
    assert _asked(d, looked) > before, "an answer asked before the undo was shown"
    assert next(r["state"] for r in rows if r["sample"] == dropped) != "dropped"
    scroll_click(d, d.find_element(By.ID, "similar-back"))
    wait_for(lambda: _line(d) == "")
