"""The injector's held-out transformations and outlier sources (issue 46, item 2): made
after the cuts were chosen, to report on data they were not chosen on. Real CIFAR-10
photographs."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from worker.pipeline.errors import InputError
from worker.pipeline.findings.pixels import grey_views, match_pairs
from worker.pipeline.names import HELD_OUT, HELD_OUT_SOURCES, STRENGTHS
from worker.pipeline.sources.inject import augment, inject, outlier_images


@pytest.fixture(scope="module")
def photos(cifar_mini) -> list[Image.Image]:
    files = sorted((cifar_mini / "train").rglob("*.jpg"))[:: 97][:12]
    return [Image.open(f).convert("RGB") for f in files]


def _match(a: Image.Image, b: Image.Image) -> float:
    v = grey_views(np.stack([np.asarray(a), np.asarray(b)]))
    return float(match_pairs(v, np.array([0]), v, np.array([1]))[0])


@pytest.mark.parametrize("how", HELD_OUT)
def test_a_held_out_copy_is_the_same_picture_changed(photos, how):
    """Same size and mode as its source, never identical, and still more like its source
    than like the other photographs (its median match with the source is higher than any
    match between two different photographs here)."""
    rng = np.random.default_rng(0)
    own, other = [], []
    for k, img in enumerate(photos):
        copy = augment(img, how, rng)
        assert copy.size == img.size and copy.mode == img.mode
        assert not np.array_equal(np.asarray(copy), np.asarray(img))
        own.append(_match(copy, img))
        other.append(_match(copy, photos[(k + 1) % len(photos)]))
    assert np.median(own) > np.median(other) + 0.2, (how, own, other)
    # Seeded: the same generator state makes the same copy.
    again = augment(photos[0], how, np.random.default_rng(0))
    assert np.array_equal(np.asarray(again), np.asarray(augment(photos[0], how,
                                                                 np.random.default_rng(0))))


def test_a_grey_image_stays_grey(photos):
    grey = photos[0].convert("L")
    for how in HELD_OUT:
        out = augment(grey, how, np.random.default_rng(1))
        assert out.mode == "L" and out.size == grey.size


def test_held_out_sources_cycle_and_are_images():
    out, kinds = outlier_images(10, 32, "folder", False, np.random.default_rng(0), "held-out")
    assert out.shape == (10, 32, 32, 3) and out.dtype == np.uint8
    assert kinds == [HELD_OUT_SOURCES[k % len(HELD_OUT_SOURCES)] for k in range(10)]
    assert len({out[k].tobytes() for k in range(10)}) == 10
    grey = out[kinds.index("grey")].astype(int)
    assert (grey[..., 0] == grey[..., 1]).all() and grey.std() < 70  # low-contrast grey
    one, kinds = outlier_images(3, 32, "folder", True, np.random.default_rng(0), "texture")
    assert kinds == ["texture"] * 3 and (one[..., 0] == one[..., 2]).all()


def test_mixed_is_unchanged_by_the_held_out_rows(photos):
    """``mixed`` cycles the chosen-on strengths exactly as before, so earlier runs and
    benchmark rows reproduce."""
    made = inject(lambda i: photos[i], np.arange(12) % 3, np.arange(12) % 3, 3, 32, False,
                  "folder", 0.5, 0, "mixed", 0)
    assert sorted({r["how"] for r in made.rows}) == sorted(STRENGTHS)
    held = inject(lambda i: photos[i], np.arange(12) % 3, np.arange(12) % 3, 3, 32, False,
                  "folder", 0.6, 5, "held-out", 0, "held-out")
    assert {r["how"] for r in held.rows if r["kind"] == "duplicate"} <= set(HELD_OUT)
    assert [r["how"] for r in held.rows if r["kind"] == "outlier"] == list(HELD_OUT_SOURCES)


def test_unknown_sources_are_refused():
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    with pytest.raises(InputError, match="--outlier-sources must be one of"):
        DatasetOptions(parse_spec("digits"), inject_outliers=3, outlier_sources="moon")
