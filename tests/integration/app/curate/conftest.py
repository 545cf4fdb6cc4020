"""What the Curate page's route tests share: a private copy of the digits run in its own
runs root, and the app's test client on it."""

from __future__ import annotations

import pytest

from worker.settings import Settings


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


@pytest.fixture
def client(root):
    from app.server import create_app

    return create_app(Settings(runs_root=root)).server.test_client()
