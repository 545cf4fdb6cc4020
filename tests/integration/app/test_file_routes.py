"""The run's files over HTTP (``/thumb``, ``/testthumb``, ``/background``, ``/download``):
what they serve, and that no URL reads a file outside the runs root (a run id through the
``run`` converter) or outside a run's exports folder, nor falls through to the page shell
(an empty or ``%2F``-led rest of the path included).
"""

from __future__ import annotations

import os
import shutil

import pytest

from worker.settings import Settings

HOST = {"Host": "127.0.0.1"}


@pytest.fixture
def served(fresh_run, tmp_path):
    """A client of an app over a runs root holding ``digits``, ``nested/digits``, a link
    ``escape`` to a run outside the root, and an export of ``digits``."""
    from app.server import create_app

    root = fresh_run.path.parent
    shutil.copytree(fresh_run.path, root / "nested" / "digits")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    shutil.copytree(fresh_run.path, outside / "digits")
    os.symlink(outside / "digits", root / "escape")
    export = fresh_run.exports / "mine"
    export.mkdir(parents=True)
    (export / "manifest.csv").write_text("index,path\n3,x.png\n")
    (fresh_run.exports / ".partial").mkdir()
    (fresh_run.exports / ".partial" / "manifest.csv").write_text("unfinished\n")
    (outside / "secret.txt").write_text("hunter2\n")
    os.symlink(outside / "secret.txt", export / "linked.csv")
    yield create_app(Settings(runs_root=root)).server.test_client()
    shutil.rmtree(outside)


def _get(client, url: str):
    return client.get(url, headers=HOST)


def test_images_of_runs_nested_or_not(served):
    for url in ("/thumb/digits/3.png", "/thumb/nested/digits/3.png", "/thumb/digits/0003.png",
                "/background/digits.png", "/background/nested/digits.png"):
        r = _get(served, url)
        assert r.status_code == 200 and r.data[:4] == b"\x89PNG", url
        assert r.headers["Cache-Control"].startswith("private, max-age="), url


def test_a_download_is_a_file_of_a_finished_export(served):
    r = _get(served, "/download/digits/exports/mine/manifest.csv")
    assert r.status_code == 200 and r.data == b"index,path\n3,x.png\n"
    assert "mine-manifest.csv" in r.headers["Content-Disposition"]
    for url in ("/download/digits/exports/.partial/manifest.csv",  # not finished
                "/download/digits/exports/mine/linked.csv",  # a link out of the exports
                "/download/digits/exports/mine/nothing.csv",
                "/download/digits/exports/mine",
                "/download/digits/run.json"):
        assert _get(served, url).status_code == 404, url


@pytest.mark.parametrize("url", [
    "/thumb/../digits/3.png", "/thumb/..%2Fdigits/3.png", "/thumb/%2E%2E/digits/3.png",
    "/thumb/..%2F..%2Fetc/0.png", "/thumb/%2Fetc/3.png", "/thumb/escape/3.png",
    "/testthumb/../digits/3.png", "/testthumb/escape/3.png",
    "/background/../digits.png", "/background/escape.png", "/background/%2Fetc.png",
    "/download/../digits/exports/mine/manifest.csv",
    "/download/escape/exports/mine/manifest.csv",
    "/download/digits/exports/..%2F..%2F/run.json",
    "/download/digits/exports/mine/..%2F..%2Frun.json",
    "/download/digits/exports/..%2F..%2Fescape/secret.txt",
])
def test_nothing_outside_the_runs_root_or_the_exports(served, url):
    r = _get(served, url)
    assert r.status_code == 404 and b"hunter2" not in r.data, (url, r.status_code)


@pytest.mark.parametrize("url", [
    "/thumb/digits/99999.png", "/thumb/digits/-1.png", "/thumb/digits/x.png",
    "/thumb/digits/%C2%B2.png", "/thumb/digits/3.jpg", "/thumb/digits/3", "/thumb/digits",
    "/thumb/", "/thumb", "/thumb//etc/3.png", "/map", "/thumb/nope/1.png",
    "/testthumb/digits/3.png", "/background/digits", "/background/nope.png", "/download/digits",
    "/download/digits/exports/mine/a/b.csv",
])
def test_a_malformed_or_missing_file_is_a_404_not_the_page_shell(served, url):
    r = _get(served, url)
    assert r.status_code == 404 and b"_dash-config" not in r.data, (url, r.status_code)


def test_a_damaged_run_file_is_a_404_with_its_line(served, fresh_run):
    fresh_run.thumbnails.write_bytes(b"not an array")
    r = _get(served, "/thumb/digits/3.png")
    assert r.status_code == 404 and r.mimetype == "text/plain" and b"\n" == r.data[-1:]
    assert b"Traceback" not in r.data and len(r.data.splitlines()) == 1


def test_the_run_converter_builds_urls_from_runs(served, fresh_run):
    from flask import url_for

    app = served.application
    with app.test_request_context("/", headers=HOST):
        assert url_for("images.thumb", run=fresh_run, index=3) == "/thumb/digits/3.png"
        assert url_for("images.background", run="nested/digits") == \
            "/background/nested/digits.png"
