"""The page shell shared by every page: navigation bar and page container."""

from __future__ import annotations

import dash
import dash_bootstrap_components as dbc
from dash import dcc, html

from app.ids import PAGE_ERROR
from worker.pipeline.number_params import PARAMS


def shell() -> html.Div:
    nav = dbc.Navbar(
        dbc.Container([
            dbc.NavbarBrand("tsne-curator", href="/", class_name="fw-semibold"),
            dbc.Nav([
                dbc.NavItem(dbc.NavLink("Runs", href="/", active="exact")),
                dbc.NavItem(dbc.NavLink("Jobs", href="/jobs", active="exact")),
                dbc.NavItem(dbc.NavLink("Results", href="/results", active="partial")),
            ], navbar=True),
        ], fluid=True),
        color="light", class_name="border-bottom mb-3 py-1",
    )
    # Hidden until a callback of the open page fails on its run (app/server.py
    # ``_callback_error``); cleared when the page changes.
    problem = html.Div(id=PAGE_ERROR, role="alert", hidden=True,
                       className="alert alert-danger py-2 my-2")
    return html.Div([dcc.Location(id="url"), nav,
                     dbc.Container([problem, dash.page_container], fluid=True,
                                   class_name="pb-4")])


def small_button(label: str, id, color: str = "secondary", title: str | None = None  # noqa: A002
                 ) -> dbc.Button:
    """The pages' small outlined button (``id``: a string or a pattern-matching dict)."""
    return dbc.Button(label, id=id, color=color, outline=True, size="sm", title=title)


def error_alert(message: str) -> dbc.Alert:
    """A dismissable red alert with one line of text."""
    return dbc.Alert(message, color="danger", dismissable=True, class_name="py-2 my-2")


def info_alert(message, color: str = "success") -> dbc.Alert:
    return dbc.Alert(message, color=color, dismissable=True, duration=8000,
                     class_name="py-2 my-2")


def live_table(headers: tuple[str, ...], body_id: str) -> dbc.Table:
    """A compact table whose body a polling callback fills (Runs and Jobs pages)."""
    return dbc.Table([html.Thead(html.Tr([html.Th(h) for h in headers])),
                      html.Tbody(id=body_id)], size="sm", hover=True, class_name="align-middle")


# Every graph's Plotly config: nothing offers to upload a chart to a cloud service (Plotly's
# "Share chart…" button) in a tool that promises nothing leaves the machine.
LOCAL_ONLY = ("sendChartToCloud", "sendDataToCloud")
GRAPH_CONFIG = {"displaylogo": False, "showSendToCloud": False, "showEditInChartStudio": False,
                "modeBarButtonsToRemove": list(LOCAL_ONLY)}

GAUGE_COLORS = {"strong": "success", "fair": "warning", "weak": "danger"}


def feature_badges(meta: dict) -> list:
    """Badges on a run's features from its ``run.json``: "random weights" when the network
    was not pretrained, and the feature-quality gauge with its verdict (its advice in the
    tooltip). Empty before the extract and cluster steps."""
    from worker.pipeline.curation.gauge import judge
    from worker.pipeline.storage.rundir import step_record

    extract, evidence = step_record(meta, "extract"), step_record(meta, "evidence")
    out = []
    if extract.get("pretrained") is False:
        out.append(dbc.Badge("random weights", color="danger", class_name="me-1 feature-badge",
                             title=f"{extract.get('model')} started from random weights: its "
                                   "features know little about the images, so the flags are "
                                   "near chance"))
    if isinstance(evidence.get("gauge"), int | float):
        g = judge(float(evidence["gauge"]), extract)
        out.append(dbc.Badge(f"features {g.value:.2f} · {g.level}", color=GAUGE_COLORS[g.level],
                             class_name="me-1 gauge-badge", title=g.line))
    return out


def feature_advice(meta: dict) -> html.Div | None:
    """The gauge's verdict and what to do next, spelled out, when the flags need care
    (a fair or weak gauge); None when they are strong or not computed yet."""
    from worker.pipeline.curation.gauge import judge
    from worker.pipeline.storage.rundir import step_record

    value = step_record(meta, "evidence").get("gauge")
    if not isinstance(value, int | float):
        return None
    g = judge(float(value), step_record(meta, "extract") or None)
    if g.level == "strong":
        return None
    return html.Div(g.line, id="feature-advice",
                    className=f"small text-{GAUGE_COLORS[g.level]} mb-2")


def number_input(id_: str, name: str) -> dbc.Input:
    """A form's number box for parameter ``name``: its range and default from
    worker.pipeline.number_params, so the form agrees with the CLI and the check."""
    return dbc.Input(id=id_, type="number", size="sm", **PARAMS[name].form_bounds())
