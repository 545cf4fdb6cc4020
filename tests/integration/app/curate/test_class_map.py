"""``/map/<run>/<class>.json``: a class's trace for the map to draw a class switch itself
(app/curate/class_map.py ``class_answer``, assets/class_map.js)."""

from __future__ import annotations

import orjson
import pytest

from app.curate.figures import class_figure, class_trace
from app.run_data import current_state, run_data
from tests.integration.app.curate.http import get
from worker.pipeline.storage.curation_store import CurationStore
from worker.settings import Settings


def test_the_answer_is_the_class_trace_the_server_would_draw_at_the_stored_revision(
        root, client):
    data = run_data(root, "digits")
    state = current_state(data)
    r = get(client, "/map/digits/3.json")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    answer = orjson.loads(r.data)
    assert answer["class"] == 3 and answer["revision"] == state.revision
    # The trace the render path sends (a plain dict, typed arrays as base64), and the class
    # view's frame: its axes' pin and layout, as class_figure builds them.
    want = class_trace(data.embedding, data.members[3], state.decisions, state.marks,
                       data.proposals)
    assert answer["trace"] == orjson.loads(orjson.dumps({**want, "meta": {"class": 3}}))
    frame = class_figure(data.embedding, {}, "/background/digits.png", True, data.bounds)
    assert answer["frame"] == orjson.loads(orjson.dumps(
        {"data": frame["data"][:1], "layout": frame["layout"]}))

    # Held at the store's revision: nothing to send. A change makes the held one stale.
    assert get(client, f"/map/digits/3.json?have={state.revision}").status_code == 204
    store = CurationStore(data.run.store)
    sample = int(data.members[3][0])
    store.set_overrides([sample], "drop")
    r = get(client, f"/map/digits/3.json?have={state.revision}")
    assert r.status_code == 200
    answer = orjson.loads(r.data)
    assert answer["revision"] == store.revision() > state.revision
    assert answer["trace"]["customdata"][0] == sample
    assert answer["trace"]["marker"]["symbol"][0] != want["marker"]["symbol"][0]


@pytest.mark.parametrize("url", ["/map/digits/10.json", "/map/digits/-1.json",
                                 "/map/digits/x.json", "/map/digits/%C2%B2.json",
                                 "/map/digits/3", "/map/digits/3.png",
                                 "/map/nope/3.json", "/map/../digits/3.json", "/map/3.json"])
def test_no_such_run_or_class_is_404(client, url):
    assert get(client, url).status_code == 404


def test_the_route_keeps_the_servers_guards(root):
    from app.server import create_app

    client = create_app(Settings(runs_root=root, auth_token="s3cret")).server.test_client()
    assert get(client, "/map/digits/3.json").status_code == 401
    assert get(client, "/map/digits/3.json?token=s3cret").status_code == 200
    r = client.get("/map/digits/3.json?token=s3cret", headers={"Host": "evil.example"})
    assert r.status_code == 403
