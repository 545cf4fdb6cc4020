"""The Curate page is its components (app/curate/components.py): a per-class control added
as one component (here a toy one, inside the test) is placed, registered and drawn by the
one render path with no other edit."""

from __future__ import annotations

import sys
import types

from dash import Input, Output, html, no_update

from app.curate import components
from app.run_data import run_data
from worker.settings import Settings

HOST = {"Host": "127.0.0.1"}


def _toy() -> types.ModuleType:
    """A per-class control: the shown class's size, drawn by its render part, and a
    callback of its own (a button that says it was pressed)."""
    toy = types.ModuleType("toy_size")
    toy.PART, toy.SLOT = "toy", "side"
    toy.layout = lambda page: html.Div([html.Span(id="toy-size"),
                                        html.Button("press", id="toy-press"),
                                        html.Span(id="toy-said")])
    toy.OUTPUTS = {"size": Output("toy-size", "children")}
    toy.STATES = {}
    toy.render = lambda view, _states: {"size": no_update if view.code is None else
                                        f"{len(view.data.members[view.code])} in this class"}

    def register() -> None:
        from dash import callback

        callback(Output("toy-said", "children"), Input("toy-press", "n_clicks"),
                 prevent_initial_call=True)(lambda n: f"pressed {n}")

    toy.register = register
    return toy


def _request(dep: dict, values: dict) -> dict:
    """The renderer's request for callback ``dep``, every input and state from ``values``
    (``"id.property"`` → value; None elsewhere)."""
    def props(items: list[dict]) -> list[dict]:
        return [{**i, "value": values.get(f"{i['id']}.{i['property']}")} for i in items]

    outputs = [dict(zip(("id", "property"), o.split("@")[0].split("."), strict=True))
               for o in dep["output"].strip(".").split("...")]
    return {"output": dep["output"], "outputs": outputs[0] if len(outputs) == 1 else outputs,
            "changedPropIds": [f"{dep['inputs'][0]['id']}.{dep['inputs'][0]['property']}"],
            "inputs": props(dep["inputs"]), "state": props(dep["state"])}


def test_a_per_class_control_is_one_component(fresh_run, monkeypatch):
    from app.server import create_app

    monkeypatch.setattr(components, "COMPONENTS", (*components.COMPONENTS, _toy()))
    app = create_app(Settings(runs_root=fresh_run.path.parent))
    client = app.server.test_client()
    run_id = fresh_run.path.name
    with app.server.test_request_context("/", headers=HOST):
        page = str(sys.modules["pages.curate"].layout(run_id=run_id))
    assert "toy-size" in page and "toy-press" in page  # placed with the side components
    deps = client.get("/_dash-dependencies", headers=HOST).get_json()
    # Drawn by the one render path. (In a process that built an app before, Dash may list
    # that app's render callback too: the one with the toy is this app's.)
    renders = [d for d in deps if "curate-shown.data" in d["output"]
               and "toy-size.children" in d["output"]]
    assert len(renders) == 1
    render = renders[0]
    answer = client.post("/_dash-update-component", headers=HOST, json=_request(
        render, {"curate-class.data": 3, "curate-run.data": run_id})).get_json()
    size = len(run_data(fresh_run.path.parent, run_id).members[3])
    assert answer["response"]["toy-size"]["children"] == f"{size} in this class"
    assert "curate-graph" in answer["response"]  # the map's part came in the same answer
    pressed = next(d for d in deps if d["output"] == "toy-said.children")
    answer = client.post("/_dash-update-component", headers=HOST, json=_request(
        pressed, {"toy-press.n_clicks": 2})).get_json()
    assert answer["response"]["toy-said"]["children"] == "pressed 2"


def test_the_render_answer_is_plain_json_for_orjson(fresh_run, monkeypatch):
    """A class switch from the overview, a switch between classes and an edit (the last
    two answer with Patches) are encoded by orjson directly: a Patch left in the answer
    would send Plotly's encoder walking every marker in Python (most of a switch's
    server time, docs/benchmarks.md)."""
    import plotly.io._json as plotly_json

    from app.server import create_app

    app = create_app(Settings(runs_root=fresh_run.path.parent))
    client = app.server.test_client()
    run_id = fresh_run.path.name
    deps = client.get("/_dash-dependencies", headers=HOST).get_json()
    render = [d for d in deps if "curate-shown.data" in d["output"]][-1]

    def walked(*_args, **_kwargs):
        raise AssertionError("the answer went through Plotly's cleaning encoder")

    monkeypatch.setattr(plotly_json, "clean_to_json_compatible", walked)
    for class_value, shown in ((3, "all"), (4, 3), (4, 4)):
        answer = client.post("/_dash-update-component", headers=HOST, json=_request(render, {
            "curate-class.data": class_value, "curate-run.data": run_id,
            "curate-shown.data": shown, "curate-shown-rev.data": -1}))
        assert answer.status_code == 200, answer.get_data(as_text=True)[:300]
        assert "curate-graph" in answer.get_json()["response"]
