"""The app's in-process caches (app/caching.py): the sizes and lifetimes chosen for each.
How each follows a run's files is tested on a real run in
tests/integration/app/test_caching.py."""

from __future__ import annotations

import pytest

from app import caching
from app import run_data as run_data_module
from app.image_routes import _run_dataset, background_png, image_png, thumbnail_png
from worker.pipeline.findings.testsplit import _read_paths

pytestmark = pytest.mark.usefixtures("empty_caches")  # tests/conftest.py


def test_the_sizes_and_lifetimes_are_those_chosen():
    assert (caching.files.maxsize, caching.derived.maxsize, caching.labels.maxsize) == \
        (20000, 256, 20000)
    assert caching.files.ttl == caching.derived.ttl == caching.labels.ttl == 3600
    assert run_data_module._load.cache.maxsize == run_data_module.RUNS_KEPT == 8
    assert run_data_module._STATES.maxsize == run_data_module.STATES_KEPT == 4
    assert _run_dataset.cache.maxsize == 4 and _read_paths.cache.maxsize == 8
    for png in (thumbnail_png, image_png, background_png):
        assert png.cache is caching.files
