"""The app as a WSGI callable for a WSGI server other than ``curator serve``'s waitress.

    gunicorn --threads 8 --bind 127.0.0.1:8050 'app.wsgi:application()'

Settings come from the environment (``CURATOR_*``), as for ``curator serve``; the Host
check allows the bound name only when ``CURATOR_HOST`` names it.
"""

from __future__ import annotations

from flask import Flask

from worker.settings import load_settings


def application() -> Flask:
    """Build the app from the environment's settings and return its Flask server."""
    from app.server import create_app

    return create_app(load_settings()).server
