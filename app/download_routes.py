"""``/download/<run>/exports/<name>/<file>``: one file of one of the run's exports, as an
attachment named ``<name>-<file>``.

The run comes through the ``run`` converter (app/url_converters.py), inside the runs root;
the file must resolve inside the run's exports folder (a link out of it is refused) and be
a file of a finished export (an export is written to a hidden folder and renamed into
place when complete).
"""

from __future__ import annotations

from flask import Response, abort, send_file

from app.responses import subtree_blueprint
from worker.pipeline.storage.rundir import RunDir

downloads = subtree_blueprint("downloads", __name__, "/download")


@downloads.get("/download/<run:run>/exports/<name>/<filename>")
def download(run: RunDir, name: str, filename: str) -> Response:
    root = run.exports.resolve()
    target = (root / name / filename).resolve()
    if not target.is_relative_to(root) or not target.is_file() or name.startswith("."):
        abort(404)
    return send_file(target, as_attachment=True, download_name=f"{name}-{filename}")
