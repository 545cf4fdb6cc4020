"""The settings read from ``CURATOR_*`` environment variables (worker/settings.py): the
defaults, each variable's override, and the one-line error naming the variable that a bad
value gets. The expected values are the tool's settings as of 2026-11-28; a change here is
a change users see."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.pipeline.errors import InputError
from worker.settings import Settings, data_roots_of, load_settings

DEFAULTS = {
    "runs_root": Path("runs"), "data_root": Path("../shared/data"), "broker_url": "",
    "result_backend": "", "visibility_timeout": 21600, "stale_after_s": 20,
    "host": "127.0.0.1", "port": 8050, "auth_token": "", "device": "auto",
    "num_workers": None, "data_roots": (), "allowed_hosts": (), "max_body_bytes": 16777216,
    "server_threads": 8, "debug_hooks": False}


# Each variable set at once, and the settings they give.
OVERRIDES = {
    "RUNS_ROOT": "/srv/runs", "DATA_ROOT": "/srv/data", "DATA_ROOTS": "/a:/b::/c/",
    "BROKER_URL": "redis://r:6379/0", "RESULT_BACKEND": "redis://r:6379/1",
    "VISIBILITY_TIMEOUT": "7200", "STALE_AFTER": " 9 ", "HOST": "0.0.0.0", "PORT": "9000",
    "AUTH_TOKEN": "s3cret", "DEVICE": "cuda:1", "NUM_WORKERS": "3",
    "ALLOWED_HOSTS": " GPU-box.lan, ,Other ", "MAX_BODY_BYTES": "1000",
    "SERVER_THREADS": "4", "DEBUG_HOOKS": " Yes "}


OVERRIDDEN = {
    "runs_root": Path("/srv/runs"), "data_root": Path("/srv/data"),
    "broker_url": "redis://r:6379/0", "result_backend": "redis://r:6379/1",
    "visibility_timeout": 7200, "stale_after_s": 9, "host": "0.0.0.0", "port": 9000,
    "auth_token": "s3cret", "device": "cuda:1", "num_workers": 3,
    "data_roots": (Path("/a"), Path("/b"), Path("/c")), "allowed_hosts": ("gpu-box.lan", "other"),
    "max_body_bytes": 1000, "server_threads": 4, "debug_hooks": True}


def _fields(s: Settings) -> dict:
    return {name: getattr(s, name) for name in DEFAULTS}


def test_defaults(env):
    assert _fields(load_settings()) == DEFAULTS
    assert load_settings() == Settings()


def test_every_variable_overrides_its_setting(env):
    for name, value in OVERRIDES.items():
        env(name, value)
    assert _fields(load_settings()) == OVERRIDDEN


@pytest.mark.parametrize("name, value, field, expected", [
    ("PORT", "", "port", 8050),  # empty: the default
    ("PORT", "8050.0", "port", 8050),
    ("PORT", " 81 ", "port", 81),
    ("NUM_WORKERS", "", "num_workers", None),
    ("NUM_WORKERS", "0", "num_workers", 0),
    ("VISIBILITY_TIMEOUT", "1_000", "visibility_timeout", 1000),
    ("DEBUG_HOOKS", "", "debug_hooks", False),
    ("DEBUG_HOOKS", "OFF", "debug_hooks", False),
    ("DEBUG_HOOKS", "on", "debug_hooks", True),
    ("DATA_ROOTS", "", "data_roots", ()),
    ("ALLOWED_HOSTS", ",", "allowed_hosts", ()),
    ("HOST", "", "host", ""),
    ("RUNS_ROOT", "", "runs_root", Path(".")),
])
def test_values_at_the_edges(env, name, value, field, expected):
    env(name, value)
    assert getattr(load_settings(), field) == expected


@pytest.mark.parametrize("name, value, message", [
    ("PORT", "abc", "CURATOR_PORT must be a whole number from 1 to 65,535, got abc"),
    ("PORT", "0", "CURATOR_PORT must be a whole number from 1 to 65,535, got 0"),
    ("PORT", "70000", "CURATOR_PORT must be a whole number from 1 to 65,535, got 70000"),
    ("NUM_WORKERS", "-1", "CURATOR_NUM_WORKERS must be a whole number from 0 to 256, got -1"),
    ("NUM_WORKERS", "x", "CURATOR_NUM_WORKERS must be a whole number from 0 to 256, got x"),
    ("VISIBILITY_TIMEOUT", "abc", "CURATOR_VISIBILITY_TIMEOUT must be a whole number, got 'abc'"),
    ("VISIBILITY_TIMEOUT", "", "CURATOR_VISIBILITY_TIMEOUT must be a whole number, got ''"),
    ("VISIBILITY_TIMEOUT", "1.5", "CURATOR_VISIBILITY_TIMEOUT must be a whole number, got '1.5'"),
    ("STALE_AFTER", "x", "CURATOR_STALE_AFTER must be a whole number, got 'x'"),
    ("MAX_BODY_BYTES", "10MB", "CURATOR_MAX_BODY_BYTES must be a whole number, got '10MB'"),
    ("SERVER_THREADS", "many", "CURATOR_SERVER_THREADS must be a whole number, got 'many'"),
    ("DEBUG_HOOKS", "maybe", "CURATOR_DEBUG_HOOKS must be 1 or 0, got 'maybe'"),
    ("DEBUG_HOOKS", "2", "CURATOR_DEBUG_HOOKS must be 1 or 0, got '2'"),
])
def test_a_bad_value_is_one_line_naming_the_variable(env, name, value, message):
    env(name, value)
    with pytest.raises(InputError) as err:
        load_settings()
    assert str(err.value) == message


def test_settings_made_in_code_hold_what_they_are_given(env):
    """Only :func:`load_settings` reads the environment; ``Settings(...)`` (tests, the app
    factory) holds its arguments and the defaults, and ``changed`` (the CLI's --runs-root,
    --host, --port) changes only what it names, checked again."""
    env("PORT", "9999")
    env("BROKER_URL", "redis://elsewhere:6379/0")
    made = Settings(runs_root=Path("/r"))
    assert _fields(made) == {**DEFAULTS, "runs_root": Path("/r")}
    loaded = load_settings()
    moved = loaded.changed(runs_root=Path("/x"), port=8123)
    assert type(moved) is type(loaded)
    assert _fields(moved) == {**_fields(loaded), "runs_root": Path("/x"), "port": 8123}
    assert (loaded.port, loaded.runs_root) == (9999, Path("runs"))
    with pytest.raises(InputError, match="65,535"):
        loaded.changed(port=70000)


def test_data_roots(env, tmp_path):
    s = Settings(runs_root=tmp_path / "runs", data_root=tmp_path / "shared")
    assert data_roots_of(s) == ((tmp_path / "data").resolve(), (tmp_path / "shared").resolve())
    s = Settings(runs_root=tmp_path / "runs", data_roots=(tmp_path / "a",))
    assert data_roots_of(s) == ((tmp_path / "a").resolve(),)


@pytest.mark.parametrize(("name", "value"), [
    ("MAX_BODY_BYTES", "-1"), ("MAX_BODY_BYTES", "0"), ("SERVER_THREADS", "0"),
    ("STALE_AFTER", "0"), ("VISIBILITY_TIMEOUT", "-5")])
def test_a_count_that_cannot_work_is_refused_in_one_line(env, name, value):
    """A body limit of 0 would refuse every request and 0 threads would crash the server:
    each is one line naming the variable, before anything starts."""
    env(name, value)
    with pytest.raises(InputError, match=f"CURATOR_{name}: Input should be greater than"):
        load_settings()
