"""docker-compose.yml and the Dockerfile agree with what the code reads (no Docker engine
runs here)."""

from __future__ import annotations

import pytest

from app.cli import build_parser
from tests.conftest import ROOT
from worker.settings import load_settings

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


def _dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuations joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in lines]


def test_dockerfile_copies_what_the_package_needs_and_pins_torch_as_the_project():
    import re
    import tomllib

    steps = _dockerfile()
    copied = {src for op, args in steps if op == "COPY" for src in args.split()[:-1]}
    assert all((ROOT / src).exists() for src in copied), copied
    # Every package the project installs, and the browser assets, are in the image.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"][
        "include"]}
    assert packages | {"assets", "pyproject.toml"} <= copied
    run = " ".join(args for op, args in steps if op == "RUN")
    assert "pip install ." in run
    pins = dict(re.findall(r"(torch|torchvision)==([\d.]+)", run))
    deps = dict(re.findall(r"\b(torch|torchvision)==([\d.]+)",
                           " ".join(project["project"]["dependencies"])))
    assert pins == deps == {"torch": "2.14.1", "torchvision": "0.29.1"}


def test_dockerfile_runs_the_app_unprivileged_on_the_composed_port(compose):
    import json

    steps = _dockerfile()
    assert dict(steps)["USER"] not in ("root", "0")
    env = dict(kv.split("=", 1) for op, args in steps if op == "ENV" for kv in args.split())
    exposed = [args for op, args in steps if op == "EXPOSE"]
    assert exposed == [env["CURATOR_PORT"]]
    assert compose["services"]["app"]["ports"] == [f"127.0.0.1:{exposed[0]}:{exposed[0]}"]
    cmd = json.loads(dict(steps)["CMD"])
    assert build_parser().parse_args(cmd[1:]).command == "serve" and cmd[0] == "curator"
    # The app inside listens on all interfaces only because compose publishes on loopback.
    assert env["CURATOR_HOST"] == "0.0.0.0"
