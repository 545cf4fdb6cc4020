"""``/similar/<run>/<sample>.json``: the s key's "similar to" listing, which the review
list's script puts in the grid itself (app/script_routes.py ``similar_json``,
assets/review.js ``askSimilar``)."""

from __future__ import annotations

import json
import sys
import time

import pytest

from tests.integration.app.curate.http import get
from tsne_curator import Run
from worker.settings import Settings


def _props(answer: dict) -> dict:
    ids = [cid for cid, _ in answer["props"]]
    assert len(ids) == len(set(ids)), "one entry per component"
    return dict(answer["props"])


def test_the_answer_holds_the_rows_run_similar_returns_and_every_value_for_dash(
        root, client, fresh_run):
    r = get(client, "/similar/digits/7.json?k=6")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    answer = json.loads(r.data)
    want = Run(fresh_run.path).similar(7, k=6)
    assert [row["sample"] for row in answer["rows"]] == want["index"].tolist()
    assert [row["distance"] for row in answer["rows"]] == pytest.approx(
        want["distance"].tolist(), abs=1e-4)
    props = _props(answer)
    # What the callbacks write when a listing starts: the rows as the grid's prop too, the
    # listing, its line, Back shown, and the queue's filter and buttons cleared.
    assert props["review-grid"] == {"rowData": answer["rows"], "filterModel": {}}
    assert props["similar-listing"]["data"]["samples"] == want["index"].tolist()
    assert props["similar-back-box"] == {"hidden": False}
    assert props["review-rev"]["data"]["similar"] == "sample:7:k6"
    assert "similar to #7" in json.dumps(props["similar-line"])
    assert props["review-findings"] == {"children": []}


def test_a_listing_already_shown_is_not_cleared_again(client):
    props = _props(json.loads(get(client, "/similar/digits/7.json?k=6&listing=1").data))
    assert "review-findings" not in props and "similar-back-box" not in props
    assert "similar-listing" in props and "review-rev" in props


@pytest.mark.parametrize("url", ["/similar/digits/100000.json", "/similar/digits/3.json?k=0",
                                 "/similar/digits/3.json?k=x"])
def test_a_refused_ask_writes_only_its_line(client, url):
    r = get(client, url)
    assert r.status_code == 200
    answer = json.loads(r.data)
    assert answer["rows"] is None and [cid for cid, _ in answer["props"]] == ["similar-line"]
    assert "text-danger" in json.dumps(answer["props"])


@pytest.mark.parametrize("url", ["/similar/nope/3.json", "/similar/digits/x.json",
                                 "/similar/digits/-1.json", "/similar/../digits/3.json",
                                 "/similar/digits/3"])
def test_no_such_run_or_sample_path_is_404(client, url):
    assert get(client, url).status_code == 404


def test_the_route_keeps_the_servers_guards(root):
    from app.server import create_app

    client = create_app(Settings(runs_root=root, auth_token="s3cret")).server.test_client()
    assert get(client, "/similar/digits/3.json").status_code == 401
    assert get(client, "/similar/digits/3.json?token=s3cret").status_code == 200
    other = client.get("/similar/digits/3.json?token=s3cret", headers={"Host": "evil.test"})
    assert other.status_code == 403


def test_opening_the_page_builds_the_search_space_the_first_s_reads(root, fresh_run):
    # The first s of a server then waits for its search only (similar_panel.warm_run).
    from app.server import create_app
    from worker.pipeline.map import similar

    def built() -> bool:
        return any(key[0] == str(fresh_run.path.resolve()) for key in similar.search_space.cache)

    app = create_app(Settings(runs_root=root))
    assert not built()
    with app.server.test_request_context("/"):
        sys.modules["pages.curate"].layout(run_id="digits")
    deadline = time.monotonic() + 60
    while not built() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert built(), "the page's warm-up did not build the run's search space"
