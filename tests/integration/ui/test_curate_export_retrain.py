"""Export, retrain and a new run from the browser, in real headless Chromium against a real
``curator serve``: the export writes the manifest, the retrain panel's defaults train and
reuse only an identical subset, and the New-run form starts the pipeline with live
progress."""

from __future__ import annotations

import csv
import json
import subprocess
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from app.curate.retrain import train_field
from bench.browser import (
    browser_marks,
    trace_markers,
    wait_for,
)
from tests.integration.conftest import CURATOR
from tests.integration.ui.conftest import open_run
from tests.integration.ui.test_curate_review import _element, _set
from worker.pipeline.storage.author import os_user
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()


def test_export_produces_the_manifest(driver, server, ui_root):
    open_run(driver, server, "export")
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
    assert len(rows) == 2 and all(": succeeded · took " in r[4] and r[4].endswith(" · done")
                                  for r in rows), rows
    # Who queued each: the page's person and the shell's, one OS user here.
    assert {r[3] for r in rows} == {os_user()}, rows


def _field(name: str) -> str:
    """The DOM id of the Retrain form's field ``name`` (a pattern-matching id, which Dash
    writes as its JSON with sorted keys)."""
    return json.dumps(train_field(name), sort_keys=True, separators=(",", ":"))


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
    open_run(driver, server, "retrain")
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
