"""``tc.pipeline`` (tsne_curator/pipeline_call.py) refuses a bad value, an unknown dataset
spec or keyword, or a missing dataset for a new folder in one line naming the keyword,
and writes nothing (the runs it makes are tested in tests/integration/api/)."""

from __future__ import annotations

import pytest

import tsne_curator as tc
from app.cli import main
from tests.refusals import one_line, refused
from worker.pipeline.errors import InputError


@pytest.mark.parametrize("options, word", [
    ({"inject_noise": 1.5}, "inject_noise (--inject-noise) must be a number ≥ 0 and < 1"),
    ({"seed": -1}, "seed (--seed) must be a whole number"),
    ({"seed": 1.5}, "seed (--seed)"),
    ({"seed": True}, "seed (--seed)"),
    ({"n_iter": "many"}, "n_iter (--n-iter)"),
    ({"eps": 0}, "eps (--eps) must be a number > 0"),
    ({"min_samples": 0}, "min_samples (--min-samples)"),
    ({"model": "vgg"}, "model (--model) must be one of pixels"),
    ({"noise_kind": "asymmetric"}, "noise_kind (--noise-kind)"),
    ({"duplicate_threshold": 2}, "duplicate_threshold (--duplicate-threshold)"),
    ({"thresholds": {"duplicate": 0}}, "duplicate_threshold (--duplicate-threshold)"),
    ({"thresholds": {"label": 0.5}}, "no finding kind 'label' with a cut"),
    ({"labels": 3}, "labels (--labels) must be a path"),
    ({"shards": 2}, "curator pipeline --shards"),
])
def test_a_bad_value_is_one_input_error_naming_the_keyword(tmp_path, options, word):
    out = tmp_path / "new"
    with pytest.raises(InputError) as exc:
        tc.pipeline("digits", out=out, **options)
    assert word in str(exc.value) and "\n" not in str(exc.value)
    assert not out.exists()


def test_a_bad_spec_or_unknown_keyword_touches_nothing(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(InputError, match="unknown dataset spec"):
        tc.pipeline("imagenet", out=out)
    with pytest.raises(TypeError) as exc:
        tc.pipeline("digits", out=out, inject_nosie=0.1)
    text = str(exc.value)
    assert "did you mean 'inject_noise'" in text and "valid keywords:" in text
    assert "perplexity" in text and "shards" not in text.split("valid keywords:")[1]
    assert not out.exists()


# -- the folder --------------------------------------------------------------------------
def test_no_dataset_for_a_new_folder_leaves_no_folder(tmp_path, capsys):
    out = tmp_path / "missing"
    refused(lambda: tc.pipeline(None, out=out), out, "is not a run yet: give --dataset")
    assert main(["pipeline", "--out", str(out)]) == 2
    assert "is not a run yet" in one_line(capsys.readouterr().err)
    assert not out.exists()
