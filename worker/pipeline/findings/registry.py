"""The registry of finding kinds: one entry per kind, in the order they are shown."""

from __future__ import annotations

from .base import FindingKind

REGISTRY: dict[str, FindingKind] = {}


def register(cls: type[FindingKind]) -> type[FindingKind]:
    """Class decorator: add a kind to :data:`REGISTRY` (its ``name`` must be new)."""
    if cls.name in REGISTRY:
        raise ValueError(f"finding kind {cls.name!r} is registered already")
    REGISTRY[cls.name] = cls()
    return cls


def unregister(name: str) -> None:
    """Remove a kind (a test's toy kind)."""
    REGISTRY.pop(name, None)


def kinds() -> list[FindingKind]:
    """Every registered kind, in display order (``order``, then registration)."""
    return sorted(REGISTRY.values(), key=lambda k: k.order)


def get_kind(name: str) -> FindingKind:
    from ..errors import InputError

    if name not in REGISTRY:
        raise InputError(f"no finding kind {name!r}: use one of {', '.join(REGISTRY)}")
    return REGISTRY[name]
