"""Decoding on the host (worker/pipeline/sources/decoding.py): it uses every core but
one."""

from __future__ import annotations

from worker.pipeline.sources.decoding import decode_workers, host_cores


def test_decoding_uses_all_cores_but_one():
    assert decode_workers() == max(1, host_cores() - 1)
    assert decode_workers(0) == 0 and decode_workers(3) == 3
