"""Role checks on the server: what the person behind a request may do (worker/people.py).

app/security.py puts the request's :class:`~worker.people.Person` on ``flask.g`` before any
route runs; every door that changes something asks :func:`require` first: the Curate
page's change channel (app/curate/changes.py: keep, drop, relabel, re-cluster, undo), Save
version (app/curate/versions_tab.py), job submission (app/job_view.py: export, train),
the New-run form and job cancelling. A refusal is the door's one-line alert, and nothing
is written. A queued job is checked again by the worker that runs it
(worker/people.py ``check_submitter``).
"""

from __future__ import annotations

from flask import g, has_request_context

from worker.people import job_action


def require(action: str) -> None:
    """Refuse ``action`` (a key of :data:`worker.people.ALLOWED`) in one line where the
    request's person may not do it. Outside a request (a test calling a function), no
    one is checked."""
    person = g.get("person") if has_request_context() else None
    if person is not None:
        person.require(action)


def require_job(kind: str) -> None:
    """:func:`require` for submitting a job of ``kind``."""
    require(job_action(kind))
