"""The app's own URL converters.

``<run:run>``: a run id in the URL, handed to the view as the :class:`RunDir` it names
inside the runs root. A run id is a path relative to the runs root (runs may nest:
``nested/good2``), so the converter is Werkzeug's path converter; its value goes through
the one resolver of run ids (:func:`worker.run_catalog.resolve_run`), and an id that names
no folder inside the root (``..``, an absolute path, a link out of it, an over-long name)
matches no route: a 404 before the view runs, so no view can read a file outside the runs
root by its run id.

``<subtree:rest>``: anything at all, empty or starting with a slash (``%2F``) included, for
the routes that answer what is left under a prefix with a 404 (app/responses.py), where
Werkzeug's path converter would let such a path fall through to the Dash page shell.
"""

from __future__ import annotations

from pathlib import Path

from werkzeug.routing import Map, PathConverter, ValidationError

from worker.pipeline.errors import InputError
from worker.pipeline.storage.rundir import RunDir
from worker.run_catalog import resolve_run, run_id_for


class RunConverter(PathConverter):
    """A run id, resolved inside ``runs_root`` (set per app by :func:`run_converter`)."""

    runs_root: Path

    def to_python(self, value: str) -> RunDir:
        try:
            return resolve_run(self.runs_root, value)
        except InputError:
            raise ValidationError from None

    def to_url(self, value: RunDir | str) -> str:
        run_id = value if isinstance(value, str) else run_id_for(self.runs_root, value.path)
        return super().to_url(run_id)


class SubtreeConverter(PathConverter):
    """Whatever is left of the path, possibly nothing."""

    regex = ".*"
    part_isolating = False  # it spans slashes (Werkzeug would guess from the regex)


def run_converter(runs_root: Path) -> type[RunConverter]:
    """The ``run`` converter of an app whose runs live in ``runs_root``."""
    return type("RunConverter", (RunConverter,), {"runs_root": Path(runs_root)})


def add_converters(url_map: Map, runs_root: Path) -> None:
    """Let ``url_map``'s rules say ``<run:NAME>`` and ``<subtree:NAME>``; before any
    Blueprint that uses them is registered (a rule finds its converters when it is added)."""
    url_map.converters["run"] = run_converter(runs_root)
    url_map.converters["subtree"] = SubtreeConverter
