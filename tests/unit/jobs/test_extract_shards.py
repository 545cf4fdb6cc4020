"""How a shared-out extraction splits the images (worker.jobs.extract_shards): ranges that
cover every image once, each starting on a batch boundary (so each shard sees the batches
a single-worker run sees), and when it shares out by itself."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.jobs.extract_shards import plan, shard_count
from worker.settings import AUTO_SHARD_MIN, SHARDS_PER_WORKER


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 200_000), batch=st.integers(1, 1024), shards=st.integers(1, 64))
def test_ranges_cover_every_image_once_on_batch_boundaries(n, batch, shards):
    ranges = plan(n, batch, shards)
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a < b for a, b in ranges)
    assert all(b == a2 for (_, b), (a2, _) in zip(ranges, ranges[1:], strict=False))
    assert all(a % batch == 0 for a, _ in ranges)
    assert len(ranges) == min(shards, -(-n // batch))
    sizes = [-(-(b - a) // batch) for a, b in ranges]  # whole batches per shard
    assert max(sizes) - min(sizes) <= 1


def test_the_test_runs_split():
    assert plan(2000, 64, 4) == [(0, 512), (512, 1024), (1024, 1536), (1536, 2000)]
    assert plan(50_000, 256, 4) == [(0, 12544), (12544, 25088), (25088, 37632),
                                    (37632, 50000)]
    assert plan(100, 256, 8) == [(0, 100)]


@pytest.mark.parametrize("requested, n, workers, expected", [
    (4, 100, 1, 4),  # asked for: as asked, even for a small run
    (0, 10**6, 8, 0),  # --shards 0: one job
    (None, AUTO_SHARD_MIN - 1, 8, 0),  # small: one job
    (None, AUTO_SHARD_MIN, 1, 0),  # one worker: nothing to share with
    (None, AUTO_SHARD_MIN, 3, 3 * SHARDS_PER_WORKER),
])
def test_shard_count(requested, n, workers, expected):
    assert shard_count(requested, n, workers) == expected
