"""The app's pages on a copy of the digits run, without a browser: routes and bad run ids,
a broker that is down, the New-run form's checks and the data roots it may read, and the
Results page's verdict."""

from __future__ import annotations

import numpy as np
import pytest

from app.curate import page_actions
from app.run_data import run_data
from worker.pipeline.errors import InputError
from worker.pipeline.storage.rundir import RunDir


@pytest.fixture
def root(fresh_run):
    return fresh_run.path.parent


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
    assert page_actions.set_decision(root, "digits", 4, "drop") > 0


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
    from tests.integration.pipeline.sources.test_ingest import _links_out
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
