"""The API neither imports the CLI nor reads a parser: tsne_curator/ imports nothing of
worker/cli, nothing reads argparse's private state, and importing ``tsne_curator`` in a
fresh Python process loads no ``worker.cli`` module."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.conftest import ROOT


def test_the_api_neither_imports_the_cli_nor_reads_a_parser():
    """tsne_curator/ imports nothing of worker/cli (counting imports inside functions),
    and nothing in app/, worker/ or tsne_curator/ reads argparse's private parser state."""
    bad = []
    for path in sorted((ROOT / "tsne_curator").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.name}: {n}" for n in names if n.startswith("worker.cli")]
    for package in ("app", "worker", "tsne_curator"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            bad += [f"{path.relative_to(ROOT)}: {word}" for word in
                    ("._actions", "_SubParsersAction", "_StoreTrueAction", "_HelpAction")
                    if word in text]
    assert bad == []
    code = ("import sys, tsne_curator; "
            "print(sorted(m for m in sys.modules if m.startswith('worker.cli')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
