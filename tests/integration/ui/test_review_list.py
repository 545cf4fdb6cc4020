"""The review list across classes, in real headless Chromium against a real
``curator serve`` on the digits run: every class's flags in one grid, the confusion
table filters it, relabel to any class, bulk actions that say what they change first."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    browser_marks,
    class_rows,
    focus_row,
    focused_sample,
    grid_rows,
    lasso_middle,
    open_review_list,
    pick_class,
    point_position,
    press_undo,
    ringed_point,
    scroll_click,
    served,
    shown_text,
    status_text,
    trace_markers,
    wait_for,
)
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()


@pytest.fixture(scope="module")
def review_root(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("review") / "runs"
    for name in ("queue", "bulk", "keys", "links", "cut"):
        shutil.copytree(digits_run.path, root / name)
    return root


@pytest.fixture(scope="module")
def page(review_root):
    with served(review_root) as both:
        yield both


def _open(page, run: str):
    srv, d = page
    return open_review_list(d, f"{srv.url}/curate/{run}")


def _listed(d) -> int:
    text = wait_for(lambda: d.find_element(By.ID, "review-count").text)
    return int(text.split()[0])


def _listing(d, given: str) -> int:
    """Wait until the list shows only class ``given``'s rows and says how many; return
    that count. (A count read right after a class pick can still be the previous class's.)"""
    def shown() -> int | None:
        rows = grid_rows(d)
        ok = rows and all(r["given"] == given for r in rows) and _listed(d) == len(rows)
        return len(rows) if ok else None
    return wait_for(shown)


def _focused_search(d):
    """The class picker's search box when it has the keyboard focus, else None."""
    active = d.switch_to.active_element
    return active if "dash-dropdown-search" in (active.get_attribute("class") or "") else None


def _store(review_root, run: str) -> CurationStore:
    return CurationStore(review_root / run / "curation.sqlite")


def _queued(review_root, run: str) -> int:
    """How many samples the review list holds: the rule's flags and every other finding
    kind's marks (app/curate/review_queue.py queue_samples)."""
    from app.curate.review_queue import queue_samples
    from app.run_data import current_state, run_data

    data = run_data(review_root, run)
    return len(queue_samples(data, current_state(data)))


def test_one_queue_across_classes_filtered_by_class_and_pair(page, review_root):
    d = _open(page, "queue")
    # The digits run's default flags (10% injected noise, seed 0: 188), with its
    # near-duplicates and outliers.
    flagged = _queued(review_root, "queue")
    assert flagged > 188
    # It opens on the class the map shows; "All classes" lists every class's flags.
    _listing(d, "0")
    pick_class(d, "all")
    wait_for(lambda: _listed(d) == flagged)
    rows = grid_rows(d)
    assert len({r["given"] for r in rows}) == 10
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
    # A class picked in the class list filters the list to it; a pair's cell to the pair.
    pick_class(d, 3)
    _listing(d, "3")
    pair = d.find_elements(By.CSS_SELECTOR, ".review-pair")[0]
    given, rest = shown_text(pair).split(" → ")
    suggested, count = rest.split(" · ")
    scroll_click(d, pair)
    wait_for(lambda: _listed(d) == int(count))
    assert {(r["given"], r["suggested"]) for r in grid_rows(d)} == {(given, suggested)}
    scroll_click(d, d.find_element(By.ID, "review-clear-filters"))
    wait_for(lambda: _listed(d) == flagged)
    # Sorting is the grid's own: by sample number, ascending.
    d.execute_script("dash_ag_grid.getApi('review-grid').applyColumnState("
                     "{state: [{colId: 'sample', sort: 'asc'}], defaultState: {sort: null}})")
    wait_for(lambda: [r["sample"] for r in grid_rows(d)] == sorted(r["sample"] for r in rows))


def test_relabel_to_any_class_then_undo(page, review_root):
    d = _open(page, "queue")
    first = grid_rows(d)[0]
    target = next(c for c in "0123456789" if c not in (first["given"], first["suggested"]))
    scroll_click(d, d.find_element(By.CSS_SELECTOR, "#review-grid .ag-row[row-index='0'] .ag-cell"))
    # "l" opens the searchable class picker; typing the name and Enter picks it.
    d.find_element(By.TAG_NAME, "body").send_keys("l")
    # Type only once the picker's search box has the focus: keys sent before it opens go
    # to the grid (CI, under load, lost the class name that way).
    picker = wait_for(lambda: _focused_search(d))
    picker.send_keys(target)
    wait_for(lambda: [o.text for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")]
             == [target])
    picker.send_keys(Keys.ENTER)
    scroll_click(d, d.find_element(By.ID, "review-relabel"))
    store = _store(review_root, "queue")
    wait_for(lambda: store.relabels() == {first["sample"]: int(target)})
    row = wait_for(lambda: next((r for r in grid_rows(d) if r["sample"] == first["sample"]
                                 and r["state"] == "relabelled"), None))
    assert row["now"] == target
    badge = d.find_element(By.CSS_SELECTOR, f"#review-grid .ag-row[row-id='{first['sample']}'] "
                                            ".review-state")
    assert shown_text(badge) == f"relabelled → {target}" and "trains with the new class" in \
        badge.get_attribute("title")
    # Relabels have their own count: in the header and in the class list.
    assert "· 0 overridden · 1 relabelled ·" in status_text(d)
    total = class_rows(d)[0]
    assert (total["class"], total["overridden"], total["relabelled"]) == ("All classes", 0, 1)
    scroll_click(d, d.find_element(By.ID, "curate-undo"))
    wait_for(lambda: store.relabels() == {})


def test_bulk_actions_show_the_count_first_and_are_one_step(page, review_root):
    d = _open(page, "bulk")
    store = _store(review_root, "bulk")
    pick_class(d, 1)
    n = _listing(d, "1")
    scroll_click(d, d.find_element(By.CSS_SELECTOR, "[id*='review-bulk'][id*='drop']"))
    text = wait_for(lambda: d.find_element(By.ID, "review-confirm-text").text)
    assert text == f"Drop all changes {n} of the {n} listed samples (one step, undoable)."
    assert store.overrides() == {}  # nothing happens before Confirm
    scroll_click(d, d.find_element(By.ID, "review-confirm"))
    wait_for(lambda: len(store.overrides()) == n)
    assert set(store.overrides().values()) == {"drop"}
    wait_for(lambda: {r["state"] for r in grid_rows(d)} == {"dropped"})
    # Accept suggestions: the count is of samples with a suggestion above the threshold.
    scroll_click(d, d.find_element(By.CSS_SELECTOR, "[id*='review-bulk'][id*='accept']"))
    text = wait_for(lambda: d.find_element(By.ID, "review-confirm-text").text)
    expected = sum(1 for r in grid_rows(d) if r["suggested"] and r["score"] >= 0.9)
    assert text.startswith(f"Accept suggestions changes {expected} of the {n} listed")
    scroll_click(d, d.find_element(By.ID, "review-confirm"))
    wait_for(lambda: len(store.relabels()) == expected)
    history = [h["description"] for h in store.history()]
    assert history[:2] == [f"accept {expected} suggestion(s) with score ≥ 0.9",
                           f"drop {n} listed sample(s)"]
    scroll_click(d, d.find_element(By.ID, "curate-undo"))
    wait_for(lambda: store.relabels() == {} and len(store.overrides()) == n)


def _state(d, sample: int) -> str | None:
    return next((r["state"] for r in grid_rows(d) if r["sample"] == sample), None)


def test_keys_triage_the_focused_row_and_decisions_compose(page, review_root):
    """j / k move the focus, a / d keep / drop, r relabels to the suggestion, u undoes;
    each moves on at once. Keep, drop and relabel compose: a drop after a relabel drops
    it, a relabel after a drop keeps it with the new class, a keep after a relabel keeps
    the new class."""
    d = _open(page, "keys")
    store = _store(review_root, "keys")
    body = d.find_element(By.TAG_NAME, "body")
    rows = grid_rows(d)
    body.send_keys("j")  # nothing focused yet: the first row
    wait_for(lambda: focused_sample(d) == rows[0]["sample"])
    body.send_keys("j", "j", "k")
    wait_for(lambda: focused_sample(d) == rows[1]["sample"])
    body.send_keys("d")  # drop the second row; the focus moves on to the third
    wait_for(lambda: store.overrides().get(rows[1]["sample"]) == "drop")
    assert focused_sample(d) == rows[2]["sample"]
    wait_for(lambda: _state(d, rows[1]["sample"]) == "dropped")
    body.send_keys("k", "k", "a")
    wait_for(lambda: store.overrides().get(rows[0]["sample"]) == "keep")
    press_undo(d)  # undo the keep
    wait_for(lambda: rows[0]["sample"] not in store.overrides())

    # Compose on one row with a suggestion.
    at, row = next((k, r) for k, r in enumerate(grid_rows(d)) if r["suggested"])
    sample, code = row["sample"], int(row["suggested"])

    def focus_and(key: str) -> None:
        focus_row(d, at)
        wait_for(lambda: focused_sample(d) == sample)
        body.send_keys(key)

    focus_and("r")
    wait_for(lambda: store.relabels() == {sample: code} and _state(d, sample) == "relabelled")
    focus_and("d")  # dropped: the relabel stays stored, the sample does not train
    wait_for(lambda: store.overrides().get(sample) == "drop" and _state(d, sample) == "dropped")
    assert store.relabels() == {sample: code}
    focus_and("r")  # relabel again: "keep it as this class" clears the drop
    wait_for(lambda: sample not in store.overrides() and _state(d, sample) == "relabelled")
    focus_and("a")  # keep: keeps the new class
    wait_for(lambda: store.overrides().get(sample) == "keep")
    row = wait_for(lambda: next(r for r in grid_rows(d) if r["sample"] == sample))
    assert store.relabels() == {sample: code} and row["now"] == str(code)


def test_map_and_list_are_linked_both_ways(page):
    """A lasso on the map lists only its points (a double-click lists all again); hovering
    or focusing a row rings its point; clicking a point scrolls to its row and focuses it."""
    srv, d = page
    d = _open(page, "links")
    ids = trace_markers(d)["customdata"]  # class 0's points
    # The list opens on the class the map shows.
    everything = wait_for(lambda: (rows := grid_rows(d)) and
                          all(r["sample"] in set(ids) for r in rows) and rows)
    listed0 = [r["sample"] for r in everything if r["sample"] in set(ids)]
    # Focus: the ring sits on the row's point.
    at = [r["sample"] for r in everything].index(listed0[-1])
    focus_row(d, at)

    def ring_on(sample: int) -> bool:
        ring, point = ringed_point(d), point_position(d, sample)
        return bool(ring) and ring[0] == sample and \
            abs(ring[1] - point[0]) < 2 and abs(ring[2] - point[1]) < 2

    wait_for(lambda: ring_on(listed0[-1]))
    # Hover over another row: the ring moves to its point.
    hover = everything[at - 1 if at else at + 1]  # a row beside it, drawn too
    cell = d.find_element(By.CSS_SELECTOR, f"#review-grid .ag-row[row-id='{hover['sample']}'] "
                                           ".ag-cell")
    ActionChains(d).move_to_element(cell).perform()
    wait_for(lambda: ringed_point(d)[0] == hover["sample"])
    # A click on a point: its row is focused, in view and selected.
    target = listed0[len(listed0) // 2]
    x, y = point_position(d, target)
    actions = ActionBuilder(d)
    actions.pointer_action.move_to_location(int(x), int(y)).click()
    actions.perform()
    wait_for(lambda: focused_sample(d) == target)
    wait_for(lambda: d.find_elements(
        By.CSS_SELECTOR, f"#review-grid .ag-row-selected[row-id='{target}']"))
    # A lasso around the middle of the class: only its listed points stay listed.
    selected = set(lasso_middle(d, half=60))
    wait_for(lambda: {r["sample"] for r in grid_rows(d)} == selected & set(listed0))
    line = shown_text(d.find_element(By.ID, "review-selection"))
    assert line.startswith(f"only the {len(selected)} points selected on the map")
    graph = d.find_element(By.CSS_SELECTOR, "#curate-graph .nsewdrag")
    corner = (-graph.size["width"] // 2 + 4, -graph.size["height"] // 2 + 4)  # no points
    ActionChains(d).move_to_element_with_offset(graph, *corner).double_click().perform()
    wait_for(lambda: len(grid_rows(d)) == len(everything))
    wait_for(lambda: d.find_element(By.ID, "review-selection").text == "")


def _rule_lines(d) -> list[str]:
    return [p.text for p in d.find_elements(By.CSS_SELECTOR, "#curate-rule-info p")]


def _flagged(d) -> int:
    return int(status_text(d).split(" flagged")[0].split(" · ")[-1])


def test_rule_panel_explains_the_class_and_flag_more_fewer_are_undoable(page, review_root):
    """Item 5: the rule's inputs for the shown class in words, why eps changes nothing
    here, and the per-class cut along the score ranking, stored and undoable like eps."""
    d = _open(page, "cut")
    store = _store(review_root, "cut")
    pick_class(d, 3)
    want = ["Estimated wrong labels: 11–14 of 175 (6.3–8.0%).",
            "14 flagged: 11 whatever DBSCAN says, 3 because DBSCAN calls them "
            "noise (of 3 it decides)."]
    # Waits for class 3's lines: on a busy host the first class's may still be shown.
    try:
        wait_for(lambda: _rule_lines(d)[:2] == want, timeout=30)
    except AssertionError:
        pass  # the assertion below prints what is shown
    lines = _rule_lines(d)
    assert lines[:2] == want
    # The span's numbers depend on the map (the host's kernels):
    # tests/integration/pipeline/curation/test_cluster_step.py checks them against
    # scikit-learn; here the page says what the server computes.
    from app.curate import page_actions
    from app.run_data import current_state, run_data

    data = run_data(review_root, "cut")
    facts = page_actions.rule_facts(data, current_state(data), 3)
    assert lines[2].startswith(f"eps changes this class's flags only from "
                               f"{facts.eps_from:.3g} to {facts.eps_to:.3g}")
    total = _flagged(d)
    scroll_click(d, d.find_element(By.ID, "curate-cut-more"))
    wait_for(lambda: store.cuts() == {3: 16})
    wait_for(lambda: _flagged(d) == total + 2)
    lines = wait_for(lambda: (lambda ls: ls if "Cut set by a reviewer" in " ".join(ls)
                              else None)(_rule_lines(d)))
    assert lines[1].startswith("16 flagged: 16 whatever DBSCAN says")
    scroll_click(d, d.find_element(By.ID, "curate-cut-fewer"))
    wait_for(lambda: store.cuts() == {3: 14} and _flagged(d) == total)
    scroll_click(d, d.find_element(By.ID, "curate-undo"))
    wait_for(lambda: store.cuts() == {3: 16} and _flagged(d) == total + 2)
    scroll_click(d, d.find_element(By.ID, "curate-cut-reset"))
    wait_for(lambda: store.cuts() == {} and _flagged(d) == total)
    wait_for(lambda: _rule_lines(d)[1] == "14 flagged: 11 whatever DBSCAN says, 3 because "
                                           "DBSCAN calls them noise (of 3 it decides).")
    # "All classes" has no cut: the buttons go, and the panel says to pick a class.
    pick_class(d, "all")
    wait_for(lambda: not d.find_element(By.ID, "curate-cut").is_displayed())
    assert _rule_lines(d) == ["Pick a class to see what the rule makes of it."]
