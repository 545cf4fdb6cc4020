"""The New-run form (app/pages/runs.py) refuses a features file in the same words as the
check behind ``tc.from_arrays`` and ``curator pipeline``: one check, three doors."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tsne_curator as tc
from tests.digits_arrays import digits_all, features_file


def _features(n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    x, y, _ = digits_all()
    return x[:n].copy(), y[:n].copy()


def test_the_new_run_form_refuses_in_the_same_words(tmp_path):
    from app.server import create_app
    from worker.pipeline.sources.labels import check_features_file
    from worker.settings import Settings

    x, y = _features(60)
    feats, labels = features_file(tmp_path / "data", x * 1e20, y)
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
