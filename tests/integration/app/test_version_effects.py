"""What each version did, on the Results page (app/version_effects.py): two experiments
whose curated subsets trained on two versions of a real run, their accuracy difference
(recorded results.csv rows) beside the versions' difference (``curator diff``)."""

from __future__ import annotations

import csv
import os
import sys

import numpy as np
import pytest

from app.version_effects import (
    accuracy_texts,
    changes_text,
    experiment_version,
    read_experiments,
    version_effects,
)
from tsne_curator import Run
from worker.pipeline.curation.version_diff import diff_versions
from worker.pipeline.curation.versions import read_version, save_version
from worker.pipeline.storage.author import acting_as
from worker.settings import Settings
from worker.train.experiment import read_results

FULL = (0.70, 0.71, 0.705)


def _experiment(run, name: str, version: str, filtered: tuple, when: int):
    folder = run.path / "experiments" / name
    folder.mkdir(parents=True)
    with open(folder / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, ["subset", "batch_size", "seed", "final_test_acc",
                                "train_size", "version"])
        w.writeheader()
        for subset, accs, v in (("full", FULL, ""), ("filtered", filtered, version)):
            w.writerows({"subset": subset, "batch_size": 32, "seed": k, "final_test_acc": a,
                         "train_size": 100, "version": v} for k, a in enumerate(accs))
    os.utime(folder / "results.csv", (when, when))
    return folder


@pytest.fixture
def two_versions(fresh_run):
    """v1 saved, then alice drops three kept samples and relabels one, then v2."""
    save_version(fresh_run, "v1")
    frozen = read_version(fresh_run, "v1").outcome
    kept = np.flatnonzero(frozen.kept & (frozen.labels != 3)).tolist()
    with acting_as("alice"):
        Run(fresh_run.path).drop(kept[:3])
        Run(fresh_run.path).relabel([kept[3]], "3")
    save_version(fresh_run, "v2")
    return fresh_run


def test_each_experiment_is_set_beside_the_last_one_on_another_version(two_versions):
    run = two_versions
    folders = [_experiment(run, "a", "v1", (0.750, 0.752, 0.748), 1_000_000),
               _experiment(run, "b", "v2", (0.760, 0.761, 0.759), 2_000_000),
               _experiment(run, "c", "v2", (0.761, 0.760, 0.762), 3_000_000)]
    experiments = read_experiments(folders, read_results)
    assert [e.version for e in experiments] == ["v1", "v2", "v2"]
    effects = version_effects(run, experiments)
    # c is on b's version: each is set beside a, the last earlier one on another version.
    assert [(e["before"], e["after"], e["versions"]) for e in effects] == [
        ("a", "b", "v1 → v2"), ("a", "c", "v1 → v2")]
    first = effects[0]
    assert first["changes"].startswith("dropped 3 more (") and "relabelled 1" in first["changes"]
    (line,) = first["accuracy"]
    assert line == "filtered at batch 32: +1.00 ± 0.13 pp at 3 seeds, p = 0.005"


def test_the_words_of_a_diff_and_of_an_accuracy_difference(two_versions):
    rows = diff_versions(two_versions, "v1", "v2")
    words = changes_text(rows)
    assert words.startswith("dropped 3 more (") and ", relabelled 1 (" in words
    assert "kept back" not in words and changes_text([]) == "no sample changed"
    assert experiment_version([{"subset": "full", "version": ""},
                               {"subset": "filtered", "version": "v7"}]) == "v7"
    assert experiment_version([{"subset": "full"}]) == ""
    a, b = read_experiments([_experiment(two_versions, "x", "v1", (0.70,), 1),
                             _experiment(two_versions, "y", "v2", (0.72,), 2)], read_results)
    assert accuracy_texts(a, b) == ["filtered at batch 32: +2.00 pp at 1 seed "
                                    "(one seed: no spread)"]
    c = read_experiments([_experiment(two_versions, "z", "v2", (0.72, 0.73, 0.71), 3)],
                         read_results)[0]
    assert accuracy_texts(a, c)[0].startswith("filtered at batch 32: +2.00 pp at 1 and 3 seeds")


def test_the_results_page_shows_the_version_and_what_it_did(two_versions):
    from app.server import create_app

    app = create_app(Settings(runs_root=two_versions.path.parent))
    page = sys.modules["pages.results"]  # Dash imports the pages as pages.<name>
    _experiment(two_versions, "a", "v1", (0.750, 0.752, 0.748), 1_000_000)
    _experiment(two_versions, "b", "v2", (0.760, 0.761, 0.759), 2_000_000)
    with app.server.test_request_context(headers={"Host": "127.0.0.1"}):
        _, _, shown = page.refresh(0, "digits")
    text = str(shown)
    assert "What each version did" in text and "v1 → v2" in text
    assert "filtered at batch 32: +1.00" in text and " · version v2" in text
