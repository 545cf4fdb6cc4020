"""The layers docs/architecture.md states are import-linter contracts (``.importlinter``),
which ``make test`` checks with ``lint-imports``. Here, on a copy of the tree, each kind of
import that runs from a lower layer up breaks its contract, and the tree as it is keeps
them all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT = str(Path(sys.executable).parent / "lint-imports")


PACKAGES = ("app", "worker", "tsne_curator", "bench", "tests")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tree")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, out / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", out)
    return out


def _lint(tree: Path) -> tuple[int, str]:
    """``lint-imports`` on ``tree`` (its packages first on the path); the exit status and
    the report with its line wrapping undone."""
    r = subprocess.run([LINT, "--no-cache"], cwd=tree, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tree)}, timeout=120)
    return r.returncode, " ".join((r.stdout + r.stderr).split())


def test_the_tree_keeps_every_contract(tree):
    code, report = _lint(tree)
    assert code == 0 and "0 broken" in report, report


@pytest.mark.parametrize(("probe", "text", "broken"), [
    # The worker never imports the app (curator serve lives in app/cli.py).
    ("worker/cli/probe_up.py", "from app import startup\n",
     "worker is not allowed to import app"),
    # Storage is the bottom of the pipeline, counting imports inside functions.
    ("worker/pipeline/storage/probe_up.py",
     "def f():\n    from worker.pipeline.map import dbscan\n    return dbscan\n",
     "worker.pipeline.storage is not allowed to import worker.pipeline.map"),
    # A stage never imports a later one.
    ("worker/pipeline/findings/probe_up.py", "from worker.pipeline.curation import snapshot\n",
     "worker.pipeline.findings is not allowed to import worker.pipeline.curation"),
    ("worker/pipeline/probe_up.py", "from worker.jobs import registry\n",
     "worker.pipeline is not allowed to import worker.jobs"),
    ("app/probe_up.py", "import tsne_curator\n", "app is not allowed to import tsne_curator"),
    ("bench/probe_up.py", "from tests import conftest\n",
     "bench is not allowed to import tests"),
])
def test_an_import_from_a_lower_layer_up_breaks_a_contract(tree, probe, text, broken):
    path = tree / probe
    path.write_text(text)
    try:
        code, report = _lint(tree)
    finally:
        path.unlink()
    assert code == 1 and broken in report, report
    assert "probe_up" in report  # the report names the offending import
