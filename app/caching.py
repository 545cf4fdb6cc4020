"""Flask-Caching for the app: thumbnails, and the clusterings and figures derived from runs.

Every key names all that its value depends on: the run directory and the mtimes of its
files (``RunData.stamp``; files are replaced by atomic renames), the class, and the DBSCAN
parameters or the store revision, which grows with every parameter change, override and
undo. A stale entry can therefore never be served, only evicted.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from flask import Flask, has_app_context
from flask_caching import Cache

T = TypeVar("T")

# Thumbnail and backdrop PNGs: a few kB each, immutable per file mtime.
files = Cache()
# Figures: up to ~1 MB each (the 50,000-point overview), one set per store revision, so
# this one keeps few entries.
derived = Cache()
# Per-class DBSCAN labels: ~10-40 kB each, one per class and parameters. A page's state
# needs one per class, so this holds many: with 1,000 classes in the figures' 256 slots,
# every request re-clustered every class.
labels = Cache()


def init_app(server: Flask) -> None:
    files.init_app(server, config={"CACHE_TYPE": "SimpleCache", "CACHE_THRESHOLD": 20000,
                                   "CACHE_DEFAULT_TIMEOUT": 3600})
    derived.init_app(server, config={"CACHE_TYPE": "SimpleCache", "CACHE_THRESHOLD": 256,
                                     "CACHE_DEFAULT_TIMEOUT": 3600})
    labels.init_app(server, config={"CACHE_TYPE": "SimpleCache", "CACHE_THRESHOLD": 20000,
                                    "CACHE_DEFAULT_TIMEOUT": 3600})


def memoized(key: tuple[Hashable, ...], compute: Callable[[], T], cache: Cache = derived) -> T:
    """``compute()``, kept in ``cache`` (the figures' by default) under ``key``.

    Outside a Flask app (unit tests, scripts) there is no cache: it is computed each time.
    """
    value = lookup(key, cache)
    if value is None:
        value = compute()
        keep(key, value, cache)
    return value


def lookup(key: tuple[Hashable, ...], cache: Cache = derived) -> object | None:
    """What :func:`memoized` keeps under ``key``, or None (always None outside an app)."""
    return cache.get(repr(key)) if has_app_context() else None


def keep(key: tuple[Hashable, ...], value: object, cache: Cache = derived) -> None:
    """Store ``value`` where :func:`memoized` would (nowhere outside an app)."""
    if has_app_context():
        cache.set(repr(key), value)
