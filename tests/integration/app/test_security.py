"""What the server refuses before Dash sees it, on a copy of the digits run: foreign Host
headers (DNS rebinding), large bodies, malformed callback payloads, bad tokens, component
suite traversal; and how its callbacks and scripts are wired (ids, triggers, one writer
per output, the debug script only with debug hooks)."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from worker.pipeline.errors import InputError
from worker.settings import Settings


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


@pytest.fixture
def client(root):
    from app.server import create_app

    return create_app(Settings(runs_root=root, max_body_bytes=64_000)).server.test_client()


def _hover_request(client, hover, run_id) -> dict:
    """A request for the Curate page's hover callback, as the renderer sends it."""
    deps = client.get("/_dash-dependencies").get_json()
    keys = [d["output"] for d in deps if d["output"] == "curate-hover-text.children"]
    assert keys, "the hover callback is registered"
    outputs = [dict(zip(("id", "property"), part.split("."), strict=True))
               for part in keys[0].strip(".").split("...")]
    return {"output": keys[0], "outputs": outputs[0] if len(outputs) == 1 else outputs,
            "changedPropIds": ["curate-graph.hoverData"],
            "inputs": [{"id": "curate-graph", "property": "hoverData", "value": hover}],
            "state": [{"id": "curate-run", "property": "data", "value": run_id}]}


def test_foreign_host_headers_are_refused(root, client):
    from app.server import create_app

    for host in ("localhost", "localhost:8050", "127.0.0.1:8050", "[::1]:8050"):
        assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:8050", "127.0.0.1.evil.example", ""):
        r = client.get("/healthz", headers={"Host": host})
        assert r.status_code == 403 and b"CURATOR_ALLOWED_HOSTS" in r.data, host
    allowed = create_app(Settings(runs_root=root, allowed_hosts=("gpu-box.lan",)))
    c2 = allowed.server.test_client()
    assert c2.get("/healthz", headers={"Host": "gpu-box.lan:8050"}).status_code == 200


def test_large_bodies_are_refused_unread(client):
    r = client.post("/_dash-update-component", data=b"x" * 100_000,
                    content_type="application/json")
    assert r.status_code == 413


@pytest.mark.parametrize("body", ["null", "[]", "{}", '"x"', "not json",
                                  '{"output": 3, "inputs": [], "changedPropIds": []}',
                                  '{"output": "a.b", "inputs": {}, "changedPropIds": []}'])
def test_malformed_callback_payloads_are_400(client, body):
    r = client.post("/_dash-update-component", data=body, content_type="application/json")
    assert r.status_code == 400 and b"Traceback" not in r.data


def test_a_tampered_run_id_or_value_is_400_not_500(client):
    ok = client.post("/_dash-update-component", content_type="application/json", data=json.dumps(
        _hover_request(client, {"points": [{"customdata": [3], "bbox": {}}]}, "digits")))
    assert ok.status_code == 200 and b"hover-facts" in ok.data
    for run_id, hover in (("../../etc", {"points": [{"customdata": [3]}]}),
                          ("digits", {"points": [{"customdata": ["x"]}]}),
                          ("digits", {"points": [{"customdata": [10**20]}]}),
                          ("digits", {"points": "nope"}),
                          ({"a": 1}, {"points": [{"customdata": [3]}]})):
        r = client.post("/_dash-update-component", content_type="application/json",
                        data=json.dumps(_hover_request(client, hover, run_id)))
        assert r.status_code in (200, 204, 400), (run_id, hover, r.status_code)
        assert b"Traceback" not in r.data and b"Error:" not in r.data


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                          lambda c: st.lists(c, max_size=3)
                          | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8))
def test_any_json_value_in_a_callback_is_never_a_500(client, value):
    r = client.post("/_dash-update-component", content_type="application/json",
                    data=json.dumps(_hover_request(client, value, "digits")))
    assert r.status_code < 500


def test_component_suite_traversal_is_404(client):
    for path in ("/_dash-component-suites/..%2f..%2fetc/passwd",
                 "/_dash-component-suites/dash/..%2f..%2f..%2fsetup.py"):
        assert client.get(path).status_code == 404, path


def test_tokens(root):
    from app.server import create_app

    with pytest.raises(InputError, match="printable ASCII"):
        create_app(Settings(runs_root=root, auth_token="pässwort"))
    c = create_app(Settings(runs_root=root, auth_token="s3cret")).server.test_client()
    assert c.get("/curate/digits").status_code == 401
    assert c.get("/curate/digits?token=w%C3%A4hrung").status_code == 401  # not a 500
    assert c.get("/curate/digits", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_a_request_is_its_token_holder_and_acts_as_their_role(root):
    """The request's person (worker/people.py) signs its decisions and is checked at the
    change channel: the one admin token, a person's token, a server with no token (its OS
    user, as admin); a viewer's keep is refused in one line and nothing is written; a
    revoked token is a 401 at the next request."""
    from app.curate import changes
    from app.security import guard
    from app.server import create_app
    from worker.people import add_token, revoke_token
    from worker.pipeline.storage.author import current_author, os_user

    def request(server, token: str):
        return server.test_request_context("/curate/digits", headers={
            "Host": "127.0.0.1", "Authorization": f"Bearer {token}"})

    for token, author in (("s3cret", "admin"), ("", os_user())):
        server = create_app(Settings(runs_root=root, auth_token=token)).server
        with request(server, token):
            assert guard() is None and current_author() == author
    viewer = add_token(root, "vera", "viewer")
    server = create_app(Settings(runs_root=root)).server
    wrote = []
    with request(server, viewer):
        assert guard() is None and current_author() == "vera"
        record = changes.apply("digits", wrote.append)
    assert wrote == [] and record["alert"].startswith("vera is a viewer here and cannot keep")
    revoke_token(root, "vera")
    with request(server, viewer):
        assert guard().status_code == 401
    # A damaged token file lets no one in, and says nothing of where it is.
    (root / ".curator-tokens.json").write_text("{not json")
    with request(server, viewer):
        refused = guard()
    assert refused.status_code == 503 and str(root) not in refused.get_data(as_text=True)
    (root / ".curator-tokens.json").unlink()


def test_the_servers_edges_answer_4xx_and_log_no_traceback(client, caplog):
    """Nesting, NaN/Infinity, over-long or odd run names."""
    hover = _hover_request(client, {"points": [{"customdata": [3], "bbox": {"x0": 1}}]},
                           "digits")
    caplog.set_level(logging.INFO)
    deep = "[" * 30_000 + "]" * 30_000  # under the 64 kB cap; far past recursion limits
    for raw in (deep, json.dumps(hover).replace('"digits"', "NaN"),
                json.dumps(hover).replace('"digits"', "Infinity"),
                json.dumps({**hover, "deep": json.loads("[" * 70 + "]" * 70)})):
        r = client.post("/_dash-update-component", data=raw,
                        headers={"Host": "127.0.0.1", "Content-Type": "application/json"})
        assert r.status_code == 400 and b"not strict JSON" in r.data, r.status_code
    assert client.post("/_dash-update-component", json=hover,
                       headers={"Host": "127.0.0.1"}).status_code == 200
    for page in ("curate", "results"):
        for run_id in ("x" * 5000, "a/" * 600, "..", "../etc"):
            r = client.get(f"/{page}/{run_id}", headers={"Host": "127.0.0.1"})
            assert r.status_code == 404, (page, run_id[:20], r.status_code)
        assert client.get(f"/{page}/digits", headers={"Host": "127.0.0.1"}).status_code == 200
    for url in ("/thumb/" + "x" * 5000 + "/1.png", "/background/" + "y" * 5000 + ".png",
                "/map/" + "z" * 5000 + "/1.json", "/map/digits/" + "9" * 5000 + ".json"):
        assert client.get(url, headers={"Host": "127.0.0.1"}).status_code == 404
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_ids_js_names_the_ids_the_scripts_use_and_no_script_spells_one(client):
    """Ids are named once (app/ids.py): /ids.js hands them to assets/*.js, which load
    after it, and no script holds one as a literal that could drift from the page's."""
    import json
    import re

    from app import ids

    page = client.get("/curate/digits").get_data(as_text=True)
    assert page.index('src="/ids.js"') < page.index("/assets/review.js")
    body = client.get("/ids.js").get_data(as_text=True)
    assert json.loads(re.search(r"Object\.freeze\((.*)\);", body).group(1)) == ids.SHARED
    for script in (ROOT / "assets").glob("*.js"):
        text = script.read_text()
        for value in ids.SHARED.values():
            assert f'"{value}' not in text and f"'{value}" not in text, (script.name, value)


def test_no_callback_has_more_than_three_triggers(client):
    """Every callback the app registers (server and clientside, the Curate page's included)
    has at most 3 inputs: a callback that follows more is one that mixes intents. A
    pattern-matching input (one id type, ALL) counts as one."""
    deps = client.get("/_dash-dependencies").get_json()
    assert any("curate-graph.figure" in d["output"] for d in deps)  # the page's are there
    crowded = {d["output"]: [i["id"] for i in d["inputs"]] for d in deps
               if len(d["inputs"]) > 3}
    assert crowded == {}


def test_each_output_has_one_writer_and_changes_go_through_the_channel(root):
    """The Curate page's components (app/curate/): no output is written by callbacks of
    two components; a callback that changes the store writes only its own component's
    change store (and that component's own outputs), which the render path follows
    directly; the alert line has one writer (the change channel); the status line has no
    callback writer at all (assets/class_map.js is its one), nor has what the map drew on a
    class switch (assets/class_map.js); and only the map's script writes the draft."""
    from app.server import create_app

    app = create_app(Settings(runs_root=root))
    deps = app.server.test_client().get("/_dash-dependencies").get_json()
    scripts = {"map": "app.curate.class_map", "classlist": "app.curate.class_list",
               "review": "app.curate.review_list", "hover": "app.curate.hover_card"}

    def owner(dep: dict) -> str:
        """The module a callback belongs to: its function's, or its script's."""
        script = dep.get("clientside_function") or {}
        if script.get("namespace") in scripts:
            return scripts[script["namespace"]]
        if script:  # an inline function: the change channel's merge is the only one
            return "app.curate.changes"
        return app.callback_map[dep["output"]]["callback"].__wrapped__.__module__

    def outputs(dep: dict) -> list[str]:
        return [o.split("@")[0] for o in dep["output"].strip(".").split("...") if o]

    # The render path draws every component's part in one request: each of its outputs
    # is the component's whose render() computes it.
    from app.curate.components import render_parts

    parts = {f"{o.component_id}.{o.component_property}": part.__name__
             for part in render_parts().values() for o in part.OUTPUTS.values()}
    writers: dict[str, set[str]] = {}
    for dep in deps:
        for out in outputs(dep):
            writers.setdefault(out, set()).add(parts.get(out, owner(dep)) if owner(dep) ==
                                               "app.curate.render" else owner(dep))
    assert {out: mods for out, mods in writers.items() if len(mods) > 1} == {}
    changers = [d for d in deps if "curate-change" in d["output"]]
    assert len(changers) == 9  # map 2, parameters 4, review list 3
    for dep in changers:
        assert not [o for o in outputs(dep) if o.startswith(
            ("curate-graph", "curate-class-list", "curate-alert"))], dep
    assert writers["curate-alert-line.children"] == {"app.curate.changes"}
    assert "curate-status.children" not in writers
    assert writers["curate-draft.data"] == {"app.curate.class_map"}
    assert "curate-map-painted.data" not in writers  # assets/class_map.js writes it
    renders = [d for d in deps if "curate-class-list.rowData" in d["output"]]
    assert len(renders) == 1
    assert {i["id"] for i in renders[0]["inputs"]} == {
        "curate-class", '{"part":["ALL"],"type":"curate-change"}'}


def test_the_debug_script_is_on_the_page_and_served_only_with_debug_hooks(root, monkeypatch):
    """assets/curate_debug.js (window.curateDebug, what tests and the bench read) is on the
    page and served only with CURATOR_DEBUG_HOOKS=1: a production page has no test hooks,
    and nothing else refers to them. The page's store (assets/00-curate-store.js) is there
    either way, before the scripts that use it."""
    from app.security import DEBUG_SCRIPT
    from app.server import create_app
    from worker.settings import load_settings

    monkeypatch.setenv("CURATOR_RUNS_ROOT", str(root))
    for value, on in ((None, False), ("0", False), ("1", True)):
        if value is None:
            monkeypatch.delenv("CURATOR_DEBUG_HOOKS", raising=False)
        else:
            monkeypatch.setenv("CURATOR_DEBUG_HOOKS", value)
        client = create_app(load_settings()).server.test_client()
        page = client.get("/curate/digits").get_data(as_text=True)
        assert (DEBUG_SCRIPT in page) == on, value
        assert page.index("/assets/00-curate-store.js") < page.index("/assets/classlist.js")
        for url in (f"/assets/{DEBUG_SCRIPT}", f"/assets/./{DEBUG_SCRIPT}"):
            assert client.get(url).status_code == (200 if on else 404), (value, url)
    monkeypatch.setenv("CURATOR_DEBUG_HOOKS", "maybe")
    with pytest.raises(InputError, match="CURATOR_DEBUG_HOOKS must be 1 or 0"):
        load_settings()
    # What only the debug script may name is named nowhere else among the page's scripts.

    for script in (ROOT / "assets").glob("*.js"):
        if script.name != DEBUG_SCRIPT:
            assert "curateDebug" not in script.read_text(), script.name
