"""The app's in-process caches of what it derives from runs: thumbnails, clusterings and
figures. All are cachetools caches, each behind a lock (the server answers requests on
several threads, and cachetools' caches are not thread-safe by themselves).

Every key names all that its value depends on: the run directory and the mtimes of its
files (``RunData.stamp``; files are replaced by atomic renames), the class, and the DBSCAN
parameters or the store revision, which grows with every parameter change, override and
undo. A stale entry can therefore never be served, only evicted: by size (the least
recently used first) or an hour after it was stored, so a run that is no longer looked at
gives its memory back.

Each server process fills its own; none holds state a user can change (that lives in the
run's SQLite store).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

from cachetools import TTLCache, cached
from cachetools.keys import hashkey

T = TypeVar("T")

TTL_S = 3600  # an entry is dropped an hour after it was stored
# Thumbnail and backdrop PNGs: a few kB each, immutable per file mtime.
files: TTLCache = TTLCache(maxsize=20000, ttl=TTL_S)
# Figures: up to ~1 MB each (the 50,000-point overview), one set per store revision, so
# this one keeps few entries.
derived: TTLCache = TTLCache(maxsize=256, ttl=TTL_S)
# Per-class DBSCAN labels: ~10-40 kB each, one per class and parameters. A page's state
# needs one per class, so this holds many: with 1,000 classes in the figures' 256 slots,
# every request re-clustered every class.
labels: TTLCache = TTLCache(maxsize=20000, ttl=TTL_S)
# One lock for the three: it is held only to read or store an entry, never while a value
# is computed, so requests that compute different values run side by side.
LOCK = threading.RLock()


def cached_file(name: str) -> Callable[[Callable[..., bytes]], Callable[..., bytes]]:
    """Decorate a function that makes image bytes so that its results are kept in
    :data:`files` under ``(name, *its arguments)``: the functions that share the cache
    cannot take each other's entries."""
    return cached(files, key=functools.partial(hashkey, name), lock=LOCK)


def memoized(key: tuple[Hashable, ...], compute: Callable[[], T], cache: TTLCache = derived
             ) -> T:
    """``compute()``, kept in ``cache`` (the figures' by default) under ``key``."""
    value = lookup(key, cache)
    if value is None:
        value = compute()
        keep(key, value, cache)
    return value


def lookup(key: tuple[Hashable, ...], cache: TTLCache = derived) -> object | None:
    """What :func:`memoized` keeps under ``key``, or None."""
    with LOCK:
        return cache.get(key)


def keep(key: tuple[Hashable, ...], value: object, cache: TTLCache = derived) -> None:
    """Store ``value`` where :func:`memoized` would."""
    with LOCK:
        cache[key] = value


def clear() -> None:
    """Empty every cache of this module (tests, and a process that wants its memory)."""
    with LOCK:
        for cache in (files, derived, labels):
            cache.clear()
