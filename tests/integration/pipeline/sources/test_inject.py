"""The injector's held-out transformations and outlier sources on real CIFAR-10
photographs: made after the cuts were chosen, to report on data they were not chosen on;
copies in families and across classes; leaks of test images; and bad options at the
command line."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from worker.pipeline.choices import HELD_OUT, HELD_OUT_SOURCES, STRENGTHS
from worker.pipeline.errors import InputError
from worker.pipeline.findings.pixels import grey_views, match_pairs
from worker.pipeline.sources.inject import (
    InjectionPlan,
    TrainImages,
    augment,
    inject,
)


@pytest.fixture(scope="module")
def photos(cifar_mini) -> list[Image.Image]:
    files = sorted((cifar_mini / "train").rglob("*.jpg"))[:: 97][:12]
    return [Image.open(f).convert("RGB") for f in files]


def _train(photos: list[Image.Image], labels: np.ndarray, n_classes: int) -> TrainImages:
    """The photographs, in turn, as a 32-px RGB folder dataset given ``labels`` (its true
    labels too) of ``n_classes`` classes."""
    return TrainImages(lambda i: photos[i % len(photos)], labels, labels, n_classes,
                       "folder", 32, False)


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


def test_mixed_is_unchanged_by_the_held_out_rows(photos):
    """``mixed`` cycles the chosen-on strengths exactly as before, so earlier runs and
    benchmark rows reproduce."""
    made = inject(_train(photos, np.arange(12) % 3, 3), InjectionPlan(0.5, 0, "mixed", 0))
    assert sorted({r["how"] for r in made.rows}) == sorted(STRENGTHS)
    held = inject(_train(photos, np.arange(12) % 3, 3),
                  InjectionPlan(0.6, 5, "held-out", 0, "held-out"))
    assert {r["how"] for r in held.rows if r["kind"] == "duplicate"} <= set(HELD_OUT)
    assert [r["how"] for r in held.rows if r["kind"] == "outlier"] == list(HELD_OUT_SOURCES)


def test_leaks_are_copies_of_test_images_with_their_labels(photos):
    """``--inject-leaks``: copies of test images join train with the test image's label,
    recorded as kind leak with the test index as source; the copies and outliers made
    beside them are the ones made without leaks (their own generator)."""
    from worker.pipeline.sources.inject import TestImages

    test = TestImages(lambda j: photos[j], np.arange(12) % 4)
    train, plan = _train(photos, np.arange(12) % 3, 4), InjectionPlan(0.25, 3, "held-out", 0)
    plain = inject(train, plan)
    made = inject(train, replace(plan, leaks=5), test)
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

    from tests.integration.conftest import CURATOR
    from worker.pipeline.sources.datasets import parse_spec
    from worker.pipeline.sources.ingest import DatasetOptions

    with pytest.raises(InputError, match="--inject-leaks copies test images into train"):
        DatasetOptions(parse_spec("digits"), inject_leaks=3)
    r = subprocess.run([CURATOR, "pipeline", "--dataset", "digits", "--inject-leaks", "3",
                        "--out", str(tmp_path / "run")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "a dataset with a test split" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


# --------------------------------------------------------------- families and across
def _labels(n: int) -> np.ndarray:
    return np.arange(n) % 4


def _families(photos, n: int = 60, rate: float = 0.5, **kw):
    """Copies of ``n`` samples (the photographs in turn), four classes."""
    return inject(_train(photos, _labels(n), 4), InjectionPlan(rate, 0, "mixed", 0, **kw))


def test_copies_come_in_families(photos):
    """``--duplicate-family 4``: each chosen sample gets 1 to 4 copies, one after another,
    each recording its source, until round(RATE·N) copies are made; the sizes vary."""
    made = _families(photos, family=4)
    rows = [r for r in made.rows if r["kind"] == "duplicate"]
    assert len(rows) == round(0.5 * 60) and len(made.labels) == len(rows)
    sources = [r["source"] for r in rows]
    runs = [s for k, s in enumerate(sources) if k == 0 or s != sources[k - 1]]
    assert len(runs) == len(set(sources))  # a family's copies follow one another
    sizes = [sources.count(s) for s in runs]
    assert all(1 <= k <= 4 for k in sizes) and len(set(sizes)) > 1, sizes
    assert len(runs) < len(rows)
    assert made.paths == [f"injected/duplicate/{k:06d}" for k in range(len(rows))]
    assert list(made.labels) == [s % 4 for s in sources]  # the source's label
    assert list(made.true_labels) == [s % 4 for s in sources]
    assert {r["how"] for r in rows} == set(STRENGTHS)  # cycled per copy
    for k, s in enumerate(sources):  # each copy is its recorded source, changed
        assert _match(Image.fromarray(made.images[k]), photos[s % len(photos)]) > 0.5, k


def test_the_defaults_make_the_copies_made_before_families_and_across(photos):
    """``--duplicate-family 1`` and ``--duplicate-across 0`` give what a call without them
    gives, which is what the injector made before they existed (the sources and
    strengths below were made then), so earlier benchmark runs keep their meaning."""
    labels = np.arange(12) % 3
    train = _train(photos, labels, 3)
    for args in [(0.5, 0, "mixed", 0), (0.6, 5, "held-out", 0, "held-out")]:
        plain = inject(train, InjectionPlan(*args))
        given = inject(train, InjectionPlan(*args, family=1, across=0.0))
        assert np.array_equal(plain.images, given.images) and plain.rows == given.rows
        assert np.array_equal(plain.labels, given.labels) and plain.paths == given.paths
        assert np.array_equal(plain.true_labels, given.true_labels)
    made = inject(train, InjectionPlan(0.5, 0, "mixed", 0, family=1, across=0.0))
    assert [(r["source"], r["how"]) for r in made.rows] == [
        (0, "strong"), (2, "light"), (5, "medium"), (6, "exact"), (7, "exact"), (9, "light")]
    assert list(made.labels) == [0, 2, 2, 0, 1, 0]


def test_a_share_of_the_copies_is_filed_under_another_class(photos):
    """``--duplicate-across 0.5``: half the copies (rounded) carry another class's label,
    never their source's; the rest their source's. The pixels, the truth rows and the
    true labels (the source's) are those made without it."""
    plain = _families(photos, family=3)
    made = _families(photos, family=3, across=0.5)
    assert np.array_equal(made.images, plain.images) and made.rows == plain.rows
    assert np.array_equal(made.true_labels, plain.true_labels)
    own = np.array([r["source"] % 4 for r in made.rows])
    across = made.labels != own
    assert across.sum() == round(0.5 * len(made.rows)), across.sum()
    assert np.array_equal(made.labels[~across], own[~across])
    assert ((made.labels >= 0) & (made.labels < 4)).all()
    assert len(set(made.labels[across].tolist())) > 1  # other classes, chosen at random
    again = _families(photos, family=3, across=0.5)
    assert np.array_equal(again.labels, made.labels)  # seeded
    every = _families(photos, across=1.0)
    assert (every.labels != np.array([r["source"] % 4 for r in every.rows])).all()


def test_across_needs_another_class(photos):
    with pytest.raises(InputError, match="--duplicate-across files copies under another"):
        inject(_train(photos, np.zeros(12, np.int64), 1),
               InjectionPlan(0.5, 0, "mixed", 0, across=0.5))


@pytest.mark.parametrize("flag, value", [("--duplicate-family", "0"),
                                         ("--duplicate-family", "11"),
                                         ("--duplicate-across", "1.5"),
                                         ("--duplicate-across", "-0.1")])
def test_bad_family_or_across_on_the_command_line_is_one_line(tmp_path, flag, value):
    import subprocess

    from tests.integration.conftest import CURATOR

    r = subprocess.run([CURATOR, "pipeline", "--dataset", "digits", "--inject-duplicates",
                        "0.05", f"{flag}={value}", "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{flag}: must be" in lines[0], r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "run").exists()
