"""The feature-quality gauge where it shows: ``curator evaluate`` and the pages, on a copy
of the digits run."""

from __future__ import annotations

import json

from tests.integration.conftest import curator
from worker.pipeline.curation.gauge import STRONG_FROM


def test_evaluate_and_the_pages_show_the_gauge(fresh_run):
    """Digits pixels separate the classes: strong, in the CLI's text and JSON, in run.json,
    and as a badge on the Runs and Curate pages (no advice line when strong)."""
    from app.layout import feature_advice, feature_badges

    r = curator("evaluate", str(fresh_run.path), "--no-cleanlab")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("feature quality"))
    assert "(strong)" in line
    r = curator("evaluate", str(fresh_run.path), "--no-cleanlab", "--json")
    gauge = json.loads(r.stdout)["features"]["gauge"]
    assert gauge["level"] == "strong" and gauge["value"] >= STRONG_FROM
    meta = fresh_run.read_meta()
    assert meta["steps"]["evidence"]["gauge"] == gauge["value"]
    badges = feature_badges(meta)
    assert [b.children for b in badges] == [f"features {gauge['value']:.2f} · strong"]
    assert feature_advice(meta) is None
    weak = {"steps": {"extract": {"model": "resnet18", "pretrained": False},
                      "evidence": {"gauge": 0.3}}}
    assert [b.children for b in feature_badges(weak)] == ["random weights",
                                                           "features 0.30 · weak"]
    assert "near chance" in feature_advice(weak).children
