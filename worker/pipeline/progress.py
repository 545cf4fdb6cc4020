"""Progress callbacks: ``(done, total, message) -> bool``, True asks the loop to stop."""

from __future__ import annotations

import sys
from collections.abc import Callable

ProgressFn = Callable[[int, int, str], bool]


class Cancelled(RuntimeError):
    """Raised by a long loop when its progress callback asked it to stop."""


def no_progress(done: int, total: int, message: str) -> bool:
    """The default callback: report nothing, never stop."""
    return False


def report(progress: ProgressFn | None, done: int, total: int, message: str) -> None:
    """Call ``progress`` and raise :class:`Cancelled` if it asks for a stop."""
    if progress is not None and progress(done, total, message):
        raise Cancelled(f"stopped at {done}/{total}: {message}")


class TqdmProgress:
    """A progress callback that draws one tqdm bar per message prefix: through
    ``tqdm.auto``, a widget in a Jupyter notebook and text on stderr elsewhere."""

    def __init__(self) -> None:
        self._bar = None
        self._label = ""

    def __call__(self, done: int, total: int, message: str) -> bool:
        from tqdm.auto import tqdm

        label = message.split(":", 1)[0]
        if self._bar is None or label != self._label or total != self._bar.total:
            self.close()
            self._bar = tqdm(total=total, desc=label, file=sys.stderr, leave=True,
                             mininterval=1.0, dynamic_ncols=True)
            self._label = label
        self._bar.n = done
        self._bar.refresh()
        if done >= total:
            self.close()
        return False

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
