"""A class on the shared map as a Plotly figure, drawn as the Curate page draws it.

The figure is the page's class view (app/curate/figures.py ``class_figure`` and
``class_trace``): every point of the map faint behind, as the same backdrop image
(app/curate/backdrop.py, inlined as a data URL), and the class on top in the page's marks:
DBSCAN clusters in colours, ✕ flagged, a green diamond kept by a reviewer (or
relabelled), a red ✕ dropped by one, each other finding kind's mark. Hovering a point shows
its sample index.
"""

from __future__ import annotations

import base64
from html import escape
from typing import TYPE_CHECKING

import numpy as np

from app.curate.backdrop import render_png
from app.curate.figures import class_figure, class_trace
from app.map_extent import extent
from app.run_data import RunState
from worker.pipeline.curation.cluster_step import class_code
from worker.pipeline.curation.snapshot import current_snapshot
from worker.pipeline.findings import proposals
from worker.pipeline.storage.rundir import RunDir

if TYPE_CHECKING:
    import plotly.graph_objects as go


def class_map(run: RunDir, class_name: str) -> go.Figure:
    """Class ``class_name`` of ``run`` at the store's current revision.

    Returns
    -------
    plotly.graph_objects.Figure
        Trace 0 pins the axes to the whole map; trace 1 holds the class's points, whose
        ``customdata`` are their sample indices.

    Raises
    ------
    InputError
        No such class in the run.
    """
    import plotly.graph_objects as go

    snap = current_snapshot(run)
    code = class_code(snap.samples, class_name)
    emb = run.load_embedding()
    stored = snap.stored
    state = RunState(snap.decisions, stored.params, stored.overrides, stored.revision,
                     stored.rule, stored.relabels, cuts=stored.cuts)
    members = np.flatnonzero(snap.samples.labels == code)
    png = render_png(emb, snap.samples.labels, snap.samples.classes)
    backdrop = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    trace = class_trace(emb, members, snap.decisions, state.marks,
                        proposals(snap.findings, len(snap.samples)))
    fig = go.Figure(class_figure(emb, trace, backdrop, True, extent(emb)))
    eps, min_samples = stored.params.get(code, (None, None))
    params = f": eps {eps:.3g}, min_samples {min_samples}" if eps is not None else ""
    fig.data[1].update(hoverinfo=None, hovertemplate="sample %{customdata}<extra></extra>")
    # Plotly reads a subset of HTML in titles; a class name is text.
    fig.update_layout(title=dict(text=f"class {escape(class_name, quote=False)}{params}",
                                 font=dict(size=14)),
                      margin=dict(t=40))
    return fig
