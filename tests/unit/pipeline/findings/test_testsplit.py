"""The test split's paths (worker/pipeline/findings/testsplit.py): a repeat read is a cache
hit, the cache holds at most its size, and a changed file is read again."""

from __future__ import annotations

import csv
import os

import pytest

from worker.pipeline.findings import testsplit
from worker.pipeline.findings.testsplit import _read_paths, read_test_paths
from worker.pipeline.storage.rundir import RunDir

pytestmark = pytest.mark.usefixtures("empty_caches")  # tests/conftest.py


def _write_test_split(run: RunDir, paths: list[str]) -> None:
    tmp = run.path / "split.new"
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["index", "path", "label"])
        writer.writerows([k, p, "0"] for k, p in enumerate(paths))
    target = testsplit.test_paths_csv(run)
    if target.exists():  # the next version is a second newer, whatever the clock says
        old = target.stat().st_mtime_ns + 10**9
        os.utime(tmp, ns=(old, old))
    os.replace(tmp, target)


def test_test_split_paths_hit_evict_at_their_size_and_follow_the_file(tmp_path):
    runs = [RunDir(tmp_path / f"r{k}") for k in range(_read_paths.cache.maxsize + 1)]
    for k, run in enumerate(runs):
        run.path.mkdir()
        _write_test_split(run, [f"test/{k}.png"])
    first = testsplit.test_paths_csv(runs[0])
    key = (str(first), first.stat().st_mtime_ns)
    assert read_test_paths(runs[0]) == ["test/0.png"]
    assert _read_paths(*key) is _read_paths(*key)
    for run in runs[1:]:
        read_test_paths(run)
    assert key not in _read_paths.cache and len(_read_paths.cache) == 8
    _write_test_split(runs[1], ["test/new.png"])
    assert read_test_paths(runs[1]) == ["test/new.png"]
