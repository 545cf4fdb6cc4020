"""A version's outcome as stored (worker/pipeline/curation/versions.py): compact blobs that
read back to the same arrays, digests that tell equal outcomes, and the names versions may
have."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from worker.pipeline.curation.versions import (
    DTYPES,
    Outcome,
    check_version_name,
    counts_of,
    decided_by,
    decode,
    encode,
    train_key,
)
from worker.pipeline.errors import InputError


def _outcome(n: int = 1000, seed: int = 0) -> Outcome:
    rng = np.random.default_rng(seed)
    kept = rng.random(n) > 0.1
    return Outcome(kept, rng.integers(0, 10, n).astype(np.int32),
                   np.where(kept, np.where(rng.random(n) > 0.95, "proposed", "kept"), "dropped"),
                   rng.choice(["cluster", "noise", "override_keep", "relabel", "duplicate"], n),
                   rng.integers(0, 8, n).astype(np.uint64), ["label", "duplicate", "outlier"],
                   rng.choice(["", "", "", "ana", "ben"], n))


def test_an_outcome_reads_back_from_its_blobs():
    out = _outcome()
    given = out.labels.copy()
    given[:7] = (given[:7] + 1) % 10
    stored = encode(out, given)
    back = decode(stored)
    for field in ("kept", "labels", "decision", "reason", "findings", "decided_by"):
        assert np.array_equal(getattr(back, field), getattr(out, field)), field
    assert back.kinds == out.kinds and back.finding_names()[:3] == out.finding_names()[:3]
    assert stored["counts"]["relabelled"] == 7 == counts_of(out, given)["relabelled"]
    assert stored["counts"]["decisions"]["dropped"] == int((~out.kept).sum())
    assert all(len(zlib.decompress(stored[c])) == len(out.kept) * np.dtype(t).itemsize
               for c, t in DTYPES.items())
    assert stored["tables"]["decided_by"] == ["", "ana", "ben"]


def test_the_digests_tell_equal_outcomes_apart_from_others():
    a, b = _outcome(seed=1), _outcome(seed=1)
    assert encode(a, a.labels)["outcome_key"] == encode(b, b.labels)["outcome_key"]
    who = b.decided_by.copy()
    who[0] = "eve"
    other = Outcome(b.kept, b.labels, b.decision, b.reason, b.findings, b.kinds, who)
    assert encode(other, b.labels)["outcome_key"] != encode(a, a.labels)["outcome_key"]
    assert encode(other, b.labels)["train_key"] == encode(a, a.labels)["train_key"]
    # A dropped sample's label is not trained with: the same training subset.
    labels = a.labels.copy()
    labels[np.flatnonzero(~a.kept)[0]] += 1
    assert train_key(a.kept, labels) == train_key(a.kept, a.labels)
    labels[np.flatnonzero(a.kept)[0]] += 1
    assert train_key(a.kept, labels) != train_key(a.kept, a.labels)


def test_the_last_author_of_a_sample_is_its_newer_rows():
    state = {"overrides": {"3": ["drop", "ana", "2026-11-02"], "4": ["keep", "ana", "2026-11-01"]},
             "relabels": {"3": [1, "ben", "2026-11-01"], "4": [2, "ben", "2026-11-03"]}}
    assert decided_by(state) == {3: "ana", 4: "ben"}


@pytest.mark.parametrize("name", ["", "../up", "a/b", ".hidden", "x" * 101, "current", 3])
def test_a_version_name_follows_the_export_names_rule(name):
    with pytest.raises(InputError, match="version name") as e:
        check_version_name(name)
    assert "\n" not in str(e.value)
