"""The Curate page's components (app/pages/curate.py puts them together).

Each component owns its layout, its callbacks and its script's namespace, and writes only
its own outputs; it reads other components' outputs (the map's hover, the page's run) as
inputs. Components so far: :mod:`.hover_card`. The page's other parts (parameters, class
list, map, review list, the Summary / Export / Retrain panels) still live in the page
module, ``app/class_panel.py``, ``app/review_panel.py`` and ``app/panels.py``.
"""

# The page's own stores, which every component may read.
RUN = "curate-run"  # the run id
