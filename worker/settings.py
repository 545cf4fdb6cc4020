"""One typed settings object, read from ``CURATOR_*`` environment variables.

Defaults work on a laptop: everything local, bound to 127.0.0.1, no broker.

:class:`Settings` is a pydantic-settings model (:mod:`worker.settings_model`), imported
when it is first named or :func:`load_settings` runs: the CLI imports this module at its
start, and ``curator --help`` would otherwise load pydantic: ``import pydantic_settings``
took 0.13 s over a bare interpreter's start, twice the whole help's 0.06 s (best of 11,
2 cores, x86_64, 2026-11-28).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker.settings_model import Settings

# Extraction is shared out by itself (worker.jobs.extract_shards), with a broker and at least
# two workers on the gpu queue, from this many images: SHARDS_PER_WORKER shards per worker.
# bench/shards.py, two workers against one (docs/benchmarks.md): 1.72x at 2,000 images
# (each shard's fixed start is visible), 1.98x at 10,000, 2.06x at 50,000.
AUTO_SHARD_MIN = 10_000
SHARDS_PER_WORKER = 2


def __getattr__(name: str) -> Any:
    # ``from worker.settings import Settings`` still works: the model's module is imported
    # on first use (PEP 562).
    if name == "Settings":
        from worker.settings_model import Settings

        return Settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def data_roots_of(s: Settings) -> tuple[Path, ...]:
    """Where the app may read user files: ``CURATOR_DATA_ROOTS`` (``:``-separated), or by
    default the ``data/`` folder beside the runs root and ``CURATOR_DATA_ROOT``."""
    roots = s.data_roots or (Path(s.runs_root).resolve().parent / "data", Path(s.data_root))
    return tuple(Path(r).resolve() for r in roots)


def load_settings() -> Settings:
    """Read settings from the environment (``CURATOR_RUNS_ROOT`` and friends).

    Raises
    ------
    InputError
        One line naming the variable whose value does not fit (``CURATOR_PORT=abc``).
    """
    from worker.settings_model import from_environment

    return from_environment()
