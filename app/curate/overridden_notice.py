"""The line that tells a reviewer, when they open a run's Curate page, which of their
decisions another person has since replaced, and by whom
(worker/pipeline/storage/decision_log.py ``overridden``): two reviewers on one run both
have their decisions recorded, the later one stands, and the earlier author learns of it
at their next visit."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import html

from worker.pipeline.storage.author import current_author
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.decision_log import overridden

SHOWN = 5  # the newest few, named; the rest counted (curator history lists them all)


def notice(store: CurationStore, classes: list[str]) -> dbc.Alert | None:
    """A dismissable line naming the request's person's decisions that someone else
    replaced or undid ("#17: your keep → drop by rui, 11-29 06:01"), or None when none
    are."""
    rows = overridden(store, current_author(), limit=100)
    if not rows:
        return None

    def value(row: dict, key: str) -> str:
        v = row[key]
        if v is None:
            return "none"
        return classes[int(v)] if row["what"] == "label" else str(v)

    def change(row: dict) -> str:
        if row["undone"]:
            return f"your {value(row, 'mine')} undone by {row['by']}"
        return f"your {value(row, 'mine')} → {value(row, 'theirs')} by {row['by']}"

    named = [f"#{r['sample']}: {change(r)}, {r['at'][5:16].replace('T', ' ')}"
             for r in rows[:SHOWN]]
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    return dbc.Alert([html.B(f"{len(rows)} of your decisions were replaced or undone by "
                             "someone else: "), "; ".join(named), more,
                      " ('curator history RUN --sample I' lists each sample's decisions)."],
                     color="warning", dismissable=True, class_name="py-1 my-1 small",
                     id="curate-overridden")
