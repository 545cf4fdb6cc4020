"""Component ids the browser's scripts (assets/*.js) use, named once.

The pages build their components with these constants, and ``/ids.js`` (app/server.py)
hands the same values to the scripts as ``window.CURATOR_IDS`` before they load, so an
id changed here changes everywhere; ``tests/integration/app/test_security.py`` checks that no
script spells one out.
"""

from __future__ import annotations

import json

GRAPH = "curate-graph"  # the Curate page's map
MAP = "curate-map"  # the map's element: data-traces, where assets/class_map.js fetches
PAINTED = "curate-map-painted"  # the class switch assets/class_map.js drew (a store)
BACKGROUND = "curate-background"  # the map's "other classes" switch
UNDO = "curate-undo"
REDO = "curate-redo"
CLASS_PICK = "curate-class"  # the shown class (a store the class list writes)
CLASS_LIST = "curate-class-list"  # the class list (dash-ag-grid)
EPS_SLIDER = "curate-eps-slider"  # the parameter controls class_map.js reads
EPS_INPUT = "curate-eps-input"
MS_SLIDER = "curate-ms-slider"
MS_INPUT = "curate-ms-input"
STATUS = "curate-status"  # the header's counts line (assets/class_map.js writes it)
STATUS_DATA = "curate-status-data"  # the server's counts line (hidden): class_map.js shows it
MODEL = "curate-model"  # what assets/class_map.js needs to re-cluster the shown class
DRAFT = "curate-draft"  # the parameter change assets/class_map.js drew (a store it writes)
REVIEW_GRID = "review-grid"  # the review list (dash-ag-grid)
REVIEW_KEY = "review-key"  # a key's action on the focused row (a store)
REVIEW_FOCUS = "review-focus"  # the focused row's sample (a store)
REVIEW_COUNT = "review-count"  # "N listed", written by assets/review.js
SIMILAR_PANEL = "similar-panel"  # the "similar to" line: data-similar, where review.js asks
SIMILAR_K = "similar-k"  # how many nearest samples s lists
SIMILAR_LINE = "similar-line"  # "similar to #i · class": what the review list holds
SIMILAR = "similar-listing"  # the neighbours the review list holds (app/curate/similar_panel.py)
RELABEL_TO = "review-relabel-to"  # the review list's class picker
HOVER_BOX = "curate-hover"  # the map's hover card, opened and placed by assets/hover.js
# The shell's line for a failure of the open page's run (a damaged file): the server's
# callbacks (app/server.py ``_callback_error``) and assets/class_map.js write it.
PAGE_ERROR = "page-error"

# The names the scripts read them by: window.CURATOR_IDS.graph, ….
SHARED = {"graph": GRAPH, "map": MAP, "painted": PAINTED, "background": BACKGROUND,
          "undo": UNDO, "redo": REDO, "classPick": CLASS_PICK,
          "classList": CLASS_LIST, "epsSlider": EPS_SLIDER, "epsInput": EPS_INPUT,
          "msSlider": MS_SLIDER, "msInput": MS_INPUT, "status": STATUS,
          "statusData": STATUS_DATA, "model": MODEL,
          "reviewGrid": REVIEW_GRID,
          "reviewKey": REVIEW_KEY, "reviewFocus": REVIEW_FOCUS, "reviewCount": REVIEW_COUNT,
          "relabelTo": RELABEL_TO, "similarPanel": SIMILAR_PANEL, "similarK": SIMILAR_K,
          "similarLine": SIMILAR_LINE,
          "similar": SIMILAR,
          "hoverBox": HOVER_BOX,
          "pageError": PAGE_ERROR}


def script() -> str:
    """The ids as ``window.CURATOR_IDS`` (frozen), for ``/ids.js`` (app/server.py)."""
    return f"window.CURATOR_IDS = Object.freeze({json.dumps(SHARED, sort_keys=True)});\n"
