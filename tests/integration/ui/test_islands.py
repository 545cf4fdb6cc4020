"""An island of outliers in the review list, in real headless Chromium against a real
``curator serve``: scikit-learn's digits with 30 line drawings filed under random labels.
A focused member shows its island side by side and says why; ``i`` drops the whole island
in one undoable step, ``u`` undoes it, ``Shift+I`` keeps it."""

from __future__ import annotations

import numpy as np
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bench.browser import (
    browser_marks,
    focus_row,
    focused_sample,
    grid_rows,
    open_review_list,
    press_undo,
    served,
    shown_text,
    wait_for,
)
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()

INJECTED = set(range(1797, 1797 + 30))


def _figures(d) -> int:
    """How many images the side-by-side view shows, once every one has loaded (else 0)."""
    figs = d.find_elements(By.CSS_SELECTOR, "#review-related figure img")
    loaded = d.execute_script(
        "return arguments[0].every(i => i.complete && i.naturalWidth > 0)", figs)
    return len(figs) if figs and loaded else 0


def test_an_island_is_shown_and_decided_together(island_root):
    store = CurationStore(island_root / "digits" / "curation.sqlite")
    with served(island_root) as (srv, d):
        open_review_list(d, f"{srv.url}/curate/digits")
        rows = wait_for(lambda: grid_rows(d))
        at = next(k for k, r in enumerate(rows) if r["sample"] in INJECTED)
        focus_row(d, at)
        sample = wait_for(lambda: focused_sample(d))
        assert sample in INJECTED
        assert wait_for(lambda: _figures(d)) >= 2  # the island, side by side
        detail = shown_text(d.find_element(By.ID, "review-detail"))
        assert "one of an island of 30 outliers" in detail
        body = d.find_element(By.TAG_NAME, "body")
        body.send_keys("i")  # drop the whole island
        wait_for(lambda: all(store.overrides().get(s) == "drop" for s in INJECTED))
        assert set(store.overrides()) == INJECTED
        press_undo(d)  # one step undoes it
        wait_for(lambda: not store.overrides())
        focus_row(d, next(k for k, r in enumerate(grid_rows(d)) if r["sample"] == sample))
        wait_for(lambda: focused_sample(d) == sample)
        body.send_keys(Keys.SHIFT, "i")  # keep the whole island
        wait_for(lambda: all(store.overrides().get(s) == "keep" for s in INJECTED))
        assert np.all([store.overrides()[s] == "keep" for s in INJECTED])
