"""The settings object: a pydantic-settings model, each field read from its ``CURATOR_*``
environment variable by :func:`from_environment`.

Imported by :mod:`worker.settings` only when settings are made or named, so that
``curator --help`` does not load pydantic (see that module).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticUseDefault
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

from worker.pipeline.errors import InputError
from worker.pipeline.number_params import PARAMS, check

# Settings whose range is a parameter's (worker.pipeline.number_params): field → parameter.
RANGED = {"port": "port", "num_workers": "workers"}
FLAG_ON = ("1", "true", "yes", "on")
FLAG_OFF = ("", "0", "false", "no", "off")


class Settings(BaseSettings):
    """Process-wide settings; :func:`worker.settings.load_settings` reads them from the
    environment, each field from ``CURATOR_<FIELD>`` (``stale_after_s``:
    ``CURATOR_STALE_AFTER``). Made in code, they hold what they are given and the defaults."""

    model_config = SettingsConfigDict(
        alias_generator=lambda name: f"CURATOR_{name.upper()}", case_sensitive=True,
        validate_by_name=True, validate_by_alias=True, frozen=True, extra="forbid")

    runs_root: Path = Path("runs")
    data_root: Path = Path("../shared/data")
    broker_url: str = ""
    result_backend: str = ""
    # Seconds before Redis re-delivers a message whose worker vanished without acking it.
    # It must exceed the longest job; jobs of a dead worker are recovered much sooner by
    # every live worker's periodic heartbeat check (see docs/jobs.md).
    visibility_timeout: int = Field(6 * 3600, ge=1)
    # A running job whose heartbeat is older than this is taken for dead. Jobs beat at
    # least three times per window (worker.jobs.execution.heartbeat_interval).
    stale_after_s: int = Field(20, alias="CURATOR_STALE_AFTER", ge=1)
    host: str = "127.0.0.1"
    port: int = 8050
    auth_token: str = ""
    device: str = "auto"
    # Decoding processes of an extraction; None: all cores but one (sources/decoding.py).
    num_workers: int | None = None
    # Folders the app's New-run form may read datasets, labels and weights from, given
    # ':'-separated; empty means the default (worker.settings.data_roots_of). NoDecode: the
    # variable is a path list, not JSON.
    data_roots: Annotated[tuple[Path, ...], NoDecode] = ()
    # Host names the server answers to besides the loopback ones (DNS rebinding defence),
    # given comma-separated.
    allowed_hosts: Annotated[tuple[str, ...], NoDecode] = ()
    # Largest request body the server reads; Dash callbacks send a few kB.
    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1)
    # Request threads of the production server (waitress); bench/server.py measured the
    # choice of server and this count (docs/benchmarks.md).
    server_threads: int = Field(8, ge=1, le=1024)
    # The Curate page's test and benchmark hooks (assets/curate_debug.js: window.curateDebug),
    # for browser tests and bench/ui_latency.py; off, the script is neither on the page nor
    # served. `curator serve --debug` turns them on too.
    debug_hooks: bool = False
    # Megabytes a run's filesystem must keep free after a version is written
    # (worker/pipeline/curation/versions.py refuses to save one that would leave less).
    min_free_mb: int = Field(64, ge=0)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: Any, env_settings: Any,
                                   dotenv_settings: Any, file_secret_settings: Any) -> tuple:
        # Only the values given: from_environment reads the variables itself, so that
        # settings made in code (tests, the app factory, :meth:`changed`) never pick up
        # a variable that happens to be set.
        return (init_settings,)

    def changed(self, **values: Any) -> Settings:
        """These settings with ``values`` changed (``curator serve --port``, a run's own
        runs root), every field checked again as when made in code."""
        return _checked(lambda: type(self)(
            **{**{name: getattr(self, name) for name in type(self).model_fields}, **values}))

    # Text is what the environment gives; values given in code are typed already and go to
    # pydantic's own checks (the ranged ones to their parameter's too).
    @field_validator("visibility_timeout", "stale_after_s", "max_body_bytes",
                     "server_threads", "min_free_mb", mode="before")
    @classmethod
    def _whole_number(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return int(value)  # int(), not pydantic's: " 9 " and "1_000" as ever, "1.0" not
        except ValueError:
            raise InputError(f"{_variable(info)} must be a whole number, got "
                             f"{value!r}") from None

    @field_validator(*RANGED, mode="before")
    @classmethod
    def _in_range(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return value
        if isinstance(value, str) and not value:
            raise PydanticUseDefault  # set but empty: the default
        param = RANGED[info.field_name]
        try:
            return int(check(param, value))
        except InputError as exc:
            raise InputError(str(exc).replace(PARAMS[param].flag, _variable(info), 1)) from None

    @field_validator("debug_hooks", mode="before")
    @classmethod
    def _flag(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip().lower()
        if text not in FLAG_ON + FLAG_OFF:
            raise InputError(f"{_variable(info)} must be 1 or 0, got {text!r}")
        return text in FLAG_ON

    @field_validator("data_roots", mode="before")
    @classmethod
    def _path_list(cls, value: Any) -> Any:
        return tuple(Path(p) for p in value.split(os.pathsep) if p) \
            if isinstance(value, str) else value

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _host_list(cls, value: Any) -> Any:
        return tuple(h.strip().lower() for h in value.split(",") if h.strip()) \
            if isinstance(value, str) else value


def _variable(info: ValidationInfo) -> str:
    """The environment variable of the field being checked."""
    return Settings.model_fields[info.field_name].alias


def from_environment() -> Settings:
    """The settings from the ``CURATOR_*`` variables, the defaults for those not set.

    Raises
    ------
    InputError
        One line naming the variable whose value does not fit.
    """
    return _checked(lambda: Settings(**EnvSettingsSource(Settings)()))


def _checked(make: Callable[[], Settings]) -> Settings:
    """``make()``, with a value that does not fit as one :class:`InputError` line."""
    try:
        return make()
    except ValidationError as exc:
        err = exc.errors()[0]
        cause = err.get("ctx", {}).get("error")
        if isinstance(cause, InputError):
            raise InputError(str(cause)) from None
        raise InputError(f"{err['loc'][0]}: {err['msg']}") from None
