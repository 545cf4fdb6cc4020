"""Versions on the Curate page, in real headless Chromium against a real ``curator serve``
on the digits run: Save version freezes the curation under a name (signed by the
person, listed on the tab); decisions made after it show as the difference from that
version to the live curation, counted by change, kind and author, each changed sample
listed with its thumbnail; a viewer's Save version is refused in one line and nothing is
saved."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from selenium.webdriver.common.by import By

from bench.browser import browser_marks, scroll_click, served, wait_for
from tsne_curator import Run
from worker.people import add_token
from worker.pipeline.curation.versions import list_versions, read_version, save_version
from worker.pipeline.storage.author import acting_as
from worker.pipeline.storage.rundir import RunDir

pytestmark = browser_marks()


@pytest.fixture(scope="module")
def versions_root(digits_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("versions") / "runs"
    shutil.copytree(digits_run.path, root / "v")
    return root


@pytest.fixture(scope="module")
def tokens(versions_root):
    return {role: add_token(versions_root, name, role)
            for name, role in (("vera", "viewer"), ("rui", "reviewer"))}


@pytest.fixture(scope="module")
def page(versions_root, tokens):
    with served(versions_root) as both:
        yield both


def _open_tab(d, url: str) -> None:
    d.get(url)
    tab = wait_for(lambda: [t for t in d.find_elements(By.CSS_SELECTOR, ".nav-link")
                            if t.text == "Versions"])
    tab[0].click()
    wait_for(lambda: d.find_elements(By.ID, "versions-save"))


def _save(d, name: str, note: str) -> str:
    d.find_element(By.ID, "versions-name").send_keys(name)
    d.find_element(By.ID, "versions-note").send_keys(note)
    scroll_click(d, d.find_element(By.ID, "versions-save"))
    return wait_for(lambda: d.find_element(By.ID, "versions-saved").text, 30)


def _diff_rows(d) -> list[dict]:
    return d.execute_script("""
        let api; try { api = dash_ag_grid.getApi('versions-diff'); } catch (e) { return []; }
        const out = []; api.forEachNodeAfterFilterAndSort(n => out.push(n.data)); return out;""")


def test_a_saved_version_and_its_difference_from_the_live_curation(page, versions_root,
                                                                    tokens):
    srv, d = page
    _open_tab(d, f"{srv.url}/curate/v?token={tokens['reviewer']}")
    assert "saved v1:" in _save(d, "v1", "before the second pass")
    listed = wait_for(lambda: d.find_element(By.ID, "versions-list").text)
    assert "v1" in listed and "rui" in listed and "before the second pass" in listed
    (saved,) = list_versions(RunDir(versions_root / "v"))
    assert saved["name"] == "v1" and saved["author"] == "rui"

    frozen = read_version(RunDir(versions_root / "v"), "v1").outcome
    kept_ = np.flatnonzero(frozen.kept & (frozen.labels != 3)).tolist()
    kept, moved = kept_[:2], kept_[2]
    run = Run(versions_root / "v")
    with acting_as("alice"):
        run.drop(kept)
        run.relabel([moved], "3")
    scroll_click(d, d.find_element(By.ID, "versions-compare"))
    summary = wait_for(lambda: (t := d.find_element(By.ID, "versions-summary").text)
                       and t.startswith("v1 → current: 3 changes") and t, 30)
    assert "dropped" in summary and "relabelled" in summary and "alice" in summary
    rows = wait_for(lambda: _diff_rows(d), 30)
    assert {r["sample"] for r in rows if r["change"] == "dropped"} == set(kept)
    assert [r["to"] for r in rows if r["change"] == "relabelled"] == ["3"]
    assert {r["decided_by"] for r in rows} == {"alice"}
    # Each changed sample shows its thumbnail, which the server serves.
    cell = wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#versions-diff .grid-thumb"))
    style = cell[0].get_attribute("style")
    assert f"/thumb/v/{rows[0]['sample']}.png" in style
    assert d.execute_script(
        "return fetch(arguments[0]).then(r => r.status)", f"/thumb/v/{rows[0]['sample']}.png"
        f"?token={tokens['reviewer']}") == 200


def test_a_viewers_save_is_refused_in_one_line_and_nothing_is_saved(page, versions_root,
                                                                     tokens):
    srv, d = page
    before = len(list_versions(RunDir(versions_root / "v")))
    _open_tab(d, f"{srv.url}/curate/v?token={tokens['viewer']}")
    line = _save(d, "v9", "")
    assert line.startswith("vera is a viewer here and cannot save versions: ask an admin "
                           "for a token with the reviewer role")
    assert len(list_versions(RunDir(versions_root / "v"))) == before


def test_the_export_tab_writes_a_saved_versions_frozen_curation(page, versions_root, tokens):
    """A version saved, then a sample dropped: the version exported from the Export tab
    as a job holds the version's kept indices, not the live curation's."""
    from selenium.webdriver.support.ui import Select

    srv, d = page
    run = RunDir(versions_root / "v")
    with acting_as("rui"):
        save_version(run, "for-export")
    frozen = read_version(run, "for-export").outcome
    Run(run.path).drop([int(np.flatnonzero(frozen.kept)[0])])
    d.get(f"{srv.url}/curate/v?token={tokens['reviewer']}")
    tab = wait_for(lambda: [t for t in d.find_elements(By.CSS_SELECTOR, ".nav-link")
                            if t.text == "Export"])
    tab[0].click()
    picker = wait_for(lambda: d.find_element(By.ID, "export-version"))
    wait_for(lambda: "version for-export" in picker.text)
    Select(picker).select_by_visible_text("version for-export")
    Select(d.find_element(By.ID, "export-format")).select_by_value("indices")
    d.find_element(By.ID, "export-name").send_keys("from-page")
    scroll_click(d, d.find_element(By.ID, "export-go"))
    listed = run.path / "exports" / "from-page" / "kept_indices.txt"
    wait_for(listed.is_file, 60)
    assert [int(x) for x in listed.read_text().split()] == np.flatnonzero(frozen.kept).tolist()
