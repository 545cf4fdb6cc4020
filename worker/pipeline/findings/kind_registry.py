"""The registry of finding kinds: one entry per kind, in the order they are shown."""

from __future__ import annotations

import re

from worker.pipeline.errors import InputError
from worker.pipeline.findings.base import FindingKind

REGISTRY: dict[str, FindingKind] = {}


# A kind's name is a decision reason (clustering.decide's fixed-width strings) and a
# column value: a short lower-case word.
NAME = re.compile(r"[a-z][a-z0-9_]{0,12}")


def register(cls: type[FindingKind]) -> type[FindingKind]:
    """Class decorator: add a kind to :data:`REGISTRY` (its ``name`` must be new, and a
    lower-case word of at most 13 characters)."""
    if cls.name in REGISTRY:
        raise ValueError(f"finding kind {cls.name!r} is registered already")
    if not NAME.fullmatch(cls.name):
        raise ValueError(f"finding kind name {cls.name!r}: use at most 13 lower-case letters, "
                         "digits and '_', starting with a letter")
    REGISTRY[cls.name] = cls()
    return cls


def unregister(name: str) -> None:
    """Remove a kind (a test's toy kind)."""
    REGISTRY.pop(name, None)


def kinds() -> list[FindingKind]:
    """Every registered kind, in display order (``order``, then registration)."""
    return sorted(REGISTRY.values(), key=lambda k: k.order)


def get_kind(name: str) -> FindingKind:
    if name not in REGISTRY:
        raise InputError(f"no finding kind {name!r}: use one of "
                         f"{', '.join(k.name for k in kinds())}")
    return REGISTRY[name]
