"""The New-run form (app/pages/runs.py) refuses a features file in the same words as the
check behind ``tc.from_arrays`` and ``curator pipeline``: one check, three doors."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

import tsne_curator as tc


@functools.cache
def _digits_all() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digits as (1797, 64) float64 features, labels and uint8 8×8 images."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data, d.target, np.round(d.images * (255 / 16)).astype(np.uint8)


def _features(n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    x, y, _ = _digits_all()
    return x[:n].copy(), y[:n].copy()


def _features_file(folder: Path, x: np.ndarray, y: np.ndarray) -> tuple[Path, Path]:
    """``x`` as a float32 .npy file and ``y`` as its labels CSV, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "f.npy", x.astype(np.float32))
    (folder / "l.csv").write_text("label\n" + "".join(f"{v}\n" for v in y))
    return folder / "f.npy", folder / "l.csv"


def test_the_new_run_form_refuses_in_the_same_words(tmp_path):
    from app.server import create_app
    from worker.pipeline.sources.labels import check_features_file
    from worker.settings import Settings

    x, y = _features(60)
    feats, labels = _features_file(tmp_path / "data", x * 1e20, y)
    with pytest.raises(tc.InputError) as direct:
        check_features_file(feats)
    app = create_app(Settings(runs_root=tmp_path / "runs", data_roots=(tmp_path / "data",)))
    page = sys.modules["pages.runs"]  # as Dash imported the page
    with app.server.test_request_context("/"), pytest.raises(tc.InputError) as form:
        page.new_run_params(page.RunForm("new", f"features:{feats}", "train", str(labels),
                                         "label", None, 0, None, None, 0, 30))
    assert str(form.value) == str(direct.value)
    assert str(form.value).startswith("features file f.npy row 0 has values up to 1.5e+21")
    assert not (tmp_path / "runs" / "new").exists()
