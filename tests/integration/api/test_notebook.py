"""The example notebook, executed headless as a user's Jupyter would run it:
``examples/quickstart.ipynb`` in a real IPython kernel of this venv (nbclient, ipykernel),
every cell, on the digits demo and the CIFAR-10 sample in the shared data folder."""

from __future__ import annotations

import json

import nbformat
import pytest
from jupyter_client import KernelManager
from nbclient import NotebookClient

from tests.conftest import ROOT
from tests.integration.conftest import SHARED

NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
pytestmark = pytest.mark.slow


def _outputs(cell) -> str:
    """Everything a cell showed, as one text (its plain, HTML and Plotly outputs)."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        for mime, value in out.get("data", {}).items():
            parts.append(mime)
            parts.append(value if isinstance(value, str) else json.dumps(value)[:2000])
    return "\n".join(parts)


def test_the_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def test_the_quickstart_notebook_runs_every_cell(tmp_path, monkeypatch):
    """Without the shared data the CIFAR part prints that it is skipped; the rest runs."""
    cifar = (SHARED / "cifar10-jpeg-mini.tar.gz").is_file()
    # The kernel inherits this environment: runs go to tmp_path, data comes from SHARED.
    monkeypatch.setenv("CURATOR_NOTEBOOK_OUT", str(tmp_path))
    monkeypatch.setenv("CURATOR_SHARED_DATA", str(SHARED))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # Any error in any cell raises CellExecutionError, naming the cell and the traceback.
    # IPC: the kernel's sockets are files in tmp_path, not TCP ports.
    km = KernelManager(kernel_name="python3", transport="ipc",
                       connection_file=str(tmp_path / "kernel.json"))
    NotebookClient(nb, km=km, timeout=600,
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    shown = {c.source.splitlines()[0]: _outputs(c) for c in nb.cells
             if c.cell_type == "code"}

    def of(first_line: str) -> str:
        return shown[next(k for k in shown if k.startswith(first_line))]

    assert "tsne_curator.Run 'nb-digits': 1,797 samples" in of("run = tc.pipeline")
    assert "feature quality" in of("run = tc.pipeline")  # the HTML summary
    assert "label" in of("df = run.findings()")
    assert "application/vnd.plotly.v1+json" in of('run.map("3")')
    undone = of("first = sure")
    assert "drop 5 sample(s)" in undone and "kept" in undone  # the undo; the relabel stays
    assert "nb-v1" in of("manifest, folder")
    assert "not converged" in of("summary, verdict")
    if cifar:
        assert "application/vnd.plotly.v1+json" in of("if cifar is not None")
        assert (tmp_path / "nb-cifar" / "findings").is_dir()
    else:
        assert "is missing: this part is skipped" in of("archive = DATA")
