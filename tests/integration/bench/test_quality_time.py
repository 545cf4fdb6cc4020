"""bench/quality_time.py on a real run: the findings step and the image-quality kinds
alone, each timed, the kinds a part of the step."""

from __future__ import annotations

from bench.quality_time import measure, quality_kinds
from worker.pipeline.findings.step import stored_thresholds


def test_the_quality_kinds_are_timed_beside_the_whole_findings_step(fresh_run):
    steps, quality = measure(fresh_run.path, 2)
    assert len(steps) == len(quality) == 2
    assert all(s > 0 for s in steps) and all(q > 0 for q in quality)
    # The step computes the eight kinds and every other kind: it takes longer.
    assert min(quality) < min(steps)
    assert {k.name for k in quality_kinds()} == {
        "dark", "bright", "blurry", "low_info", "odd_size", "grey", "overexposed", "border"}
    record = fresh_run.step("findings")
    assert record["status"] == "done" and "grey" in record["kinds"]
    assert stored_thresholds(fresh_run) == {}  # the step ran with the run's own cuts
