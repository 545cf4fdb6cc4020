"""The page shell shared by every page: navigation bar and page container."""

from __future__ import annotations

import dash
import dash_bootstrap_components as dbc
from dash import dcc, html


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
    return html.Div([dcc.Location(id="url"), nav,
                     dbc.Container(dash.page_container, fluid=True, class_name="pb-4")])


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
