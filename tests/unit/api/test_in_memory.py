"""``tc.from_arrays`` (tsne_curator/in_memory.py) refuses what cannot become a run, in one
``tc.InputError`` line, before anything is written: arrays of the wrong shape, dtype or
values, labels that do not match, too few samples for the map, bad names or keywords, an
image file that does not decode. Real data: scikit-learn's digits; no run is made here
(the runs it makes are tested in tests/integration/api/test_in_memory.py)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import tsne_curator as tc
from tests.digits_arrays import digits, digits_all, features_file
from tests.refusals import refused
from worker.pipeline.errors import InputError


@pytest.mark.parametrize("change, word", [
    (lambda f, y, i: (np.where(np.arange(len(f))[:, None] == 7, np.nan, f), y, i), "row 7"),
    (lambda f, y, i: (f[:, 0], y, i), "N×D"),
    (lambda f, y, i: (f, y[:-1], i), "labels must be 40 values"),
    (lambda f, y, i: (f, y.astype(float), i), "whole numbers or text"),
    (lambda f, y, i: (f, np.zeros_like(y), i), "one class"),
    (lambda f, y, i: (f, [" 3"] * 20 + ["4"] * 20, i), "surrounding spaces"),
    (lambda f, y, i: (f, y, i[:-1]), "images must be 40"),
    (lambda f, y, i: (f, y, i.astype(np.float32)), "uint8"),
])
def test_from_arrays_bad_arrays_are_one_error_and_touch_nothing(tmp_path, change, word):
    feats, labels, images = change(*digits(40))
    out = tmp_path / "emb"
    with pytest.raises(InputError, match=word):
        tc.from_arrays(feats, labels, out, images=images)
    assert not out.exists()


def test_from_arrays_bad_names_or_keywords_touch_nothing(tmp_path):
    feats, labels, _ = digits(40)
    out = tmp_path / "emb"
    with pytest.raises(InputError, match="label 9 has no name"):
        tc.from_arrays(feats, labels, out, class_names=["a", "b"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'model'"):
        tc.from_arrays(feats, labels, out, model="resnet18")
    with pytest.raises(InputError, match="perplexity"):
        tc.from_arrays(feats, labels, out, perplexity=0)
    assert not out.exists()


def _features(n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    x, y, _ = digits_all()
    return x[:n].copy(), y[:n].copy()


def test_float64_beyond_float32_says_so_not_nan(tmp_path):
    x, y = _features(40)
    x[12, 3] = 1e39
    refused(lambda: tc.from_arrays(x, y, out=tmp_path / "o"), tmp_path / "o",
             r"features row 12 has values up to 1e\+39, which overflow float32")


def test_constant_or_nearly_constant_features_are_refused(tmp_path):
    x, y = _features(40)
    out = tmp_path / "o"
    refused(lambda: tc.from_arrays(np.zeros_like(x), y, out=out), out,
             "features are constant: every row is the same")
    refused(lambda: tc.from_arrays(x * 1e-30, y, out=out), out,
             "features differ by at most 1.6e-29 between rows, too little for the map")


def test_ragged_feature_rows_are_one_error(tmp_path):
    x, y = _features(20)
    rows = [list(r) for r in x]
    rows[7] = rows[7][:5]
    refused(lambda: tc.from_arrays(rows, y, out=tmp_path / "o"), tmp_path / "o",
             "features must be N rows of D numbers each: row 7 has 5 values and row 0 64")


def test_fewer_samples_than_the_map_needs_are_refused_up_front(tmp_path):
    x, y = _features(3)
    refused(lambda: tc.from_arrays(x, y, out=tmp_path / "o"), tmp_path / "o",
             "the labels argument gives 3 sample.s.: the map needs at least 4")
    feats, labels = features_file(tmp_path / "data", x, y)
    with pytest.raises(tc.InputError, match=r"dataset features:.*f.npy gives 3 sample"):
        tc.pipeline(f"features:{feats}", out=tmp_path / "o", labels=labels)
    assert not (tmp_path / "o").exists()


def test_an_unreadable_image_file_is_refused_before_it_is_copied(tmp_path):
    _, _, pixels = digits_all()
    x, y = _features(20)
    files = []
    for i in range(20):
        files.append(tmp_path / "img" / f"{i}.png")
        files[-1].parent.mkdir(exist_ok=True)
        Image.fromarray(pixels[i]).save(files[-1])
    files[13].write_text("not a picture, whatever the suffix says\n")
    refused(lambda: tc.from_arrays(x, y, out=tmp_path / "o", images=files), tmp_path / "o",
             r"images\[13\] .*13.png is not a readable image \(UnidentifiedImageError")
