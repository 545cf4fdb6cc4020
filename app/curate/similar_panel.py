"""More like this: the review list turned into one sample's, or one image file's, nearest
samples across every class.

The ask comes from the ``s`` key (assets/review.js: the map point under the pointer, else
the review list's focused row) or from an image file dropped on (or picked in) the upload
box. :func:`answer` finds the neighbours (the SIMILAR store: their samples and distances,
nearest first) as ``curator similar`` and ``run.similar`` find them
(worker/pipeline/map/similar.py), so the three list the same rows. The review list holds
those rows, where every review action works on them as on any row; assets/review.js sorts
them by distance and rings them on the map where they are in the class shown. "Back to
the list" ends it.

The key's answer is fetched by the script itself (:data:`ROUTE`, app/script_routes.py
``similar_json``): its rows go into the grid through the grid's API and its line into the
page, and every other value into Dash with ``set_props`` just after they paint, as a
callback's response would have written them. As a Dash callback the step took 94 ms (p50)
from the key to the painted rows at 50,000 samples, this way 68–78 ms (docs/benchmarks.md,
"More like this"). An uploaded file and Back to the list are callbacks
(app/curate/review_list.py ``on_upload``, ``on_back``); all three build their values with
``review_list.listing_out``.

An uploaded file goes through the run's own network and PCA
(worker/pipeline/map/image_query.py); its size is checked in the browser first, against
the server's request limit, so an oversized file gets the same one line as a bad one.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import threading
from pathlib import Path
from urllib.parse import quote

import dash_bootstrap_components as dbc
from dash import (
    ClientsideFunction,
    Input,
    Output,
    State,
    clientside_callback,
    dcc,
    html,
)

from app import ids
from app.app_context import settings
from app.curate import Page
from app.layout import small_button
from app.run_data import run_data
from worker.pipeline.errors import InputError
from worker.pipeline.map.image_query import load_network, nearest_to_image
from worker.pipeline.map.similar import nearest_samples, search_space
from worker.pipeline.number_params import PARAMS, check

ASK = "ask"  # :func:`answer`'s trigger for the s key's sample (app/script_routes.py)
ROUTE = "/similar"  # /similar/<run>/<sample>.json: the s key's answer, for assets/review.js
PANEL = ids.SIMILAR_PANEL  # the panel's element: data-similar, where assets/review.js asks
SIMILAR = ids.SIMILAR  # the neighbours listed (:func:`answer`), or None
SHOWN = "similar-shown"  # review.similarShown's output, never written (Dash needs one)
HELD = "similar-held"  # review.heldListing's output, never written
UPLOAD = "similar-upload"
FILE = "similar-file"  # the upload once the browser has checked its size: {name, contents}
LIMIT = "similar-limit"  # the largest file the browser sends, in bytes
K = ids.SIMILAR_K
LINE = ids.SIMILAR_LINE
BACK = "similar-back"
BACK_BOX = "similar-back-box"
# The base64 text of a file is 4/3 of its size, and the request also carries the
# callback's other inputs: what is left of the server's body limit after those.
REQUEST_SLACK = 64 * 1024


def layout(page: Page) -> html.Div:
    """The line that says what is listed, with Back to the list, over the review list
    (no height while nothing is listed, so the list starts where it did), and its stores.
    What the first asks read starts loading in the background (:func:`warm_run`)."""
    warm_run(page.run_id)
    return html.Div([
        dcc.Store(id=SIMILAR), dcc.Store(id=SHOWN), dcc.Store(id=HELD), dcc.Store(id=FILE),
        dcc.Store(id=LIMIT, data=upload_limit()),
        html.Span(id=LINE, className="small similar-line"),
        html.Span(small_button("Back to the list", BACK, "secondary",
                               "The review list again, as it was"),
                  id=BACK_BOX, hidden=True),
    ], id=PANEL, className="d-flex flex-wrap align-items-center gap-2 similar-panel",
       **{"data-similar": f"{ROUTE}/{quote(page.run_id, safe='')}/"})


def asking() -> html.Div:
    """The upload box and k, under the review list with its keys."""
    k = PARAMS["similar_k"]
    return html.Div([
        dcc.Upload(html.Span(["More like an image: drop a file here or ",
                              html.A("pick one", className="link-primary")]),
                   id=UPLOAD, multiple=False, className="similar-upload small"),
        dbc.InputGroup([dbc.InputGroupText("k nearest", class_name="small"),
                        dbc.Input(id=K, type="number", min=k.low, max=200, step=1,
                                  value=k.default, size="sm", style={"maxWidth": "4.5rem"})],
                       size="sm", class_name="w-auto"),
    ], className="d-flex flex-wrap align-items-center gap-2 mt-1 similar-ask")


_WARMED: set[tuple[str, str]] = set()  # (runs root, run id)
_WARMED_LOCK = threading.Lock()


def warm_run(run_id: str) -> None:
    """Load what run ``run_id``'s first asks read into the server, in a background thread
    at a lower CPU priority than the page's own work, the first time its page opens in
    this process: the search space (the run's PCA rows), so the first ``s`` waits for its
    search, not for reading them (1.0 s at 1.28M samples) or, with no cached PCA, for
    scikit-learn's import and the fit (1.1 s at 50,000); then the network, so the first
    image dropped on the page waits 30 ms for its features, not 4.6 s for torch and the
    network (docs/benchmarks.md, "More like this")."""
    root = settings().runs_root
    with _WARMED_LOCK:
        if (str(root), run_id) in _WARMED:
            return
        _WARMED.add((str(root), run_id))
    threading.Thread(target=_load_run, args=(root, run_id), daemon=True,
                     name="curator-warm-run").start()


def _load_run(runs_root: Path, run_id: str) -> None:
    with contextlib.suppress(OSError):  # a thread's priority is Linux's to lower
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    # Any failure here is the first ask's to report, in its own line: a warm-up has no
    # one to tell.
    with contextlib.suppress(Exception):
        run = run_data(runs_root, run_id).run
        search_space(run)
        load_network(run)


def upload_limit() -> int:
    """The largest image file the page uploads, in bytes: what fits in the server's
    request body (``max_body_bytes``) as base64."""
    return max(0, (settings().max_body_bytes - REQUEST_SLACK) * 3 // 4)


def register() -> None:
    """The upload's size checked in the browser (assets/review.js ``checkUpload``: a file
    over :func:`upload_limit` never leaves it). A file's answer and Back are the review
    list's callbacks (app/curate/review_list.py ``on_upload``, ``on_back``); the s key's
    answer is fetched by the page's script (module docstring)."""
    clientside_callback(
        ClientsideFunction(namespace="review", function_name="checkUpload"),
        Output(FILE, "data"), Input(UPLOAD, "contents"), State(UPLOAD, "filename"),
        State(LIMIT, "data"), prevent_initial_call=True,
    )


def answer(trigger: str, ask: dict | None, upload: dict | None, k, run_id: str) -> dict:
    """What an ask, an upload or Back to the list does to the panel: ``similar`` (the
    listing SIMILAR holds, or None for the review queue), ``line`` and ``back_hidden``;
    ``refused`` is True when the ask was refused (its line says why; the list stays as it
    is)."""
    if trigger not in (ASK, FILE):
        return {"similar": None, "line": "", "back_hidden": True, "refused": False}
    try:
        listing = similar_listing(run_id, k, ask if trigger == ASK else None,
                                  upload if trigger == FILE else None)
    except InputError as exc:
        return {"similar": None, "line": html.Span(str(exc), className="text-danger"),
                "back_hidden": None, "refused": True}
    n = len(listing["samples"])
    return {"similar": listing, "back_hidden": False, "refused": False,
            "line": [html.B(f"similar to {listing['title']}"),
                     f": its {n} nearest across all classes, nearest first"]}


def similar_listing(run_id: str, k, ask: dict | None, upload: dict | None) -> dict:
    """What SIMILAR holds for the sample ``ask["sample"]`` or the file ``upload``
    (``{name, contents}``, contents a data URL): ``{"id", "title", "query", "samples",
    "distances"}``, nearest first; ``query`` is the sample asked about (None for a file),
    ``id`` names the ask (the review list rebuilds its rows when it changes)."""
    k = int(check("similar_k", PARAMS["similar_k"].default if k in (None, "") else k))
    data = run_data(settings().runs_root, run_id)
    if ask is not None:
        try:
            sample = int(ask["sample"])
        except (KeyError, TypeError, ValueError):
            raise InputError("no sample to start from: hover a point or focus a row, "
                             "then press s") from None
        idx, dist = nearest_samples(data.run, sample, k)
        s = data.samples
        return {"id": f"sample:{sample}:k{k}", "query": sample,
                "title": f"#{sample} · {s.classes[s.labels[sample]]}",
                "samples": idx.tolist(), "distances": dist.tolist()}
    if upload and upload.get("too_large"):
        mb = 1024 * 1024
        raise InputError(f"{upload.get('name')}: {upload['too_large'] / mb:.1f} MB is over "
                         f"the page's {upload_limit() / mb:.1f} MB limit: use 'curator "
                         "similar RUN FILE' for larger files")
    name, raw = decoded_upload(upload)
    try:
        idx, dist = nearest_to_image(data.run, raw, k)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return {"id": f"file:{digest}:k{k}", "query": None, "title": name,
            "samples": idx.tolist(), "distances": dist.tolist()}


def decoded_upload(upload: dict | None) -> tuple[str, bytes]:
    """The file name and bytes of a ``dcc.Upload`` value ({name, contents}: a data URL)."""
    name = str((upload or {}).get("name") or "the file")
    contents = str((upload or {}).get("contents") or "")
    head, _, body = contents.partition(",")
    if not head.endswith(";base64"):
        raise InputError(f"{name}: the upload arrived unreadable: drop the file again")
    try:
        return name, base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"{name}: the upload arrived unreadable: drop the file again"
                         ) from None
