"""The review list across classes (issue 22), in real headless Chromium against a real
``curator serve`` on the digits run: every class's flags in one grid, the confusion
table filters it, relabel to any class, bulk actions that say what they change first."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.integration.browser import browser_marks, pick_class, served, wait_for
from worker.pipeline.store import CurationStore

pytestmark = browser_marks()


@pytest.fixture(scope="module")
def review_root(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("review") / "runs"
    for name in ("queue", "bulk"):
        shutil.copytree(digits_run.path, root / name)
    return root


@pytest.fixture(scope="module")
def page(review_root):
    with served(review_root) as both:
        yield both


def _open(page, run: str):
    srv, d = page
    d.get(f"{srv.url}/curate/{run}")
    tab = wait_for(lambda: [t for t in d.find_elements(By.CSS_SELECTOR, ".nav-link")
                            if t.text.startswith("Review list")])
    tab[0].click()
    wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#review-grid .ag-row"), 30)
    return d


def _listed(d) -> int:
    text = wait_for(lambda: d.find_element(By.ID, "review-count").text)
    return int(text.split()[0])


def _rows(d) -> list[dict]:
    """The grid's rows as shown (filtered and sorted), read through its own API."""
    return d.execute_script("""
        const api = dash_ag_grid.getApi('review-grid'); const out = [];
        api.forEachNodeAfterFilterAndSort(n => out.push(n.data)); return out;""")


def _click(d, element) -> None:
    """Scroll ``element`` to the middle of the window, then click it as a user would."""
    # Instant: Bootstrap makes scrolling smooth, and a click during the glide misses.
    d.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})",
                     element)
    element.click()


def _store(review_root, run: str) -> CurationStore:
    return CurationStore(review_root / run / "curation.sqlite")


def test_one_queue_across_classes_filtered_by_class_and_pair(page, review_root):
    d = _open(page, "queue")
    flagged = 188  # the digits run's default flags (10% injected noise, seed 0)
    wait_for(lambda: _listed(d) == flagged)
    rows = _rows(d)
    assert len({r["given"] for r in rows}) == 10
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    # A class picked in the class list filters the list to it; a pair's cell to the pair.
    pick_class(d, 3)
    wait_for(lambda: _listed(d) < flagged and all(r["given"] == "3" for r in _rows(d)))
    pair = d.find_elements(By.CSS_SELECTOR, ".review-pair")[0]
    given, rest = pair.text.split(" → ")
    suggested, count = rest.split(" · ")
    _click(d, pair)
    wait_for(lambda: _listed(d) == int(count))
    assert {(r["given"], r["suggested"]) for r in _rows(d)} == {(given, suggested)}
    _click(d, d.find_element(By.ID, "review-clear-filters"))
    wait_for(lambda: _listed(d) == flagged)
    # Sorting is the grid's own: by sample number, ascending.
    d.execute_script("dash_ag_grid.getApi('review-grid').applyColumnState("
                     "{state: [{colId: 'sample', sort: 'asc'}], defaultState: {sort: null}})")
    wait_for(lambda: [r["sample"] for r in _rows(d)] == sorted(r["sample"] for r in rows))


def test_relabel_to_any_class_then_undo(page, review_root):
    d = _open(page, "queue")
    first = _rows(d)[0]
    target = next(c for c in "0123456789" if c not in (first["given"], first["suggested"]))
    _click(d, d.find_element(By.CSS_SELECTOR, "#review-grid .ag-row[row-index='0'] .ag-cell"))
    # "l" opens the searchable class picker; typing the name and Enter picks it.
    d.find_element(By.TAG_NAME, "body").send_keys("l")
    picker = wait_for(lambda: d.switch_to.active_element)
    picker.send_keys(target)
    wait_for(lambda: [o.text for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")]
             == [target])
    picker.send_keys(Keys.ENTER)
    _click(d, d.find_element(By.ID, "review-relabel"))
    store = _store(review_root, "queue")
    wait_for(lambda: store.relabels() == {first["sample"]: int(target)})
    row = wait_for(lambda: next((r for r in _rows(d) if r["sample"] == first["sample"]
                                 and r["state"] == "relabelled"), None))
    assert row["now"] == target
    badge = d.find_element(By.CSS_SELECTOR, f"#review-grid .ag-row[row-id='{first['sample']}'] "
                                            ".review-state")
    assert badge.text == "relabelled" and "trains with the new class" in \
        badge.get_attribute("title")
    _click(d, d.find_element(By.ID, "curate-undo"))
    wait_for(lambda: store.relabels() == {})


def test_bulk_actions_show_the_count_first_and_are_one_step(page, review_root):
    d = _open(page, "bulk")
    store = _store(review_root, "bulk")
    pick_class(d, 1)
    n = wait_for(lambda: _listed(d) if _listed(d) < 188 else None)
    _click(d, d.find_element(By.CSS_SELECTOR, "[id*='review-bulk'][id*='drop']"))
    text = wait_for(lambda: d.find_element(By.ID, "review-confirm-text").text)
    assert text == f"Drop all changes {n} of the {n} listed samples (one step, undoable)."
    assert store.overrides() == {}  # nothing happens before Confirm
    _click(d, d.find_element(By.ID, "review-confirm"))
    wait_for(lambda: len(store.overrides()) == n)
    assert set(store.overrides().values()) == {"drop"}
    wait_for(lambda: {r["state"] for r in _rows(d)} == {"dropped"})
    # Accept suggestions: the count is of samples with a suggestion above the threshold.
    _click(d, d.find_element(By.CSS_SELECTOR, "[id*='review-bulk'][id*='accept']"))
    text = wait_for(lambda: d.find_element(By.ID, "review-confirm-text").text)
    expected = sum(1 for r in _rows(d) if r["suggested"] and r["score"] >= 0.9)
    assert text.startswith(f"Accept suggestions changes {expected} of the {n} listed")
    _click(d, d.find_element(By.ID, "review-confirm"))
    wait_for(lambda: len(store.relabels()) == expected)
    history = [h["description"] for h in store.history()]
    assert history[:2] == [f"accept {expected} suggestion(s) with score ≥ 0.9",
                           f"drop {n} listed sample(s)"]
    _click(d, d.find_element(By.ID, "curate-undo"))
    wait_for(lambda: store.relabels() == {} and len(store.overrides()) == n)
