"""Class names are text, never markup: hostile names from a labels CSV and from folder
names, in real headless Chromium against a real ``curator serve``."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess

import pytest
from selenium.webdriver.common.by import By

from bench.browser import (
    browser_marks,
    listed_classes,
    pick_class,
    served,
    status_text,
    trace_markers,
    wait_for,
)
from tests.integration.conftest import CURATOR

pytestmark = browser_marks()

# Each sets window.__pwned if it ever runs: inline in an iframe, as an event handler, as a
# link target.
CSV_NAMES = ['<iframe srcdoc="<script>parent.__pwned=1</script>">',
             "javascript:window.__pwned=2", '<img src=x onerror="window.__pwned=3">',
             "plain & <b>bold</b>"]
FOLDER_NAMES = ["<img src=x onerror=window.__pwned=4>", "cat", "ship"]


def _pipeline(*args: str) -> None:
    env = {**os.environ, "CURATOR_BROKER_URL": ""}
    r = subprocess.run([CURATOR, "pipeline", *args], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory, cifar_mini):
    from bench.synth import SynthSpec, write_synthetic

    base = tmp_path_factory.mktemp("hostile")
    feats, labels = write_synthetic(base / "data", SynthSpec(
        n=400, classes=len(CSV_NAMES), dim=16, flip=0.15, class_offset=0.6))
    rows = list(csv.DictReader(open(labels)))
    with open(labels, "w", newline="") as fh:
        w = csv.DictWriter(fh, ["label", "true_label"])
        w.writeheader()
        w.writerows({k: CSV_NAMES[int(v[1:])] for k, v in r.items()} for r in rows)
    _pipeline("--dataset", f"features:{feats}", "--labels", str(labels),
              "--out", str(base / "runs" / "csv"))
    folder = base / "imgs"
    for name, source in zip(FOLDER_NAMES, ("airplane", "cat", "ship"), strict=True):
        (folder / name).mkdir(parents=True)
        for f in sorted((cifar_mini / "train" / source).glob("*.jpg"))[:40]:
            shutil.copy(f, folder / name / f.name)
    _pipeline("--dataset", f"folder:{folder}", "--model", "pixels", "--inject-noise", "0.3",
              "--seed", "0", "--out", str(base / "runs" / "folder"))
    return base / "runs"


@pytest.fixture(scope="module")
def hostile(hostile_root):
    with served(hostile_root) as both:
        yield both


def _pwned(driver) -> object:
    return driver.execute_script("return window.__pwned")


def _list_text(driver) -> str:
    """What the review list shows, as the browser renders it (cell text)."""
    return driver.find_element(By.ID, "review-grid").text


@pytest.mark.parametrize(("run", "names"), [("csv", CSV_NAMES), ("folder", FOLDER_NAMES)])
def test_hostile_class_names_show_as_text_and_run_nothing(hostile, run, names):
    srv, driver = hostile
    driver.get(f"{srv.url}/curate/{run}")
    wait_for(lambda: trace_markers(driver))
    wait_for(lambda: "kept" in status_text(driver))
    wait_for(lambda: sorted(listed_classes(driver)[1:]) == sorted(names))
    # The class list's cells draw them as text, character for character.
    cells = driver.execute_script(
        "return Array.from(document.querySelectorAll("
        "'#curate-class-list .ag-center-cols-container .ag-cell[col-id=\"class\"]'))"
        ".map(c => c.textContent)")
    assert sorted(cells) == sorted(names)
    shown = set()
    for code in range(len(names)):
        pick_class(driver, code)
        wait_for(lambda: "flagged" in _list_text(driver))
        shown |= {n for n in names if n in _list_text(driver)}  # given and suggested cells
        assert _pwned(driver) is None
    assert shown == set(names), f"names never shown as list text: {set(names) - shown}"
    driver.find_element(By.LINK_TEXT, "Summary").click()
    wait_for(lambda: all(n in driver.find_element(By.TAG_NAME, "body").text for n in names))
    for link in driver.find_elements(By.TAG_NAME, "a"):  # nothing became a javascript: link
        assert not (link.get_attribute("href") or "").lower().startswith("javascript:")
    assert driver.find_elements(By.CSS_SELECTOR, "iframe[srcdoc], img[onerror]") == []
    assert _pwned(driver) is None


def test_the_policy_blocks_inline_script_that_gets_in_anyway(hostile):
    """Defence in depth: markup injected into the page (here by the test itself) cannot run
    script, because the Content-Security-Policy allows only Dash's own inline scripts."""
    srv, driver = hostile
    driver.get(f"{srv.url}/curate/csv")
    wait_for(lambda: trace_markers(driver))
    driver.execute_script(
        "document.body.insertAdjacentHTML('beforeend', "
        "'<img src=x onerror=\"window.__pwned=9\"><div id=probe></div>');"
        "const s = document.createElement('script'); s.textContent = 'window.__pwned=8';"
        "document.body.appendChild(s);")
    wait_for(lambda: any("Content Security Policy" in e["message"]
                         for e in driver.get_log("browser")))
    assert _pwned(driver) is None
