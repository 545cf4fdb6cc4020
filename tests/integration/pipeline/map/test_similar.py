"""More like this (worker/pipeline/map/similar.py, curation/similar_rows.py): a sample's
nearest samples across every class, on a real digits run, against a brute-force oracle,
and the same rows from ``curator similar`` and ``run.similar``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tsne_curator as tc
from worker.pipeline.curation.similar_rows import SIMILAR_COLUMNS, similar_rows
from worker.pipeline.errors import InputError
from worker.pipeline.map.embedding import run_pca
from worker.pipeline.map.similar import SPACE_DIMS, nearest_samples


def _curator(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_the_nearest_samples_are_the_brute_force_ones(digits_run):
    x = run_pca(digits_run, SPACE_DIMS).x
    for index in (0, 17, len(x) - 1):
        idx, dist = nearest_samples(digits_run, index, 25)
        d = np.linalg.norm(x - x[index], axis=1)
        d[index] = np.inf
        want = np.argsort(d, kind="stable")[:25]
        assert index not in idx and list(idx) == list(want)
        assert np.allclose(dist, d[want], atol=1e-3) and np.all(np.diff(dist) >= 0)


def test_the_rows_say_what_the_review_list_says(digits_run):
    rows = similar_rows(digits_run, 17, 30)
    assert [r["rank"] for r in rows] == list(range(1, 31))
    assert all(set(r) == set(SIMILAR_COLUMNS) for r in rows)
    labels = {r["label"] for r in rows}
    assert labels <= set(digits_run.read_samples().classes)
    # The label rule's marks carry their suggestion and their fate, as in findings().
    frame = tc.open(digits_run.path).findings("label").set_index("index")
    for r in rows:
        if "label" in r["findings"].split(","):
            assert r["suggested_label"] == frame.loc[r["index"], "suggested_label"]
            assert r["decision"] == frame.loc[r["index"], "decision"]


def test_curator_similar_and_run_similar_give_the_same_rows(digits_run):
    r = _curator("similar", str(digits_run.path), "17", "--k", "12", "--json")
    assert r.returncode == 0, r.stderr
    frame = tc.open(digits_run.path).similar(17, k=12)
    assert json.loads(r.stdout) == frame.to_dict("records")
    text = _curator("similar", str(digits_run.path), "17", "--k", "3")
    assert text.returncode == 0 and text.stdout.splitlines()[0].split() == list(SIMILAR_COLUMNS)
    assert len(text.stdout.splitlines()) == 4


@pytest.mark.parametrize(("args", "message"), [
    (("5000",), "no sample 5000: the run's samples are 0 to 1796"),
    (("-1",), "must be a whole number from 0"),
    (("3", "--k", "0"), "--k: must be a whole number from 1 to 10,000, got 0"),
    (("x",), "no file x: give a sample index (a whole number) or an image file"),
])
def test_a_bad_sample_or_count_is_one_line(digits_run, args, message):
    r = _curator("similar", str(digits_run.path), *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr
    with pytest.raises(InputError):
        tc.open(digits_run.path).similar(5000)


def test_two_asks_at_once_build_the_search_space_once(digits_run, monkeypatch):
    # The Curate page builds the space as it opens; an s pressed meanwhile waits for that
    # build instead of fitting the PCA a second time beside it.
    import threading
    import time

    from worker.pipeline.map import similar

    builds = []

    def slow_pca(*args, **kwargs):  # the real PCA, made slow enough for the two to overlap
        builds.append(1)
        time.sleep(0.5)
        return run_pca(*args, **kwargs)

    monkeypatch.setattr(similar, "run_pca", slow_pca)
    similar.search_space.cache_clear()
    asks = [threading.Thread(target=nearest_samples, args=(digits_run, i, 5)) for i in (1, 2)]
    for ask in asks:
        ask.start()
    for ask in asks:
        ask.join(60)
    assert len(builds) == 1
