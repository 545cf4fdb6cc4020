"""``/healthz``: what a load balancer or ``docker compose`` asks to know the server is up.
It needs no token (app/security.py lets it through), and says nothing about the runs."""

from __future__ import annotations

from flask import Blueprint, Response

health = Blueprint("health", __name__)


@health.get("/healthz")
def healthz() -> Response:
    return Response("ok\n", mimetype="text/plain")
