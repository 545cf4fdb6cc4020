"""The Curate page's components, in the order the page places them.

Each is a module with ``PART`` (its name; a tab's id), ``SLOT`` (where the page puts it:
``"side"`` beside the map, ``"map"`` with the map, ``"tab"`` among the tabs over the
review list, with its ``TITLE``; ``BUILT_ON_OPEN``: a tab whose layout is built when it
is first opened), ``layout(page)`` and ``register()`` (its callbacks).
One that draws what the store holds also has a render part: ``OUTPUTS``, ``STATES`` and
``render(view, states)`` (:mod:`app.curate.render`). Adding a per-class control is one
such module and its entry here.
"""

from __future__ import annotations

from app.curate import class_list, class_map, hover_card, retrain, review_list, summary
from app.curate import eps_panel as params
from app.curate import export_tab as export
from app.curate import versions_tab as versions

COMPONENTS = (params, class_list, class_map, hover_card, review_list, summary, versions,
              export, retrain)


def render_parts() -> dict:
    """The components that draw from the store (name → module), for the render path."""
    return {c.PART: c for c in COMPONENTS if hasattr(c, "render")}
