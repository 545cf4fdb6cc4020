"""bench/ui_latency.py runs end to end on a small run: every action it times is timed and
printed, so a change to the page that breaks one of its probes (the hover card, the triage
key's focus and ring, the grid's API) fails here rather than on the next benchmark."""

from __future__ import annotations

import re
import subprocess
import sys

from bench.browser import browser_marks
from tests.conftest import ROOT

pytestmark = browser_marks()
ACTIONS = ("eps change, server path", "eps change", "eps change, stored",
           "idle frame interval", "drag frame interval", "drag move → repaint", "hover image",
           "class switch", "class switch, drawn by the server", "overview (all classes)",
           "triage step", "triage step, scripted", "apply to all classes",
           "review list, N rows: sort", "review list, N rows: filter",
           "review list, N rows: plain sort (baseline)", "more like this (s → listing painted)")


def test_ui_latency_times_every_action(digits_run):
    r = subprocess.run(
        [sys.executable, "-m", "bench.ui_latency", "--run", str(digits_run.path),
         "--eps-changes", "2", "--hovers", "2", "--switches", "2", "--triage", "3",
         "--apply-all", "1", "--review", "2", "--drags", "1", "--similar", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    timed = {re.sub(r"\d+ rows", "N rows", m[0].strip()): int(m[1]) for m in re.findall(
        r"^(.+?)\s+n=\s*(\d+)\s+p50\s+[\d.]+ ms\s+p95\s+[\d.]+ ms$", r.stdout, re.M)}
    want = {"triage step": 3, "triage step, scripted": 3, "hover image": 2,
            "class switch": 2, "class switch, drawn by the server": 2,
            "apply to all classes": 1, "more like this (s → listing painted)": 2}
    assert set(timed) == set(ACTIONS), r.stdout
    assert all(timed[k] == n for k, n in want.items()), timed
    assert "triage step by Chrome's Event Timing" in r.stdout
    # The pointer rested on each class's row: the browser drew every one of them.
    assert "class switches drawn by the browser (no figure in the server's answer): 2 of 2" \
        in r.stdout, r.stdout
    assert timed["drag frame interval"] > 20 and timed["drag move → repaint"] > 0, timed
    assert "drag frame interval p95 / idle frame interval p95" in r.stdout
    assert re.search(r"^p95_ms=[\d.]+$", r.stdout, re.M), r.stdout
