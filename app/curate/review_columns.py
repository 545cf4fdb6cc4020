"""The review list's columns (app/curate/review_list.py): a dash-ag-grid column
definition each, with the tooltip that says what the column means.

No cell renderers (assets/dashAgGridFunctions.js says why): the thumbnail is the cell's
background, the state a formatted value with a class per state.
"""

from __future__ import annotations

import json

from app.curate.review_queue import STATES
from worker.pipeline.findings import kinds

COLUMNS = [
    {"field": "thumb", "headerName": "", "width": 48, "cellClass": "grid-thumb",
     "cellStyle": {"function": "thumbStyle(params)"}, "valueFormatter": {"function": "''"},
     "sortable": False, "filter": False, "resizable": False, "suppressSizeToFit": True},
    {"field": "sample", "headerName": "#", "width": 76, "suppressSizeToFit": True,
     "filter": "agNumberColumnFilter",
     "headerTooltip": "The sample's index in the run (samples.csv row)"},
    {"field": "given", "headerName": "given", "flex": 1, "minWidth": 70,
     "filter": "agTextColumnFilter",
     "headerTooltip": "The label the dataset gives it"},
    {"field": "suggested", "headerName": "suggested", "flex": 1, "minWidth": 80,
     "filter": "agTextColumnFilter",
     "headerTooltip": "The class its neighbourhood and a cross-validated classifier agree "
                      "on, when that is not the given label"},
    # Shown, and sorted on, while the list holds a sample's nearest (assets/review.js).
    {"field": "distance", "headerName": "distance", "width": 92, "hide": True,
     "suppressSizeToFit": True, "filter": "agNumberColumnFilter",
     "headerTooltip": "How far from the sample or image asked about, in the space the "
                      "label evidence and the findings search (the features' PCA-50)"},
    {"field": "score", "headerName": "score", "width": 84, "suppressSizeToFit": True,
     "sort": "desc", "filter": "agNumberColumnFilter",
     "headerTooltip": "How likely the given label is wrong, 0 to 1 (1 − its estimated "
                      "probability)"},
    {"field": "finding", "headerName": "finding", "width": 110, "suppressSizeToFit": True,
     "filter": "agTextColumnFilter",
     "headerTooltip": "What kind of harm: " + ", ".join(f"{k.name} ({k.title})"
                                                         for k in kinds())},
    # A relabelled row's badge also names the class it trains with ("relabelled → dog").
    {"field": "state", "headerName": "state",
     "valueFormatter": {"function": "reviewStateText(params)"},
     "cellClass": {"function": "'review-state review-state-' + params.value"},
     "tooltipValueGetter": {"function": f"({json.dumps(STATES)})[params.value]"},
     "filter": "agTextColumnFilter", "flex": 1, "minWidth": 110,
     "headerTooltip": "flagged: dropped by default and nobody has looked yet; proposed: a "
                      "finding lists it, kept until you decide; kept, dropped, "
                      "relabelled: what a reviewer decided"},
    {"field": "decided", "headerName": "decided", "width": 120, "suppressSizeToFit": True,
     "filter": "agTextColumnFilter",
     "headerTooltip": "Who made the last decision on it, and when (UTC): `curator history "
                      "RUN --sample I` lists them all"},
]
