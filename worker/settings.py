"""One typed settings object, read from ``CURATOR_*`` environment variables.

Defaults work on a laptop: everything local, bound to 127.0.0.1, no broker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _env(name: str, default: str) -> str:
    return os.environ.get(f"CURATOR_{name}", default)


@dataclass(frozen=True)
class Settings:
    """Process-wide settings; build with :func:`load_settings`."""

    runs_root: Path = field(default_factory=lambda: Path("runs"))
    data_root: Path = field(default_factory=lambda: Path("../shared/data"))
    broker_url: str = ""
    result_backend: str = ""
    # Seconds before Redis re-delivers a message whose worker vanished without acking it.
    # It must exceed the longest job; jobs of a dead worker are also recovered sooner by
    # the heartbeat check when a worker starts (see docs/jobs.md).
    visibility_timeout: int = 6 * 3600
    stale_after_s: int = 60
    host: str = "127.0.0.1"
    port: int = 8050
    auth_token: str = ""
    device: str = "auto"
    num_workers: int = 2


def load_settings() -> Settings:
    """Read settings from the environment (``CURATOR_RUNS_ROOT`` and friends)."""
    return Settings(
        runs_root=Path(_env("RUNS_ROOT", "runs")),
        data_root=Path(_env("DATA_ROOT", "../shared/data")),
        broker_url=_env("BROKER_URL", ""),
        result_backend=_env("RESULT_BACKEND", ""),
        visibility_timeout=int(_env("VISIBILITY_TIMEOUT", str(6 * 3600))),
        stale_after_s=int(_env("STALE_AFTER", "60")),
        host=_env("HOST", "127.0.0.1"),
        port=int(_env("PORT", "8050")),
        auth_token=_env("AUTH_TOKEN", ""),
        device=_env("DEVICE", "auto"),
        num_workers=int(_env("NUM_WORKERS", str(min(4, os.cpu_count() or 1)))),
    )
