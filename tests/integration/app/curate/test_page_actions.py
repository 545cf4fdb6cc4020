"""The Curate page's callbacks as plain functions (app/curate/page_actions.py) on a copy of the
digits run, without a browser: parameters set and undone, decisions, auto eps, hover, the
model the browser is sent, memoized figures, why a point is flagged, and every value a
callback takes checked against its range with nothing stored when refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.curate import page_actions
from app.curate.key_actions import run_action
from app.run_data import current_state, run_data
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import check
from worker.pipeline.storage.curation_store import CurationStore


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


def test_set_params_ignores_echoes_and_records_changes(root):
    data = run_data(root, "digits")
    store = CurationStore(data.run.store)
    eps, ms = store.class_params()[0]
    rev = store.revision()
    assert page_actions.set_params(root, "digits", 0, round(eps, 4), ms, tolerance=1e-4) == rev
    rev2 = page_actions.set_params(root, "digits", 0, 0.7, ms)
    assert rev2 == rev + 1 and store.class_params()[0] == (0.7, ms)
    page_actions.set_params(root, "digits", 0, 1.1, 6, all_classes=True)
    assert set(store.class_params().values()) == {(1.1, 6)}
    with pytest.raises(InputError, match="eps must be"):
        page_actions.set_params(root, "digits", 0, -1, 5)
    with pytest.raises(InputError, match="min-samples must be a whole number"):
        page_actions.set_params(root, "digits", 0, 1.0, 0)
    # What the browser sends is checked like any other input.
    with pytest.raises(InputError, match="--eps must be a number > 0 .* got wide"):
        page_actions.set_params(root, "digits", 0, "wide", 5)
    with pytest.raises(InputError, match="min-samples must be"):
        page_actions.set_params(root, "digits", 0, 1.0, float("nan"))
    for code in (99, -1, "all", None):
        with pytest.raises(InputError, match="no class"):
            page_actions.set_params(root, "digits", code, 1.0, 5)
    assert set(store.class_params().values()) == {(1.1, 6)}  # the refusals stored nothing


def test_decide_bulk_undo(root):
    data = run_data(root, "digits")
    decision = "drop" if current_state(data).decisions.kept[10] else "keep"
    page_actions.set_decision(root, "digits", 10, decision)
    state = current_state(data)
    assert state.decisions.kept[10] == (decision == "keep")
    assert state.overrides == {10: decision}
    page_actions.bulk(root, "digits", [1, 2, 3], "drop")
    assert not current_state(data).decisions.kept[[1, 2, 3]].any()
    _, what = page_actions.undo_redo(root, "digits", redo=False)
    assert "drop 3 selected" in what and current_state(data).overrides == state.overrides
    with pytest.raises(InputError, match="select points first"):
        page_actions.bulk(root, "digits", [], "keep")
    with pytest.raises(InputError, match="sample"):
        page_actions.set_decision(root, "digits", 10**6, "keep")


def test_the_page_refuses_undo_and_redo_in_the_words_of_every_door(root):
    """The Curate page's Undo and Redo: nothing to do is the same line as ``curator undo``
    and ``Run.undo`` give, shown as the page's alert, and nothing is written."""
    import contextvars

    from dash._callback_context import context_value
    from dash._utils import AttributeDict

    from app import ids
    from app.curate.class_map import on_undo_redo
    from app.server import create_app
    from worker.pipeline.storage.curation_store import NOTHING_TO_REDO, NOTHING_TO_UNDO
    from worker.settings import Settings

    store = CurationStore(run_data(root, "digits").run.store)
    history = store.history()

    def click(button: str) -> dict:
        """The page's callback as Dash calls it when ``button`` is clicked."""
        def call() -> dict:
            context_value.set(AttributeDict(
                triggered_inputs=[{"prop_id": f"{button}.n_clicks", "value": 1}]))
            return on_undo_redo(1, None, "digits")

        return contextvars.copy_context().run(call)

    app = create_app(Settings(runs_root=root))
    with app.server.test_request_context("/"):
        rev = store.revision()
        for button, line in ((ids.UNDO, NOTHING_TO_UNDO), (ids.REDO, NOTHING_TO_REDO)):
            record = click(button)
            assert record["alert"] == line and record["rev"] == rev
            with pytest.raises(InputError) as e:
                page_actions.undo_redo(root, "digits", redo=button == ids.REDO)
            assert str(e.value) == line
        assert store.history() == history and store.revision() == rev
        page_actions.set_decision(root, "digits", 10, "drop")
        record = click(ids.UNDO)
        assert record["alert"] is None and record["rev"] == rev + 2
        assert click(ids.REDO)["alert"] is None and store.overrides() == {10: "drop"}


def test_auto_eps_and_hover(root):
    data = run_data(root, "digits")
    page_actions.auto_eps_for(root, "digits", 3, 8)
    eps, ms = CurationStore(data.run.store).class_params()[3]
    assert ms == 8 and eps > 0
    state = current_state(data)
    info = page_actions.hover_info(data, state, int(data.members[3][0]))
    assert info["label"] == "3" and len(info["neighbours"]) == 5
    rows = page_actions.class_counts(data, state)
    assert rows[-1]["class"] == "total" and rows[-1]["size"] == 1797


def test_client_model_carries_what_the_browser_needs(root):
    import base64

    from app.curate.figures import LOOKS, channels, marker_style

    page_actions.set_decision(root, "digits", 0, "drop")
    data = run_data(root, "digits")
    state = current_state(data)
    noise = page_actions.noise_per_class(data, state)
    code = int(data.samples.labels[0])
    model = page_actions.client_model(data, state, code, noise)
    looks = np.frombuffer(base64.b64decode(model["looks"]["bdata"]), np.uint8).reshape(-1, 2)
    idx = data.members[code]
    assert len(looks) == model["n"] == len(idx)
    # Looked up at the server's DBSCAN labels, the table gives the server's flags,
    # decisions and markers: the browser needs no rule of its own.
    is_noise = state.decisions.clusters[idx] == -1
    shown = [LOOKS[c] for c in looks[np.arange(len(idx)), is_noise.astype(int)]]
    assert [look.flagged for look in shown] == state.decisions.flagged[idx].tolist()
    assert [look.kept for look in shown] == state.decisions.kept[idx].tolist()
    assert [look.overridden for look in shown] == [int(i) in state.marks for i in idx]
    colours, symbols, sizes = marker_style(idx, state.decisions, state.marks, data.proposals)
    assert [look.symbol for look in shown] == symbols
    assert [look.size for look in shown] == sizes
    assert all(look.colour is None or channels(look.colour) == c
               for look, c in zip(shown, colours, strict=True))
    assert shown[int(np.searchsorted(idx, 0))].overridden
    assert sum(noise) == int(is_noise.sum() + (state.decisions.clusters[
        np.setdiff1d(np.arange(len(data.samples)), idx)] == -1).sum())
    assert (model["eps"], model["ms"]) == state.params[code]
    rows = page_actions.class_counts(data, state)
    text = page_actions.status_text(rows, noise, state.rule)
    assert text.startswith(f"{rows[-1]['kept']} of {rows[-1]['size']} kept · {sum(noise)} DBSCAN")


def test_clusterings_and_figures_are_memoized_per_revision(root, monkeypatch):
    from app import caching
    from app.run_data import cached_figure
    from app.server import create_app
    from worker.settings import Settings

    app = create_app(Settings(runs_root=root))
    built = []

    def build(state):
        built.append(state.revision)
        return {"revision": state.revision}

    import app.run_data as app_data

    def no_dbscan(*_a):
        pytest.fail("recomputed")

    with app.server.app_context():
        caching.clear()
        app_data._STATES.clear()
        data = run_data(root, "digits")
        # Every class still has the parameters the cluster step saved clusters.npy with:
        # the labels come from there, no DBSCAN runs.
        monkeypatch.setattr(app_data, "map_classes", no_dbscan)
        first = current_state(data)
        assert (first.decisions.clusters == np.load(data.run.path / "clusters.npy")).all()
        monkeypatch.undo()
        eps, ms = first.params[2]
        page_actions.set_params(root, "digits", 2, eps * 0.9, ms)  # class 2 changes
        data = run_data(root, "digits")
        first = current_state(data)  # computes class 2 only, into the labels cache
        assert sum(key[0] == "labels" for key in caching.labels) == 1
        # A second read computes nothing: the state is kept for its revision ...
        monkeypatch.setattr(app_data, "map_classes", no_dbscan)
        assert current_state(data) is first
        # ... and without it, the labels come from the labels cache.
        app_data._STATES.clear()
        again = current_state(data)
        assert (again.decisions.clusters == first.decisions.clusters).all()
        monkeypatch.undo()
        assert cached_figure(data, again, ("class", 0), lambda: build(again)) == \
            cached_figure(data, again, ("class", 0), lambda: build(again))
        assert built == [first.revision]  # built once for this revision
        page_actions.set_decision(root, "digits", 3, "drop")  # a new revision, a new figure
        later = current_state(data)
        cached_figure(data, later, ("class", 0), lambda: build(later))
        assert built == [first.revision, later.revision] and later.revision > first.revision


def test_messages_name_the_bad_value(root):
    with pytest.raises(InputError, match="eps must be a number greater than 0"):
        page_actions.set_params(root, "digits", 0, None, 5)
    with pytest.raises(InputError, match="min_samples must be a whole number"):
        page_actions.set_params(root, "digits", 0, 1.0, None)
    with pytest.raises(InputError, match="no run 'nope' in the runs root"):
        run_data(root, "nope")


def test_auto_eps_is_stored_unrounded(root):
    page_actions.auto_eps_for(root, "digits", 0, 5)
    eps = CurationStore(root / "digits" / "curation.sqlite").class_params()[0][0]
    assert eps != round(eps, 4)


def test_why_a_point_is_flagged_names_the_evidence(root):
    data = run_data(root, "digits")
    state = current_state(data)
    d = state.decisions
    wrong = np.flatnonzero(d.flagged & (data.samples.labels != data.samples.true_labels))
    i = int(wrong[0])
    text = page_actions.why(data, state, i)
    assert text.startswith("flagged: ") and "of 10 nearest neighbours are labelled" in text
    assert f"score {data.score[i]:.2f}" in text and "DBSCAN: " in text
    if page_actions.suggestion(data, state, i):
        assert f"suggested: {page_actions.suggestion(data, state, i)}" in text
    # Flagged as a suspect the evidence doubts (not an issue) that DBSCAN calls noise.
    band = np.flatnonzero(d.flagged & ~data.inputs.issue)
    assert len(band) and (d.clusters[band] == -1).all()
    why = page_actions.why(data, state, int(band[0]))
    assert why.startswith(page_actions.NOISE_WHY["adaptive"])
    kept = int(np.flatnonzero(d.kept)[0])
    assert page_actions.why(data, state, kept).startswith("kept by the rule")
    CurationStore(data.run.store).set_overrides([kept], "drop")
    assert page_actions.why(data, current_state(data), kept).startswith("dropped by a reviewer")


def test_relabel_to_the_suggestion_with_a_key(root):
    """The r key on a review row relabels it to its suggestion (app/curate/key_actions.py); the why
    line says so; relabelling back to the given class clears it."""
    from app.curate import review_queue as review

    data = run_data(root, "digits")
    state = current_state(data)
    sample = int(next(i for i in np.flatnonzero(state.decisions.flagged)
                      if page_actions.suggestion(data, state, int(i))))
    code = int(data.samples.labels[sample])
    suggested = page_actions.suggestion(data, state, sample)
    run_action(root, "digits", {"sample": sample, "action": "relabel", "label": suggested})
    state = current_state(data)
    assert state.relabels == {sample: data.samples.classes.index(suggested)}
    assert state.decisions.kept[sample] and state.marks[sample] == "keep"
    assert page_actions.why(data, state, sample).startswith(f"relabelled to {suggested}")
    review.relabel_to(root, "digits", [sample], data.samples.classes[code])  # back: cleared
    assert current_state(data).relabels == {}
    with pytest.raises(InputError, match="no class 'zebra'"):
        run_action(root, "digits", {"sample": sample, "action": "relabel", "label": "zebra"})
    with pytest.raises(InputError, match="no action"):
        run_action(root, "digits", {"sample": sample, "action": "toggle"})
    with pytest.raises(InputError, match="focus a row"):
        run_action(root, "digits", {"action": "keep"})


def test_bounds_the_data_set(fresh_run):
    """node-rank < nnodes, min_samples ≤ the class's size, perplexity < N/3, pca-dims ≤ D,
    each refused by the step that knows the bound, before anything is stored."""
    from tests.integration.conftest import curator
    from worker.pipeline.map.embedding import EmbeddingOptions, tsne_with_neighbours
    from worker.pipeline.storage.curation_store import CurationStore
    from worker.train.config import TrainConfig, check_numbers

    with pytest.raises(InputError, match=r"--node-rank must be .* < 2 \(below --nnodes\)"):
        check_numbers(TrainConfig(nnodes=2, node_rank=2))
    rev = CurationStore(fresh_run.store).revision()
    r = curator("cluster", str(fresh_run.path), "--min-samples", "5000")
    assert r.returncode == 2 and "(the class's size), got 5000" in r.stderr
    assert CurationStore(fresh_run.store).revision() == rev
    feats = fresh_run.load_features()[:60]
    for opts, message in ((EmbeddingOptions(perplexity=25), r"< 19\.6667 \(a third of the 60"),
                          (EmbeddingOptions(pca_dims=80), r"to 64 \(the 64 feature dim")):
        with pytest.raises(InputError, match=message):
            tsne_with_neighbours(feats, opts)
    assert math.isfinite(check("perplexity", "30"))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 0, 1e20, "2.5", "", None])
def test_callback_values_are_refused_with_nothing_stored(fresh_run, value):
    """The eps/min_samples callbacks' plain function: a bad value is an InputError (the
    page shows it inline) and the store does not change."""
    from app.curate import page_actions
    from worker.pipeline.storage.curation_store import CurationStore

    root = fresh_run.path.parent
    rev = CurationStore(fresh_run.store).revision()
    if value != "2.5":  # a fine eps; not a whole min_samples
        with pytest.raises(InputError):
            page_actions.set_params(root, "digits", 0, value, 5)
    with pytest.raises(InputError):
        page_actions.set_params(root, "digits", 0, 1.0, value)
    assert CurationStore(fresh_run.store).revision() == rev
