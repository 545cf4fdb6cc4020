"""The data path to the network (features/datapath.py): the host hands over uint8 only,
and JPEGs decoded by the device's decoder give the features of the host's decode."""

from __future__ import annotations

from worker.pipeline.sources.decoding import decode_workers, host_cores


def test_decoding_uses_all_cores_but_one():
    assert decode_workers() == max(1, host_cores() - 1)
    assert decode_workers(0) == 0 and decode_workers(3) == 3
