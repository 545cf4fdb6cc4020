"""The run directory (worker/pipeline/storage/rundir.py): rows written through the file
make the same .npy, and a step record that is not what a run writes reads as not run."""

from __future__ import annotations

import numpy as np
import pytest

from worker.pipeline.storage.rundir import NpyRows, step_record


def test_rows_written_through_the_file_make_the_same_npy(tmp_path):
    x = np.random.default_rng(0).integers(0, 255, (10, 4, 4, 3), dtype=np.uint8)
    with NpyRows(tmp_path / "a.npy", x.shape, np.uint8) as out:
        out.write(x[:3])
        out.write(x[3:])
    assert np.array_equal(np.load(tmp_path / "a.npy"), x)
    with pytest.raises(ValueError, match="wrote 3 rows of 10"), \
            NpyRows(tmp_path / "b.npy", x.shape, np.uint8) as out:
        out.write(x[:3])


@pytest.mark.parametrize("meta", [None, [], {}, {"steps": []}, {"steps": {"embed": 3}}])
def test_a_record_not_as_a_run_writes_it_reads_as_not_run(meta):
    assert step_record(meta, "embed") == {}
