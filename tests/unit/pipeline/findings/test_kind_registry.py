"""The findings registry (worker/pipeline/findings/kind_registry.py): a name registered
twice, or one that is not a short word, is refused."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest

from worker.pipeline.findings import (
    DROP,
    REGISTRY,
    REVIEW,
    FindingKind,
    FindingTable,
    register,
    unregister,
)

TOY_EVERY = 7  # the toy kind marks every 7th sample


# --------------------------------------------------------------------------- toy kind
def _toy_kind(name: str, decision: str) -> type[FindingKind]:
    """A finding kind defined in the test: marks every 7th sample with a score."""

    class Toy(FindingKind):
        title = "toy finding"
        columns = ("toy_score",)
        advice = "a kind registered by a test"
        calls = 0

        def compute(self, ctx) -> FindingTable:  # noqa: ANN001 - a FindingContext
            type(self).calls += 1
            n = len(ctx.samples)
            idx = np.arange(n)
            issue = idx % TOY_EVERY == 0
            score = np.where(issue, 0.5 + (idx % 5) / 10.0, 0.0).astype(np.float32)
            return FindingTable(issue, score, np.full(n, -1, np.int64),
                                {"residue": (idx % TOY_EVERY).astype(np.int64)},
                                {"every": TOY_EVERY})

        def column_values(self, table: FindingTable, view) -> dict[str, list[str]]:  # noqa: ANN001
            return {"toy_score": [f"{s:.2f}" if m else "" for s, m in
                                  zip(table.score.tolist(), table.issue.tolist(), strict=True)]}

        def why(self, table: FindingTable, i: int, view) -> str:  # noqa: ANN001
            return f"toy: sample {i} is a multiple of {TOY_EVERY}"

    Toy.name, Toy.decision = name, decision
    return Toy


@contextlib.contextmanager
def registered(cls: type[FindingKind]) -> Iterator[FindingKind]:
    register(cls)
    try:
        yield cls
    finally:
        unregister(cls.name)


def test_registering_a_name_twice_is_refused():
    with registered(_toy_kind("toy", DROP)), pytest.raises(ValueError, match="already"):
        register(_toy_kind("toy", REVIEW))


def test_a_name_that_is_no_short_word_is_refused():
    """A kind's name is a decision reason, stored in fixed-width strings, and a column
    value: 'near_duplicate' (14 characters, cleanlab's name) would be cut, so registering
    it is refused, as is a name with capitals or spaces."""
    for name in ("near_duplicate", "Toy", "two words", "9lives"):
        with pytest.raises(ValueError, match="at most 13 lower-case"):
            register(_toy_kind(name, DROP))
        assert name not in REGISTRY
