"""The browser tests' own helper: a server it started is stopped when the browser cannot
start, so a failed browser start never leaves a ``curator serve`` running."""

from __future__ import annotations

import pytest

from bench import browser


def test_a_failed_browser_start_stops_the_server(tmp_path, monkeypatch):
    started = []
    real_server = browser.Server

    def server(root):
        srv = real_server(root)
        started.append(srv)
        return srv

    def no_browser(*args, **kwargs):
        raise RuntimeError("no browser here")

    monkeypatch.setattr(browser, "Server", server)
    monkeypatch.setattr(browser, "chrome", no_browser)
    (tmp_path / "runs").mkdir()
    with pytest.raises(RuntimeError, match="no browser here"), \
            browser.served(tmp_path / "runs"):
        pass
    assert len(started) == 1
    assert started[0].proc.poll() is not None  # the server's process has exited
