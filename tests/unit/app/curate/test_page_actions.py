"""The Curate page's callbacks as plain functions (app/curate/page_actions.py), on values alone:
the eps slider's range and which controls an update changes."""

from __future__ import annotations

from app.curate import page_actions


def test_slider_range_is_round_and_roomy():
    assert page_actions.slider_max(2.96) == 9.0
    assert page_actions.slider_max(0.01) == 0.5
    assert page_actions.slider_max(40) == 200


def test_control_updates_change_only_what_differs():
    v = page_actions.ControlValues(eps=2.5, min_samples=5, eps_max=6.0)
    shows = {"eps": 2.50004, "eps_box": 2.5, "eps_max": 6.0, "ms": 5, "ms_box": 5}
    assert page_actions.control_updates(v, shows, rescale=False) == {}
    # A slid eps: the box follows; the slider's range stays under the user's hand.
    assert page_actions.control_updates(v, {**shows, "eps_box": 3.1, "eps_max": 9.0},
                                 rescale=False) == {"eps_box": 2.5}
    # A refused or half-typed value goes back; a stored eps past the range widens it.
    assert page_actions.control_updates(v, {**shows, "ms_box": None, "eps": "x"},
                                 rescale=False) == {"ms_box": 5, "eps": 2.5}
    assert page_actions.control_updates(v, {**shows, "eps_max": 2.0}, rescale=False) == {
        "eps_max": 6.0, "eps_step": 0.03}
    assert page_actions.control_updates(v, shows, rescale=True) == {
        "eps_max": 6.0, "eps_step": 0.03}
