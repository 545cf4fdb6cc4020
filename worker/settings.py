"""One typed settings object, read from ``CURATOR_*`` environment variables.

Defaults work on a laptop: everything local, bound to 127.0.0.1, no broker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from worker.pipeline.errors import InputError
from worker.pipeline.ranges import PARAMS, check

# Extraction is shared out by itself (worker.extract_shards), with a broker and at least
# two workers on the gpu queue, from this many images: SHARDS_PER_WORKER shards per worker.
# bench/shards.py, two workers against one (docs/benchmarks.md): 1.72x at 2,000 images
# (each shard's fixed start is visible), 1.98x at 10,000, 2.06x at 50,000.
AUTO_SHARD_MIN = 10_000
SHARDS_PER_WORKER = 2


def _env(name: str, default: str) -> str:
    return os.environ.get(f"CURATOR_{name}", default)


def _int_env(name: str, default: int) -> int:
    """An integer setting, or one clear line naming the variable."""
    text = _env(name, str(default))
    try:
        return int(text)
    except ValueError:
        raise InputError(f"CURATOR_{name} must be a whole number, got {text!r}") from None


def _flag_env(name: str) -> bool:
    """An on/off setting ("1", "true", "yes" or "0", "false", "no", ""), or one clear line
    naming the variable."""
    text = _env(name, "").strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise InputError(f"CURATOR_{name} must be 1 or 0, got {text!r}")


def _number_env(name: str, param: str, default: int | None) -> int | None:
    """A setting with a parameter's range (worker.pipeline.ranges), named as the variable;
    ``default`` when it is not set."""

    text = _env(name, "")
    if not text:
        return default
    try:
        return int(check(param, text))
    except InputError as exc:
        raise InputError(str(exc).replace(PARAMS[param].flag, f"CURATOR_{name}", 1)) from None


@dataclass(frozen=True)
class Settings:
    """Process-wide settings; build with :func:`load_settings`."""

    runs_root: Path = field(default_factory=lambda: Path("runs"))
    data_root: Path = field(default_factory=lambda: Path("../shared/data"))
    broker_url: str = ""
    result_backend: str = ""
    # Seconds before Redis re-delivers a message whose worker vanished without acking it.
    # It must exceed the longest job; jobs of a dead worker are recovered much sooner by
    # every live worker's periodic heartbeat check (see docs/jobs.md).
    visibility_timeout: int = 6 * 3600
    # A running job whose heartbeat is older than this is taken for dead. Jobs beat at
    # least three times per window (worker.jobs.execution.heartbeat_interval).
    stale_after_s: int = 20
    host: str = "127.0.0.1"
    port: int = 8050
    auth_token: str = ""
    device: str = "auto"
    # Decoding processes of an extraction; None: all cores but one (sources/decoding.py).
    num_workers: int | None = None
    # Folders the app's New-run form may read datasets, labels and weights from; empty means
    # the default, DEFAULT_DATA_ROOTS (see data_roots_of).
    data_roots: tuple[Path, ...] = ()
    # Host names the server answers to besides the loopback ones (DNS rebinding defence).
    allowed_hosts: tuple[str, ...] = ()
    # Largest request body the server reads; Dash callbacks send a few kB.
    max_body_bytes: int = 16 * 1024 * 1024
    # Request threads of the production server (waitress); bench/server.py measured the
    # choice of server and this count (docs/benchmarks.md).
    server_threads: int = 8
    # The Curate page's test and benchmark hooks (assets/curate_debug.js: window.curateDebug),
    # for browser tests and bench/ui_latency.py; off, the script is neither on the page nor
    # served. `curator serve --debug` turns them on too.
    debug_hooks: bool = False


def data_roots_of(s: Settings) -> tuple[Path, ...]:
    """Where the app may read user files: ``CURATOR_DATA_ROOTS`` (``:``-separated), or by
    default the ``data/`` folder beside the runs root and ``CURATOR_DATA_ROOT``."""
    roots = s.data_roots or (Path(s.runs_root).resolve().parent / "data", Path(s.data_root))
    return tuple(Path(r).resolve() for r in roots)


def load_settings() -> Settings:
    """Read settings from the environment (``CURATOR_RUNS_ROOT`` and friends)."""
    return Settings(
        runs_root=Path(_env("RUNS_ROOT", "runs")),
        data_root=Path(_env("DATA_ROOT", "../shared/data")),
        data_roots=tuple(Path(p) for p in _env("DATA_ROOTS", "").split(os.pathsep) if p),
        broker_url=_env("BROKER_URL", ""),
        result_backend=_env("RESULT_BACKEND", ""),
        visibility_timeout=_int_env("VISIBILITY_TIMEOUT", 6 * 3600),
        stale_after_s=_int_env("STALE_AFTER", 20),
        host=_env("HOST", "127.0.0.1"),
        port=_number_env("PORT", "port", 8050),
        auth_token=_env("AUTH_TOKEN", ""),
        device=_env("DEVICE", "auto"),
        num_workers=_number_env("NUM_WORKERS", "workers", None),
        allowed_hosts=tuple(h.strip().lower() for h in _env("ALLOWED_HOSTS", "").split(",")
                            if h.strip()),
        max_body_bytes=_int_env("MAX_BODY_BYTES", 16 * 1024 * 1024),
        server_threads=_int_env("SERVER_THREADS", 8),
        debug_hooks=_flag_env("DEBUG_HOOKS"),
    )
