"""The progress bars of the API's long calls."""

from __future__ import annotations

from worker.pipeline.progress import TqdmProgress


def progress_bar() -> TqdmProgress:
    """A progress callback drawing one tqdm bar per step, through ``tqdm.auto``: a widget
    in Jupyter (with ipywidgets installed), text on stderr elsewhere. Close it when the
    call ends."""
    return TqdmProgress()
