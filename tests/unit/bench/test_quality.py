"""bench/quality.py's injected defects and its rule for choosing a cut."""

from __future__ import annotations

import numpy as np
from PIL import Image

from bench.quality import DEFECTS, STRENGTHS, chosen_cut, inject_defect, prf


def _photo() -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(40, 200, (32, 32, 3), dtype=np.uint8))


def test_each_defect_grows_with_its_strength():
    img = _photo()
    x = np.asarray(img, np.float32)
    means = [np.asarray(inject_defect(img, "dark", s), np.float32).mean() for s in STRENGTHS]
    assert x.mean() > means[0] > means[1] > means[2]
    grey = np.asarray(inject_defect(img, "grey", "strong"), np.int16)
    assert (grey.max(2) - grey.min(2)).max() <= 1
    assert inject_defect(img, "odd_size", "strong").size == (32, 8)
    boxed = np.asarray(inject_defect(img, "border", "middle"))
    assert (boxed[:5] == 0).all() and (boxed[-5:] == 0).all()
    clipped = [(np.asarray(inject_defect(img, "overexposed", s)).mean(2) >= 250).mean()
               for s in STRENGTHS]
    assert clipped[0] < clipped[1] < clipped[2]
    assert set(DEFECTS) == {"dark", "bright", "blurry", "low_info", "odd_size", "grey",
                            "overexposed", "border"}


def test_the_cut_is_the_lowest_with_the_best_f1_within_its_bounds():
    truth = np.array([0, 0, 0, 0, 1, 1], bool)
    score = np.array([0.0, 1.0, 2.0, 3.5, 5.0, 6.0], np.float32)
    everyone = np.ones(6, bool)
    cut = chosen_cut(score, truth, everyone, least=3.0, clean_rate=1.0)
    assert 3.5 < cut <= 5.0  # just above the highest clean score: F1 1
    assert prf(score >= cut, truth, everyone) == (1.0, 1.0, 1.0)
    assert chosen_cut(score, truth, everyone, least=5.5, clean_rate=1.0) == 5.5
