"""``tc.serve`` (tsne_curator/serving.py) starts what ``curator serve`` starts, and refuses
a bad port or a file given as the runs root in one line before it prints anything."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import tsne_curator as tc
from app.cli import main
from worker.pipeline.errors import InputError


def test_serve_starts_what_curator_serve_starts(tmp_path, monkeypatch, capsys):
    import app.server

    started = []
    monkeypatch.setattr(app.server, "serve", lambda s, debug: started.append((s, debug)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tc.serve(runs_root=tmp_path, port=port)
    (settings_, debug), = started
    assert (settings_.runs_root, settings_.port, debug) == (tmp_path, port, False)
    assert f"127.0.0.1:{port}" in capsys.readouterr().out
    for bad in (0, 70_000, True, "http"):
        with pytest.raises(InputError, match=r"port \(--port\)"):
            tc.serve(port=bad)
    assert len(started) == 1


def _one_line(text: str) -> str:
    """The only line of a command's stderr (progress bars left out), an ``error:``."""
    lines = [ln for ln in text.splitlines() if ln.strip() and "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error:"), text
    assert "Traceback" not in text
    return lines[0]


def _refused(call, out: Path | None, match: str) -> str:  # noqa: ANN001 - no arguments
    """``call()`` raises one InputError line matching ``match`` and ``out`` (the folder
    it would have made; None: the caller checks what else it could have written) stays
    absent."""
    with pytest.raises(tc.InputError, match=match) as e:
        call()
    assert "\n" not in str(e.value)
    if out is not None:
        assert not out.exists(), sorted(p.name for p in out.rglob("*"))
    return str(e.value)


def test_serve_refuses_a_file_as_runs_root_before_printing(tmp_path, capsys):
    file = tmp_path / "runs.txt"
    file.write_text("")
    _refused(lambda: tc.serve(runs_root=file), None,
             "runs root .*runs.txt is a file: give a folder of runs")
    assert list(tmp_path.iterdir()) == [file] and file.read_text() == ""  # nothing made
    assert capsys.readouterr().out == ""
    assert main(["serve", "--runs-root", str(file), "--port", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "is a file" in _one_line(captured.err)
