"""Training subset names (worker/train/subsets.py): ``pruned@F``, ``random@F`` and the
rest parse to one canonical form, a bad name is one line naming the forms, and any text is
a subset or one InputError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.pipeline.errors import InputError
from worker.train.subsets import parse_subset, subset_name


# -- names ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, kind, fraction, method, canonical", [
    ("full", "full", None, None, "full"),
    (" corrected ", "corrected", None, None, "corrected"),
    ("pruned@0.5", "pruned", 0.5, "coverage", "pruned@0.5"),
    ("pruned@.50", "pruned", 0.5, "coverage", "pruned@0.5"),
    ("pruned-coverage@0.3", "pruned", 0.3, "coverage", "pruned@0.3"),
    ("pruned-easy@0.25", "pruned", 0.25, "easy", "pruned-easy@0.25"),
    ("random@0.7", "random", 0.7, None, "random@0.7"),
])
def test_subset_names_parse_to_one_canonical_form(text, kind, fraction, method, canonical):
    name = parse_subset(text)
    assert (name.kind, name.fraction, name.method, name.text) == (kind, fraction, method,
                                                                 canonical)
    assert subset_name(canonical) == canonical


@pytest.mark.parametrize("text, word", [
    ("pruned@1", "between 0 and 1"), ("pruned@0", "between 0 and 1"),
    ("random@half", "between 0 and 1"), ("pruned-best@0.5", "unknown subset"),
    ("pruned", "unknown subset"), ("filtered@0.5", "unknown subset"), ("", "unknown subset"),
])
def test_a_bad_subset_name_is_one_line_naming_the_forms(text, word):
    with pytest.raises(InputError, match=word) as err:
        parse_subset(text)
    assert "\n" not in str(err.value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_any_text_is_a_subset_or_one_input_error(text):
    try:
        name = parse_subset(text)
    except InputError:
        return
    assert parse_subset(name.text) == name


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1 - 1e-6), st.sampled_from(["pruned", "random"]))
def test_a_fraction_survives_its_canonical_name(f, head):
    name = parse_subset(f"{head}@{f!r}")
    assert name.fraction == pytest.approx(f, abs=1e-6)
    assert parse_subset(name.text).fraction == name.fraction
