"""Who is deciding: the name each change to a run's curation store records as its author.

The CLI and the notebook API act as the person logged in to the machine (the OS user);
``curator serve`` sets each request's author from its access token
(app/security.py), for the request's own thread, with :func:`acting_as`. A store change
reads :func:`current_author` when it is recorded, so no door has to pass a name along.
"""

from __future__ import annotations

import contextlib
import getpass
from collections.abc import Iterator
from contextvars import ContextVar

UNKNOWN = "unknown"  # the author of a decision recorded before decisions were signed
_AUTHOR: ContextVar[str | None] = ContextVar("curator_author", default=None)
# Whether that name came from an access token (a server's request): a job it queues is
# checked against the token's role again when a worker runs it (worker/people.py).
_BY_TOKEN: ContextVar[bool] = ContextVar("curator_author_by_token", default=False)


def os_user() -> str:
    """The OS user this process runs as, or :data:`UNKNOWN` where none can be read (a
    container with no passwd entry for its uid)."""
    try:
        return getpass.getuser() or UNKNOWN
    except (KeyError, OSError):
        return UNKNOWN


def current_author() -> str:
    """The name a change made now is recorded under."""
    return _AUTHOR.get() or os_user()


@contextlib.contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Record the changes made inside the block (in this thread or task) as ``name``'s."""
    token = _AUTHOR.set(name)
    try:
        yield
    finally:
        _AUTHOR.reset(token)


def set_author(name: str | None, by_token: bool = False) -> None:
    """Record the changes made from now on in this thread as ``name``'s (None: the OS
    user's again); ``by_token``: the name is an access token's. For a server's per-request
    hook, where a ``with`` block cannot span the request."""
    _AUTHOR.set(name)
    _BY_TOKEN.set(bool(name) and by_token)


def by_token() -> bool:
    """Whether :func:`current_author` is an access token's person (not the OS user)."""
    return _BY_TOKEN.get()
