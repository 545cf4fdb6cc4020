"""``tc.serve`` (tsne_curator/serving.py) starts what ``curator serve`` starts, and refuses
a bad port or a file given as the runs root in one line before it prints anything."""

from __future__ import annotations

import socket

import pytest

import tsne_curator as tc
from app.cli import main
from tests.refusals import one_line, refused
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


def test_serve_refuses_a_file_as_runs_root_before_printing(tmp_path, capsys):
    file = tmp_path / "runs.txt"
    file.write_text("")
    refused(lambda: tc.serve(runs_root=file), None,
             "runs root .*runs.txt is a file: give a folder of runs")
    assert list(tmp_path.iterdir()) == [file] and file.read_text() == ""  # nothing made
    assert capsys.readouterr().out == ""
    assert main(["serve", "--runs-root", str(file), "--port", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "is a file" in one_line(captured.err)
