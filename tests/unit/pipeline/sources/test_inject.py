"""The injector (worker/pipeline/sources/inject.py): held-out outlier sources, families of
copies, copies filed under another class, what is part of the feature cache's key, and
bad options refused. The transformations on real photographs are tested in
tests/integration/pipeline/sources/test_inject.py."""

from __future__ import annotations

import numpy as np
import pytest

from worker.pipeline.choices import HELD_OUT_SOURCES
from worker.pipeline.errors import InputError
from worker.pipeline.sources.inject import (
    outlier_images,
)


def test_held_out_sources_cycle_and_are_images():
    out, kinds = outlier_images(10, 32, "folder", False, np.random.default_rng(0), "held-out")
    assert out.shape == (10, 32, 32, 3) and out.dtype == np.uint8
    assert kinds == [HELD_OUT_SOURCES[k % len(HELD_OUT_SOURCES)] for k in range(10)]
    assert len({out[k].tobytes() for k in range(10)}) == 10
    grey = out[kinds.index("grey")].astype(int)
    assert (grey[..., 0] == grey[..., 1]).all() and grey.std() < 70  # low-contrast grey
    one, kinds = outlier_images(3, 32, "folder", True, np.random.default_rng(0), "texture")
    assert kinds == ["texture"] * 3 and (one[..., 0] == one[..., 2]).all()


def test_unknown_sources_are_refused():
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    with pytest.raises(InputError, match="--outlier-sources must be one of"):
        DatasetOptions(parse_spec("digits"), inject_outliers=3, outlier_sources="moon")


def test_family_sizes_add_up_to_the_total():
    from worker.pipeline.sources.inject import family_sizes

    for total in (0, 1, 2, 7, 30, 301):
        for family in (1, 2, 4, 10):
            sizes = family_sizes(total, family, seed=3)
            assert sizes.sum() == total and ((sizes >= 1) & (sizes <= family)).all()
            assert np.array_equal(sizes, family_sizes(total, family, seed=3))  # seeded
    assert (family_sizes(30, 1, 0) == 1).all()
    assert not np.array_equal(family_sizes(300, 10, 0), family_sizes(300, 10, 1))


def test_ingest_passes_families_and_across_on():
    """From the options to the injector: a digits run's copies come in families of up to 3
    and half of them are filed across; the options round-trip through the run's record,
    and a record made before they existed reads as families of one, none across."""
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions, load_labelled_dataset

    opts = DatasetOptions(parse_spec("digits"), inject_duplicates=0.05, seed=1,
                          duplicate_family=3, duplicate_across=0.5)
    assert DatasetOptions.from_json(opts.to_json()) == opts
    old = {k: v for k, v in opts.to_json().items()
           if k not in ("duplicate_family", "duplicate_across")}
    back = DatasetOptions.from_json(old)
    assert back.duplicate_family == 1 and back.duplicate_across == 0.0
    ds = load_labelled_dataset(opts)
    rows = ds.injected.rows
    n = len(ds.samples.labels) - len(rows)
    assert len(rows) == round(0.05 * n)
    sizes = np.unique([r["source"] for r in rows], return_counts=True)[1]
    assert sizes.max() <= 3 and sizes.max() > 1
    own = ds.samples.labels[[r["source"] for r in rows]]
    assert (ds.samples.labels[n:] != own).sum() == round(0.5 * len(rows))


def _feature_key(**dataset) -> str:
    """The features' cache key of a pixels run of digits whose recorded dataset options
    are these (besides no injection at all)."""
    from types import SimpleNamespace

    from worker.pipeline.features.extraction import cache_key
    from worker.pipeline.features.feature_options import FeatureOptions

    meta = {"dataset": {"spec": "digits", "split": "train", "inject_duplicates": 0,
                        "inject_outliers": 0, "duplicate_strength": "mixed",
                        "outlier_sources": "mixed", **dataset}}
    run = SimpleNamespace(read_meta=lambda: meta,
                          read_samples=lambda: SimpleNamespace(paths=["a", "b"]))
    return cache_key(run, FeatureOptions(model="pixels"), precision="fp32")


def test_families_change_the_feature_cache_key_and_across_does_not():
    """Families copy other samples under the same paths, so they are part of the features'
    key; filing copies across changes labels only, as injected noise does. Families of one
    keep the key a run recorded before the option existed had."""
    before = _feature_key(inject_duplicates=0.05)
    assert _feature_key(inject_duplicates=0.05, duplicate_family=1,
                        duplicate_across=0.0) == before
    assert _feature_key(inject_duplicates=0.05, duplicate_family=1,
                        duplicate_across=0.5) == before
    assert _feature_key(inject_duplicates=0.05, duplicate_family=4) != before


def test_leaks_and_the_seed_are_part_of_the_feature_cache_key():
    """Leaks and the seed put other pixels under the same paths: a run with leaks alone at
    another strength, or the same injection under another seed, gets its own features."""
    leaks = _feature_key(inject_leaks=10, duplicate_strength="exact")
    assert leaks != _feature_key(inject_leaks=10, duplicate_strength="light")
    assert leaks != _feature_key(inject_leaks=10, duplicate_strength="exact", seed=1)
    assert _feature_key(inject_duplicates=0.05) == \
        _feature_key(inject_duplicates=0.05, seed=0, inject_leaks=0)


@pytest.mark.parametrize("field, value, message", [
    ("duplicate_family", 0, "--duplicate-family must be a whole number from 1 to 10"),
    ("duplicate_family", 11, "--duplicate-family must be a whole number from 1 to 10"),
    ("duplicate_family", 2.5, "--duplicate-family must be a whole number from 1 to 10"),
    ("duplicate_across", 1.5, "--duplicate-across must be a number ≥ 0 and ≤ 1"),
    ("duplicate_across", -0.1, "--duplicate-across must be a number ≥ 0 and ≤ 1"),
])
def test_bad_family_or_across_is_refused(field, value, message):
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    with pytest.raises(InputError, match=message):
        DatasetOptions(parse_spec("digits"), inject_duplicates=0.05, **{field: value})
