"""The Curate page's callbacks as plain functions, and the app's routes, without a browser."""

from __future__ import annotations

import numpy as np
import pytest

from app.curate import class_list, logic
from app.curate.key_actions import run_action
from app.run_data import current_state, run_data
from worker.pipeline.errors import InputError
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.rundir import RunDir


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


def test_set_params_ignores_echoes_and_records_changes(root):
    data = run_data(root, "digits")
    store = CurationStore(data.run.store)
    eps, ms = store.class_params()[0]
    rev = store.revision()
    assert logic.set_params(root, "digits", 0, round(eps, 4), ms, tolerance=1e-4) == rev
    rev2 = logic.set_params(root, "digits", 0, 0.7, ms)
    assert rev2 == rev + 1 and store.class_params()[0] == (0.7, ms)
    logic.set_params(root, "digits", 0, 1.1, 6, all_classes=True)
    assert set(store.class_params().values()) == {(1.1, 6)}
    with pytest.raises(InputError, match="eps must be"):
        logic.set_params(root, "digits", 0, -1, 5)
    with pytest.raises(InputError, match="min-samples must be a whole number"):
        logic.set_params(root, "digits", 0, 1.0, 0)
    # What the browser sends is checked like any other input.
    with pytest.raises(InputError, match="--eps must be a number > 0 .* got wide"):
        logic.set_params(root, "digits", 0, "wide", 5)
    with pytest.raises(InputError, match="min-samples must be"):
        logic.set_params(root, "digits", 0, 1.0, float("nan"))
    for code in (99, -1, "all", None):
        with pytest.raises(InputError, match="no class"):
            logic.set_params(root, "digits", code, 1.0, 5)
    assert set(store.class_params().values()) == {(1.1, 6)}  # the refusals stored nothing


def test_decide_bulk_undo(root):
    data = run_data(root, "digits")
    decision = "drop" if current_state(data).decisions.kept[10] else "keep"
    logic.set_decision(root, "digits", 10, decision)
    state = current_state(data)
    assert state.decisions.kept[10] == (decision == "keep")
    assert state.overrides == {10: decision}
    logic.bulk(root, "digits", [1, 2, 3], "drop")
    assert not current_state(data).decisions.kept[[1, 2, 3]].any()
    _, what = logic.undo_redo(root, "digits", redo=False)
    assert "drop 3 selected" in what and current_state(data).overrides == state.overrides
    with pytest.raises(InputError, match="select points first"):
        logic.bulk(root, "digits", [], "keep")
    with pytest.raises(InputError, match="sample"):
        logic.set_decision(root, "digits", 10**6, "keep")


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
                logic.undo_redo(root, "digits", redo=button == ids.REDO)
            assert str(e.value) == line
        assert store.history() == history and store.revision() == rev
        logic.set_decision(root, "digits", 10, "drop")
        record = click(ids.UNDO)
        assert record["alert"] is None and record["rev"] == rev + 2
        assert click(ids.REDO)["alert"] is None and store.overrides() == {10: "drop"}


def test_auto_eps_and_hover(root):
    data = run_data(root, "digits")
    logic.auto_eps_for(root, "digits", 3, 8)
    eps, ms = CurationStore(data.run.store).class_params()[3]
    assert ms == 8 and eps > 0
    state = current_state(data)
    info = logic.hover_info(data, state, int(data.members[3][0]))
    assert info["label"] == "3" and len(info["neighbours"]) == 5
    rows = logic.class_counts(data, state)
    assert rows[-1]["class"] == "total" and rows[-1]["size"] == 1797


def test_slider_range_is_round_and_roomy():
    assert logic.slider_max(2.96) == 9.0
    assert logic.slider_max(0.01) == 0.5
    assert logic.slider_max(40) == 200


def test_routes_and_bad_run_ids(root):
    from app.server import create_app
    from worker.settings import Settings

    app = create_app(Settings(runs_root=root))
    client = app.server.test_client()
    assert client.get("/healthz").data == b"ok\n"
    png = client.get("/thumb/digits/5.png")
    assert png.status_code == 200 and png.data[:4] == b"\x89PNG"
    for path in ("/thumb/digits/99999.png", "/thumb/nope/1.png", "/thumb/../digits/1.png",
                 "/download/digits/exports/x/manifest.csv", "/download/digits/run.json"):
        assert client.get(path).status_code == 404, path
    page = client.get("/curate/digits")
    assert page.status_code == 200 and b"_dash-renderer" in page.data or b"dash" in page.data
    assert np.isfinite(run_data(root, "digits").embedding).all()


def test_broker_down_is_an_alert_not_a_crash(root):
    from dash import html

    from app.job_view import submit
    from app.server import create_app
    from worker.settings import Settings

    app = create_app(Settings(runs_root=root, broker_url="redis://127.0.0.1:6399/0"))
    with app.server.test_request_context("/"):
        job, alert, poll_disabled = submit("digits", "export", {"format": "csv", "name": "x"})
    text = str(alert.children if not isinstance(alert, html.Div) else alert)
    assert "cannot reach the broker" in text and poll_disabled is True
    # Curation still works without the broker.
    assert logic.set_decision(root, "digits", 4, "drop") > 0


def runs_page():
    """The Runs page module as Dash imported it (``pages.runs``): importing it again as
    ``app.pages.runs`` would register the page twice."""
    import sys

    return sys.modules["pages.runs"]


def form(*fields: object) -> object:
    """The New-run form's fields, in the page's ``RunForm`` order."""
    return runs_page().RunForm(*fields)


def test_new_run_form_validation(root):
    from app.server import create_app
    from worker.settings import Settings

    app = create_app(Settings(runs_root=root))
    new_run_params = runs_page().new_run_params
    with app.server.test_request_context("/"):
        for name in ("", "../x", "a/b", "digits"):
            with pytest.raises(InputError):
                new_run_params(form(name, "digits", "train", None, "label", None, 0,
                                    "pixels", None, 0, 30))
        with pytest.raises(InputError, match="unknown dataset spec"):
            new_run_params(form("new", "imagenet", "train", None, "label", None, 0,
                                "pixels", None, 0, 30))
        for noise, finetune, perplexity, message in (
                (float("nan"), 0, 30, "--inject-noise must be"), (1.5, 0, 30, "inject-noise"),
                (0, 1e20, 30, "--finetune must be"), (0, "2.5", 30, "--finetune must be"),
                (0, 0, float("inf"), "--perplexity must be"), (0, 0, -5, "--perplexity")):
            with pytest.raises(InputError, match=message):
                new_run_params(form("new", "digits", "train", None, "label", None, noise,
                                    "pixels", None, finetune, perplexity))
        run_id, params = new_run_params(form("new", "digits", "train", None, "label", None,
                                             0.1, "pixels", None, 0, 25))
    assert run_id == "new" and params.dataset.inject_noise == 0.1
    assert params.embedding.perplexity == 25.0 and params.features.model == "pixels"


def test_the_form_reads_files_only_under_the_data_roots(root, tmp_path):
    from app.server import create_app
    from worker.settings import Settings

    data = tmp_path / "data"
    (data / "imgs").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n")
    app = create_app(Settings(runs_root=root, data_roots=(data,)))
    new_run_params = runs_page().new_run_params
    with app.server.test_request_context("/"):
        for spec, labels, weights, what in (
                (f"folder:{tmp_path}", None, None, "dataset"),
                ("digits", str(secret), None, "labels CSV"),
                ("digits", f"{data}/../secret.txt", None, "labels CSV"),
                ("digits", None, "/etc/passwd", "weights")):
            with pytest.raises(InputError, match=f"the {what} must be under a data root") as e:
                new_run_params(form("new", spec, "train", labels, "label", None, 0,
                                    "pixels", weights, 0, 30))
            assert "hunter2" not in str(e.value)
        run_id, params = new_run_params(form("new", f"folder:{data}/imgs", "train", None,
                                             "label", None, 0, "pixels", None, 0, 30))
    assert str(params.dataset.spec) == f"folder:{data}/imgs"


def test_a_form_run_skips_links_that_leave_the_data_roots(root, tmp_path, small_folder):
    """The New-run form's pipeline job (run in-process, as the app's dispatcher
    runs it) never reads a linked file or class folder that leaves the dataset folder."""
    import shutil

    from app.server import create_app
    from tests.unit.test_datasets import _links_out
    from worker.jobs.execution import run_job
    from worker.pipeline.storage.runlock import claim_out_dir
    from worker.settings import Settings

    data = tmp_path / "data"
    shutil.copytree(small_folder, data / "imgs")
    _links_out(data / "imgs", tmp_path / "outside")
    app = create_app(Settings(runs_root=root, data_roots=(data,)))
    with app.server.test_request_context("/"):
        run_id, params = runs_page().new_run_params(form(
            "linked", f"folder:{data}/imgs", "train", None, "label", None, 0, "pixels", None,
            0, 30))
    claim_out_dir(root / run_id)  # as the form's start_run does before it submits the job
    run_job(root, run_id, "pipeline", params.model_dump(mode="json"), "job-linked")
    run = RunDir(root / "linked")
    assert {p for p, _ in run.read_skipped()} == {"cat/leak.jpg", "evil/", "empty/"}
    assert len(run.read_samples()) == 91 and "evil" not in run.read_samples().classes


def test_client_model_carries_what_the_browser_needs(root):
    import base64

    from app.curate.figures import LOOKS, channels, marker_style

    logic.set_decision(root, "digits", 0, "drop")
    data = run_data(root, "digits")
    state = current_state(data)
    noise = logic.noise_per_class(data, state)
    code = int(data.samples.labels[0])
    model = logic.client_model(data, state, code, noise)
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
    rows = logic.class_counts(data, state)
    text = logic.status_text(rows, noise, state.rule)
    assert text.startswith(f"{rows[-1]['kept']} of {rows[-1]['size']} kept · {sum(noise)} DBSCAN")


def test_proposed_marks_are_drawn_apart_from_drops():
    """A finding's mark below its drop cut is drawn in its kind's symbol and the proposed
    colour, and counts as kept; a drop by the kind, a flag by the rule and a reviewer's
    decision each win over it."""
    from app.curate.figures import (
        FINDING_COLOUR,
        FINDING_MARKS,
        KEEP_COLOUR,
        LOOKS,
        NOISE_COLOUR,
        PROPOSED_COLOUR,
        SYMBOLS,
        channels,
        drawn_kinds,
        finding_slots,
        look_codes,
        marker_style,
        override_codes,
    )
    from worker.pipeline.map.clustering import Decisions

    kind, other = drawn_kinds()[0], drawn_kinds()[-1]
    clusters = np.array([0, 0, -1, -1, 0, 0])
    flagged = np.array([False, False, False, True, False, False])
    kept = np.array([True, False, True, False, True, False])
    reason = np.array(["cluster", kind.name, "noise", "noise", "override_keep", kind.name])
    # the last: dropped by one kind, proposed by another
    proposal = np.array([kind.name, "", kind.name, kind.name, kind.name, other.name])
    marks = {4: "keep"}
    n = len(kept)
    colours, symbols, _ = marker_style(np.arange(n), Decisions(clusters, flagged, kept, reason),
                                       marks, proposal)
    mark = FINDING_MARKS[kind.symbol][0]
    assert symbols == [mark, mark, mark, SYMBOLS["x"], SYMBOLS["diamond"], mark]
    assert colours == [channels(c) for c in (PROPOSED_COLOUR, FINDING_COLOUR, PROPOSED_COLOUR,
                                             NOISE_COLOUR, KEEP_COLOUR, FINDING_COLOUR)]
    codes = look_codes(flagged, clusters == -1, override_codes(np.arange(n), marks),
                       finding_slots(reason, proposal))
    assert [LOOKS[c].kept for c in codes] == kept.tolist()


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
        logic.set_params(root, "digits", 2, eps * 0.9, ms)  # class 2 changes
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
        logic.set_decision(root, "digits", 3, "drop")  # a new revision, a new figure
        later = current_state(data)
        cached_figure(data, later, ("class", 0), lambda: build(later))
        assert built == [first.revision, later.revision] and later.revision > first.revision


def test_job_timing_extrapolates_the_current_phase(tmp_path):
    """ETA from the phase's own start: a new total (ingest → extract) restarts the clock."""
    from datetime import datetime, timedelta

    from app.job_view import job_duration, job_timing
    from worker.pipeline.storage.job_store import JobStore

    jobs = JobStore(tmp_path / "curation.sqlite")
    job_id = jobs.create("train", {})
    jobs.start(job_id, "here:1")
    jobs.progress(job_id, 0, 100, "ingest")
    first = jobs.get(job_id)["phase_started_at"]
    jobs.progress(job_id, 50, 100, "ingest")
    assert jobs.get(job_id)["phase_started_at"] == first
    jobs.progress(job_id, 0, 400, "train")  # a new phase
    jobs.progress(job_id, 100, 400, "train")
    job = jobs.get(job_id)
    start = datetime.fromisoformat(job["phase_started_at"])
    text = job_timing(job, now=start + timedelta(seconds=30))
    assert "about 1:30 left" in text and text.startswith("elapsed ")
    job = {**job, "status": "succeeded",
           "finished_at": (datetime.fromisoformat(job["started_at"])
                           + timedelta(seconds=3725)).isoformat()}
    assert job_duration(job) == "1:02:05" and job_timing(job) == "took 1:02:05"
    assert job_timing({**job, "started_at": None}) == ""


def test_a_finished_job_reads_done_not_its_last_step():
    from app.job_view import job_status_text

    job = {"status": "succeeded", "message": "ingest: decoding images", "error": None,
           "total": 10, "done": 10}
    assert job_status_text(job) == "done"
    assert job_status_text({**job, "status": "failed", "error": "x failed"}) == "x failed"
    assert job_status_text({**job, "status": "running"}) == "ingest: decoding images"


def test_a_training_not_started_yet_says_so_not_step_0_of_0():
    from worker.train.launch import TrainConfig, progress_message

    assert progress_message(TrainConfig(epochs=3), None, []) == "train: starting the processes"
    live = {"epoch": 0, "step": 5, "total_steps": 30}
    assert progress_message(TrainConfig(epochs=3), live, []) == "train: epoch 1/3, step 5/30"
    assert progress_message(TrainConfig(epochs=3), {**live, "loss": 2.30259}, []) == \
        "train: epoch 1/3, step 5/30, loss 2.303"


def test_results_page_reads_trainings_and_gives_a_verdict(root):
    """The Results page's pieces on a run with an experiment's results.csv."""
    import csv as csvmod
    import sys

    from app.server import create_app
    from worker.settings import Settings

    create_app(Settings(runs_root=root))  # Dash imports the pages as pages.<name>
    page = sys.modules["pages.results"]
    folder = root / "digits" / "experiments" / "e"
    folder.mkdir(parents=True)
    with open(folder / "results.csv", "w", newline="") as fh:
        w = csvmod.DictWriter(fh, ["subset", "batch_size", "seed", "final_test_acc",
                                   "train_size"])
        w.writeheader()
        for s, accs in (("full", (0.9, 0.91, 0.905)), ("filtered", (0.95, 0.951, 0.952)),
                        ("random", (0.89, 0.9, 0.91))):
            w.writerows({"subset": s, "batch_size": 32, "seed": k, "final_test_acc": a,
                         "train_size": 100} for k, a in enumerate(accs))
    view = str(page.experiment_view(folder))
    assert "filtered is better than full" in view and "95.10% ± 0.10" in view
    fig = page.training_curves([{"name": "t", "config": {"epochs": 3}, "metrics": [
        {"epoch": e, "test_acc": 0.5, "loss": 1.0} for e in range(3)]}], n_classes=10)
    assert tuple(fig.layout.yaxis.range) == (0, 100) and fig.layout.xaxis.tickformat == "d"
    assert fig.layout.legend.orientation == "h" and fig.layout.shapes[0].y0 == 10
    # Pruning by value: pruned@F judged against random@F, and the figure of
    # accuracy against the fraction kept under the table.
    pruned = root / "digits" / "experiments" / "p"
    pruned.mkdir()
    with open(pruned / "results.csv", "w", newline="") as fh:
        w = csvmod.DictWriter(fh, ["subset", "batch_size", "seed", "final_test_acc",
                                   "train_size", "seconds", "subset_seconds"])
        w.writeheader()
        for s, n, accs in (("full", 100, (0.9, 0.91, 0.905)),
                           ("pruned@0.5", 45, (0.88, 0.885, 0.884)),
                           ("random@0.5", 45, (0.84, 0.845, 0.842))):
            w.writerows({"subset": s, "batch_size": 32, "seed": k, "final_test_acc": a,
                         "train_size": n, "seconds": 60, "subset_seconds": 0.2}
                        for k, a in enumerate(accs))
    view = str(page.experiment_view(pruned))
    assert "pruned@0.5 is better than random@0.5" in view and "experiment-pruning" in view


def test_messages_name_the_bad_value(root):
    with pytest.raises(InputError, match="eps must be a number greater than 0"):
        logic.set_params(root, "digits", 0, None, 5)
    with pytest.raises(InputError, match="min_samples must be a whole number"):
        logic.set_params(root, "digits", 0, 1.0, None)
    with pytest.raises(InputError, match="no run 'nope' in the runs root"):
        run_data(root, "nope")


def test_auto_eps_is_stored_unrounded(root):
    logic.auto_eps_for(root, "digits", 0, 5)
    eps = CurationStore(root / "digits" / "curation.sqlite").class_params()[0][0]
    assert eps != round(eps, 4)


def test_why_a_point_is_flagged_names_the_evidence(root):
    data = run_data(root, "digits")
    state = current_state(data)
    d = state.decisions
    wrong = np.flatnonzero(d.flagged & (data.samples.labels != data.samples.true_labels))
    i = int(wrong[0])
    text = logic.why(data, state, i)
    assert text.startswith("flagged: ") and "of 10 nearest neighbours are labelled" in text
    assert f"score {data.score[i]:.2f}" in text and "DBSCAN: " in text
    if logic.suggestion(data, state, i):
        assert f"suggested: {logic.suggestion(data, state, i)}" in text
    # Flagged as a suspect the evidence doubts (not an issue) that DBSCAN calls noise.
    band = np.flatnonzero(d.flagged & ~data.inputs.issue)
    assert len(band) and (d.clusters[band] == -1).all()
    assert logic.why(data, state, int(band[0])).startswith(logic.NOISE_WHY["adaptive"])
    kept = int(np.flatnonzero(d.kept)[0])
    assert logic.why(data, state, kept).startswith("kept by the rule")
    CurationStore(data.run.store).set_overrides([kept], "drop")
    assert logic.why(data, current_state(data), kept).startswith("dropped by a reviewer")


def test_relabel_to_the_suggestion_with_a_key(root):
    """The r key on a review row relabels it to its suggestion (app/curate/key_actions.py); the why
    line says so; relabelling back to the given class clears it."""
    from app.curate import review_queue as review

    data = run_data(root, "digits")
    state = current_state(data)
    sample = int(next(i for i in np.flatnonzero(state.decisions.flagged)
                      if logic.suggestion(data, state, int(i))))
    code = int(data.samples.labels[sample])
    suggested = logic.suggestion(data, state, sample)
    run_action(root, "digits", {"sample": sample, "action": "relabel", "label": suggested})
    state = current_state(data)
    assert state.relabels == {sample: data.samples.classes.index(suggested)}
    assert state.decisions.kept[sample] and state.marks[sample] == "keep"
    assert logic.why(data, state, sample).startswith(f"relabelled to {suggested}")
    review.relabel_to(root, "digits", [sample], data.samples.classes[code])  # back: cleared
    assert current_state(data).relabels == {}
    with pytest.raises(InputError, match="no class 'zebra'"):
        run_action(root, "digits", {"sample": sample, "action": "relabel", "label": "zebra"})
    with pytest.raises(InputError, match="no action"):
        run_action(root, "digits", {"sample": sample, "action": "toggle"})
    with pytest.raises(InputError, match="focus a row"):
        run_action(root, "digits", {"action": "keep"})


def test_class_grid_rows_carry_codes_counts_and_shares():
    rows = [{"class": f"c{c:04d}", "size": 100 + c % 7, "flagged": c % 13, "overridden": 1,
             "relabelled": c % 2, "kept": 90, "proposed": c % 3} for c in range(1000)]
    rows.append({"class": "total", "size": 0, "flagged": 0, "overridden": 0, "relabelled": 0,
                 "kept": 0, "proposed": 0})
    grid, total = class_list.grid_rows(rows)
    assert [r["code"] for r in grid] == list(range(1000))
    assert [r["id"] for r in grid[:3]] == ["0", "1", "2"]  # the grid's row ids
    assert grid[12]["share"] == round(100 * 12 / 105, 1) and grid[12]["relabelled"] == 0
    assert (total["id"], total["class"], total["share"]) == ("all", "All classes", 0.0)


def test_control_updates_change_only_what_differs():
    v = logic.ControlValues(eps=2.5, min_samples=5, eps_max=6.0)
    shows = {"eps": 2.50004, "eps_box": 2.5, "eps_max": 6.0, "ms": 5, "ms_box": 5}
    assert logic.control_updates(v, shows, rescale=False) == {}
    # A slid eps: the box follows; the slider's range stays under the user's hand.
    assert logic.control_updates(v, {**shows, "eps_box": 3.1, "eps_max": 9.0},
                                 rescale=False) == {"eps_box": 2.5}
    # A refused or half-typed value goes back; a stored eps past the range widens it.
    assert logic.control_updates(v, {**shows, "ms_box": None, "eps": "x"},
                                 rescale=False) == {"ms_box": 5, "eps": 2.5}
    assert logic.control_updates(v, {**shows, "eps_max": 2.0}, rescale=False) == {
        "eps_max": 6.0, "eps_step": 0.03}
    assert logic.control_updates(v, shows, rescale=True) == {"eps_max": 6.0, "eps_step": 0.03}


