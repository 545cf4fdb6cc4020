"""``CURATOR_MIN_FREE_MB`` (worker/settings_model.py ``min_free_mb``): the free space, in MB,
a run's filesystem must keep after a version is written (worker/pipeline/curation/
versions.py refuses one that would leave less)."""

from __future__ import annotations

import pytest

from worker.pipeline.curation.versions import DEFAULT_MIN_FREE_MB
from worker.pipeline.errors import InputError
from worker.settings import load_settings


def test_the_margin_defaults_to_the_pipelines_and_is_read_from_the_environment(env):
    assert load_settings().min_free_mb == DEFAULT_MIN_FREE_MB == 64
    env("MIN_FREE_MB", " 1_000 ")
    assert load_settings().min_free_mb == 1000
    env("MIN_FREE_MB", "0")
    assert load_settings().min_free_mb == 0


@pytest.mark.parametrize("value, message", [
    ("lots", "CURATOR_MIN_FREE_MB must be a whole number, got 'lots'"),
    ("1.5", "CURATOR_MIN_FREE_MB must be a whole number, got '1.5'"),
    ("-1", "CURATOR_MIN_FREE_MB: Input should be greater than or equal to 0"),
])
def test_a_bad_margin_is_one_line(env, value, message):
    env("MIN_FREE_MB", value)
    with pytest.raises(InputError) as err:
        load_settings()
    assert str(err.value) == message
