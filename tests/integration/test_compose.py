"""The compose file's app service: its command, ``curator serve``, runs on the production
server (waitress), and the service's healthcheck passes against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT

yaml = pytest.importorskip("yaml")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_app_service_serves_on_the_production_server_and_passes_its_healthcheck(
        compose, tmp_path):
    """The app service's own command (on a free loopback port) runs on waitress, not
    Flask's development server, and the service's healthcheck command passes against it."""
    import subprocess
    import sys
    import urllib.request

    from bench.browser import Server

    command = compose["services"]["app"]["command"]
    assert command[:2] == ["curator", "serve"]
    srv = Server(tmp_path / "runs")  # curator serve, as that command runs it
    try:
        with urllib.request.urlopen(srv.url + "/healthz", timeout=10) as r:
            assert r.headers["Server"] == "tsne-curator"  # waitress's ident (app/server.py)
        check = compose["services"]["app"]["healthcheck"]["test"]
        assert check[:2] == ["CMD", "python"]
        code = check[-1].replace("8050", str(srv.port))
        assert subprocess.run([sys.executable, *check[2:-1], code], timeout=30).returncode == 0
    finally:
        srv.stop()
    log = Path(srv.log.name).read_text()
    assert "development server" not in log, log
