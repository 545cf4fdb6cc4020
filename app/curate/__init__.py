"""The Curate page's components; ``app/pages/curate.py`` puts them together.

Each component owns its layout, its callbacks and its script's namespace, and writes only
its own outputs. It reads the page's stores below and other components' outputs as
inputs. It tells the page of a store change through its own change store
(:mod:`.changes`), and it draws what the store holds through its part of the one render
path (:mod:`.render`).

Components (:mod:`.components` lists them in the order the page places them):
:mod:`.params` (eps, min_samples, the rule's cut), :mod:`.class_list`, :mod:`.map` (the
plot, its toolbar and the status line), :mod:`.hover_card`, :mod:`.review_list`, and the
tabs :mod:`.summary`, :mod:`.export` and :mod:`.retrain`.
"""

from dataclasses import dataclass

from app import ids

# The page's own stores, which every component may read.
RUN = "curate-run"  # the run id
CLASS_PICK = ids.CLASS_PICK  # the class to show: a code or "all" (the class list writes it)
SHOWN = "curate-shown"  # the class the page shows: a code or "all" (render writes it)
SHOWN_REV = "curate-shown-rev"  # the store revision the page shows (render writes it)
ALERT = "curate-alert"  # holds the refused change's line (changes.register writes it)
TABS = "curate-tabs"  # the Review list / Summary / Export / Retrain tabs


def code_of(value) -> int | None:  # noqa: ANN001 - a store's value
    """The class code a store holds, or None for "all" (or nothing yet)."""
    return None if value in (None, "all") else int(value)


@dataclass(frozen=True)
class Page:
    """What a component's layout may need: the run's id, class names and metadata."""

    run_id: str
    classes: list[str]
    meta: dict
