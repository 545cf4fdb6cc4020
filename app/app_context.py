"""What the app serving the current request uses: its settings and where it sends jobs.

Pages and components read these through Flask's ``current_app`` instead of importing the
app factory (app/server.py), which imports the components for its routes.
"""

from __future__ import annotations

from flask import current_app

from worker.jobs.dispatchers import Dispatcher
from worker.settings import Settings


def settings() -> Settings:
    """The settings of the app serving the current request."""
    return current_app.config["CURATOR_SETTINGS"]


def dispatcher() -> Dispatcher:
    """Where the app sends jobs (Celery with a broker, else in-process threads)."""
    return current_app.config["CURATOR_DISPATCHER"]
