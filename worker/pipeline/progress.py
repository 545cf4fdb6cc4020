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


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (whose stderr is no terminal, but shows
    ``tqdm.auto``'s widget)."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def bars_wanted() -> bool:
    """Progress bars are for a person: stderr on a terminal, or a notebook. A listing
    piped into a file or another program gets none."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty()) or _in_notebook()


class TqdmProgress:
    """A progress callback that draws one tqdm bar per message prefix: through
    ``tqdm.auto``, a widget in a Jupyter notebook and text on stderr on a terminal;
    nothing elsewhere (:func:`bars_wanted`)."""

    def __init__(self, show: bool | None = None) -> None:
        self._bar = None
        self._label = ""
        self._finished: tuple[str, int] | None = None  # the last bar that reached its end
        self._show = bars_wanted() if show is None else show

    def __call__(self, done: int, total: int, message: str) -> bool:
        if not self._show:
            return False
        from tqdm.auto import tqdm

        if message.startswith("warning:"):  # a note, not a step: printed above the bars
            tqdm.write(message, file=sys.stderr)
            return False
        label = message.split(":", 1)[0]
        if self._bar is None and done >= total and self._finished == (label, total):
            return False  # a finished step's closing words (a training's test accuracy)
        if self._bar is None or label != self._label or total != self._bar.total:
            self.close()
            self._bar = tqdm(total=total, desc=label, file=sys.stderr, leave=True,
                             mininterval=1.0, dynamic_ncols=True)
            self._label = label
        self._bar.n = done
        self._bar.refresh()
        if done >= total:
            self.close()
            self._finished = (label, total)
        return False

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
