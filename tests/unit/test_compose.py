"""docker-compose.yml agrees with what the code reads (no Docker engine runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.cli import build_parser
from worker.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
yaml = pytest.importorskip("yaml")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_services_images_and_healthchecks(compose):
    services = compose["services"]
    assert set(services) == {"redis", "app", "worker"}
    assert services["redis"]["image"].startswith("redis:")
    assert services["app"]["image"] == services["worker"]["image"] == "tsne-curator:latest"
    assert all("healthcheck" in s for s in services.values())
    assert (ROOT / services["app"]["build"]["context"] / "Dockerfile").is_file()
    assert services["app"]["ports"] == ["127.0.0.1:8050:8050"]  # published on loopback only
    gpu = services["worker"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["capabilities"] == ["gpu"] and gpu["driver"] == "nvidia"


def test_commands_are_real_cli_commands(compose):
    parser = build_parser()
    for name in ("app", "worker"):
        command = compose["services"][name]["command"]
        assert command[0] == "curator"
        args = parser.parse_args(command[1:])  # raises SystemExit if the CLI disagrees
        assert args.command == {"app": "serve", "worker": "worker"}[name]


def test_environment_matches_settings(compose, monkeypatch):
    for name in ("app", "worker"):
        env = compose["services"][name]["environment"]
        assert env["CURATOR_BROKER_URL"] == "redis://redis:6379/0"
        for key, value in env.items():
            if value and "${" not in value:
                monkeypatch.setenv(key, value)
        settings = load_settings()
        assert str(settings.runs_root) == env["CURATOR_RUNS_ROOT"]
        assert settings.broker_url == env["CURATOR_BROKER_URL"]
        mounts = {v.split(":")[1]: v.split(":")[0] for v in compose["services"][name]["volumes"]}
        assert mounts[env["CURATOR_RUNS_ROOT"]] == "runs"  # the shared runs volume
        assert env["CURATOR_DATA_ROOT"] in mounts
    assert "runs" in compose["volumes"]


def test_dockerfile_installs_the_project():
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install ." in text and "VARIANT" in text and 'CMD ["curator", "serve"]' in text
