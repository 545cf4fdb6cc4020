"""Findings in the review list, in real headless Chromium against a real
``curator serve``: a CIFAR-10 folder with a test split, injected near copies and train
copies of test images. The finding buttons filter the list by kind; a focused copy shows
its group side by side, ``m`` keeps it instead of the kept copy (one undoable step); a
focused leak shows the test image it copies. The features are CIFAR ResNet-20's, whose
weights were trained on CIFAR-10's true labels (they flatter every detector)."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.by import By

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
from tests.integration.conftest import shared_file
from worker.pipeline.storage.curation_store import CurationStore

pytestmark = browser_marks()

LEAKED = 4  # test images copied into train


@pytest.fixture(scope="module")
def findings_root(cifar_mini, tmp_path_factory):
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.runner import run_pipeline
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions
    from worker.pipeline.storage.rundir import RunDir

    data = tmp_path_factory.mktemp("findings-data") / "cifar"
    for split, per_class in (("train", 40), ("test", 10)):
        for cls in sorted(p.name for p in (cifar_mini / split).iterdir()):
            (data / split / cls).mkdir(parents=True)
            for f in sorted((cifar_mini / split / cls).glob("*.jpg"))[:per_class]:
                shutil.copy(f, data / split / cls / f.name)
    tests = sorted((data / "test").rglob("*.jpg"))
    for k, f in enumerate(tests[:: len(tests) // LEAKED][:LEAKED]):
        shutil.copy(f, data / "train" / f.parent.name / f"leaked-{k}.jpg")
    root = tmp_path_factory.mktemp("findings") / "runs"
    weights = shared_file("weights/resnet20-12fca82f.th")
    run_pipeline(RunDir(root / "cifar"),
                 DatasetOptions(parse_spec(f"folder:{data}"), inject_duplicates=0.05,
                                duplicate_strength="exact", seed=0),
                 FeatureOptions(model="cifar-resnet20", weights=weights), EmbeddingOptions())
    return root


@pytest.fixture(scope="module")
def page(findings_root):
    with served(findings_root) as both:
        yield both


def _open_review(page):
    srv, d = page
    return open_review_list(d, f"{srv.url}/curate/cifar")


def _finding_button(d, kind: str):
    """The review list's button for ``kind`` ("duplicate · 12"), once it is displayed."""
    return wait_for(lambda: next((b for b in d.find_elements(
        By.CSS_SELECTOR, ".review-finding") if b.is_displayed()
        and b.text.startswith(f"{kind} · ")), None))


def _filtered_to(d, kind: str) -> list[dict] | None:
    rows = grid_rows(d)
    return rows if rows and all(kind in r["finding"].split(",") for r in rows) else None


def _related(d) -> list[tuple[str, bool]]:
    """The side-by-side view's captions, and whether each image has loaded."""
    out = []
    for fig in d.find_elements(By.CSS_SELECTOR, "#review-related figure"):
        if not fig.is_displayed():
            return []
        img = fig.find_element(By.TAG_NAME, "img")
        loaded = d.execute_script("return arguments[0].complete && "
                                  "arguments[0].naturalWidth > 0", img)
        out.append((fig.find_element(By.TAG_NAME, "figcaption").text, bool(loaded)))
    return out


def test_finding_filter_side_by_side_keep_another_copy_and_undo(page, findings_root):
    d = _open_review(page)
    store = CurationStore(findings_root / "cifar" / "curation.sqlite")
    button = _finding_button(d, "duplicate")
    count = int(shown_text(button).split("·")[1])
    button.click()
    rows = wait_for(lambda: _filtered_to(d, "duplicate"))
    assert len(rows) == count > 0
    focus_row(d, 0)
    sample = wait_for(lambda: focused_sample(d))
    # The copy and the group's kept member, side by side, every image loaded.
    shown = wait_for(lambda: (lambda r: r if len(r) >= 2 and all(ok for _, ok in r)
                              else None)(_related(d)))
    assert shown[0][0].startswith(f"#{sample} ") and shown[0][0].endswith("· dropped")
    assert any(caption.endswith("· kept") for caption, _ in shown[1:])
    other = int(next(c for c, _ in shown[1:] if c.endswith("· kept")).split()[0][1:])
    d.find_element(By.TAG_NAME, "body").send_keys("m")  # keep this copy instead
    wait_for(lambda: store.overrides().get(sample) == "keep"
             and store.overrides().get(other) == "drop")
    focus_row(d, next(k for k, r in enumerate(grid_rows(d)) if r["sample"] == sample))
    wait_for(lambda: (lambda r: r and r[0][0].endswith("· kept"))(_related(d)))
    press_undo(d)  # one step undoes both
    wait_for(lambda: sample not in store.overrides() and other not in store.overrides())


def test_leak_filter_shows_the_test_image_beside_the_train_copy(page):
    d = _open_review(page)
    button = _finding_button(d, "leak")
    assert int(shown_text(button).split("·")[1]) >= LEAKED
    button.click()
    wait_for(lambda: _filtered_to(d, "leak"))
    focus_row(d, 0)
    wait_for(lambda: focused_sample(d) is not None)
    shown = wait_for(lambda: (lambda r: r if any(c.startswith("test: ") for c, _ in r)
                              and all(ok for _, ok in r) else None)(_related(d)))
    assert shown[-1][0].startswith("test: test/")
    detail = shown_text(d.find_element(By.ID, "review-detail"))
    assert "nearly identical to test image test/" in detail


def test_proposed_rows_filter_by_state_and_a_bulk_keep_settles_them(page, findings_root):
    """Marks below a kind's drop cut are listed as ``proposed`` (kept);
    the state's button filters the list to them, and Keep all settles them in one step."""
    from worker.pipeline.findings import ensure_findings, get_kind
    from worker.pipeline.storage.rundir import RunDir

    run = RunDir(findings_root / "proposed")
    if not run.path.exists():
        shutil.copytree(findings_root / "cifar", run.path)
    # Outliers from a low score, none dropped: every outlier mark is proposed.
    tables = ensure_findings(run, {"outlier": 1.5, "outlier_drop": 100.0})
    proposed = tables["outlier"].issue & ~get_kind("outlier").dropping(tables["outlier"])
    assert proposed.any()
    srv, d = page
    open_review_list(d, f"{srv.url}/curate/proposed")
    button = wait_for(lambda: next((b for b in d.find_elements(
        By.CSS_SELECTOR, ".review-state-btn") if b.is_displayed()
        and b.text.startswith("proposed · ")), None))
    n = int(shown_text(button).split("·")[1])
    assert n >= 1
    button.click()
    rows = wait_for(lambda: (r := grid_rows(d)) and len(r) == n
                    and {x["state"] for x in r} == {"proposed"} and r)
    store = CurationStore(run.path / "curation.sqlite")
    d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();",
                     d.find_element(By.CSS_SELECTOR, "[id*='review-bulk'][id*='keep']"))
    text = wait_for(lambda: d.find_element(By.ID, "review-confirm-text").text)
    assert text == f"Keep all changes {n} of the {n} listed samples (one step, undoable)."
    d.execute_script("arguments[0].click();", d.find_element(By.ID, "review-confirm"))
    wait_for(lambda: store.overrides() == {r["sample"]: "keep" for r in rows})
    wait_for(lambda: {r["state"] for r in grid_rows(d)} <= {"kept"})
