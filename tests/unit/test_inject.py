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


def test_leaks_are_copies_of_test_images_with_their_labels(photos):
    """``--inject-leaks``: copies of test images join train with the test image's label,
    recorded as kind leak with the test index as source; the copies and outliers made
    beside them are the ones made without leaks (their own generator)."""
    from worker.pipeline.sources.inject import TestImages

    test = TestImages(lambda j: photos[j], np.arange(12) % 4)
    plain = inject(lambda i: photos[i], np.arange(12) % 3, np.arange(12) % 3, 4, 32, False,
                   "folder", 0.25, 3, "held-out", 0)
    made = inject(lambda i: photos[i], np.arange(12) % 3, np.arange(12) % 3, 4, 32, False,
                  "folder", 0.25, 3, "held-out", 0, test=test, leaks=5)
    leaks = [k for k, r in enumerate(made.rows) if r["kind"] == "leak"]
    assert len(leaks) == 5 and [made.paths[k] for k in leaks][0] == "injected/leak/000000"
    sources = [made.rows[k]["source"] for k in leaks]
    assert len(set(sources)) == 5 and all(0 <= s < 12 for s in sources)
    assert [made.labels[k] for k in leaks] == [s % 4 for s in sources]
    assert {made.rows[k]["how"] for k in leaks} <= set(HELD_OUT)
    for k, s in zip(leaks, sources, strict=True):  # each is its test image, changed
        assert _match(Image.fromarray(made.images[k]), photos[s]) > 0.5
    # Everything else is what the same call without leaks makes.
    others = [k for k, r in enumerate(made.rows) if r["kind"] != "leak"]
    assert np.array_equal(made.images[others], plain.images)
    assert [made.rows[k] for k in others] == plain.rows


def test_leaks_need_a_dataset_with_a_test_split(tmp_path):
    import subprocess

    from tests.unit.test_cli import CURATOR
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    with pytest.raises(InputError, match="--inject-leaks copies test images into train"):
        DatasetOptions(parse_spec("digits"), inject_leaks=3)
    r = subprocess.run([CURATOR, "pipeline", "--dataset", "digits", "--inject-leaks", "3",
                        "--out", str(tmp_path / "run")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "a dataset with a test split" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()
