"""The notebook's run (tsne_curator/run_handle.py) on real runs: a copy of the digits run
(``fresh_run``) and a small run made from arrays. The store is one store: what the API
decides, the CLI and the read model see, and the other way round; its methods are the
commands' (cluster, map, export, experiment); a class is taken by its number wherever it
is taken by its name; undo takes back decisions, never the pipeline's clustering."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import tsne_curator as tc
from app.cli import main
from app.curate.figures import SYMBOLS, marker_style
from tests.digits_arrays import digits_all
from tests.refusals import one_line, refused
from tsne_curator.options import keywords
from worker.pipeline.curation.findings_report import findings_report
from worker.pipeline.curation.snapshot import current_decisions, current_snapshot, summary_rows
from worker.pipeline.errors import InputError
from worker.pipeline.export import manifest_columns
from worker.pipeline.findings import load_findings, proposals
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.job_store import JobStore


# -- Run ----------------------------------------------------------------------------------
def test_open_repr_and_html(fresh_run, tmp_path):
    run = tc.open(fresh_run.path)
    text = repr(run)
    assert "'digits': 1,797 samples, 10 classes" in text and "feature quality" in text
    assert "findings: label" in text
    odd = tmp_path / "a<i>b&c"
    shutil.copytree(fresh_run.path, odd)
    html = tc.open(odd)._repr_html_()
    assert "a&lt;i&gt;b&amp;c" in html and "<i>" not in html and "<table>" in html
    (odd / "curation.sqlite").unlink()  # a run that cannot be read shows why, not a traceback
    assert "not ready" in repr(tc.open(odd))
    with pytest.raises(InputError, match="not a run"):
        tc.open(tmp_path)


def test_findings_and_summary_are_the_cli_read_model(fresh_run):
    run = tc.open(fresh_run.path)
    df = run.findings()
    report = findings_report(fresh_run, top=10**6)
    for k in report["kinds"]:
        rows = df[df["kind"] == k["name"]]
        assert len(rows) == k["count"]
        assert rows["index"].tolist() == [t["sample"] for t in k["top"]]
        assert rows["why"].tolist() == [t["why"] for t in k["top"]]
        assert rows["decision"].tolist() == [t["decision"] for t in k["top"]]
    label = run.findings("label")
    assert label.equals(df[df["kind"] == "label"].reset_index(drop=True))
    assert label["suggested_label"].isin([str(c) for c in range(10)]).mean() > 0.9
    with pytest.raises(InputError, match="no finding kind"):
        run.findings("typo")
    snap = current_snapshot(fresh_run)
    assert run.summary().to_dict("records") == summary_rows(snap.samples, snap.decisions,
                                                            snap.findings)


def test_one_store_for_the_api_the_cli_and_the_read_model(fresh_run, capsys):
    run = tc.open(fresh_run.path)
    store = CurationStore(fresh_run.store)
    listed = run.findings()
    i = int(listed[listed["kind"] == "label"]["index"].iloc[0])
    j = next(int(s) for s in np.flatnonzero(current_decisions(fresh_run)[1].kept)
             if s not in set(listed["index"]))
    # API → store, read model and the CLI's undo.
    assert run.keep([i]) == 1 and store.overrides()[i] == "keep"
    assert current_decisions(fresh_run)[1].kept[i]
    assert run.drop(pd.Series([j])) == 1 and not current_decisions(fresh_run)[1].kept[j]
    row = run.findings().set_index("index").loc[j]
    assert (row["kind"], row["decision"], row["reason"]) == ("", "dropped", "override_drop")
    assert main(["undo", str(fresh_run.path)]) == 0 and j not in store.overrides()
    assert run.undo().startswith("keep") and store.overrides() == {}
    # The CLI → the API.
    assert main(["override", str(fresh_run.path), "keep", str(i)]) == 0
    row = run.findings("label").set_index("index").loc[i]
    assert (row["decision"], row["reason"]) == ("kept", "override_keep")
    assert run.clear([i]) == 1 and store.overrides() == {}
    # Relabels, and refusals that change nothing.
    assert run.relabel([i], "5") == 1 and store.relabels() == {i: 5}
    rows = run.findings().query("index == @i")
    assert len(rows) and (rows["reason"] == "relabel").all()
    revision = store.revision()
    for bad in (lambda: run.relabel([i], "five"), lambda: run.drop([10**6]),
                lambda: run.drop([1.5]), lambda: run.keep(np.ones(3, bool))):
        with pytest.raises(InputError):
            bad()
    assert store.revision() == revision and run.drop([]) == 0
    assert run.undo().startswith("relabel") and store.relabels() == {}
    assert run.redo().startswith("relabel") and store.relabels() == {i: 5}
    capsys.readouterr()


def test_cluster_is_curator_cluster(fresh_run):
    run = tc.open(fresh_run.path)
    store = CurationStore(fresh_run.store)
    revision, rule = store.revision(), store.setting("rule")
    for bad, word in ((dict(class_name="nope", rule="dbscan"), "unknown class 'nope'"),
                      (dict(class_name="3", eps=-1), "eps (--eps)"),
                      (dict(class_name="3", min_samples=2.5), "min_samples"),
                      (dict(cut=3), "cut is per class"),
                      (dict(class_name="3", cut=-2), "cut (--cut)")):
        with pytest.raises(InputError, match=re.escape(word)):
            run.cluster(**bad)
    assert store.revision() == revision and store.setting("rule") == rule
    summary = run.cluster("3", eps=1.2, min_samples=8)
    assert store.class_params()[3] == (1.2, 8)
    assert summary.to_dict("records") == run.summary().to_dict("records")
    assert run.undo() == "cluster: set parameters" and store.class_params()[3] != (1.2, 8)
    run.cluster(["3"], cut=5)
    assert store.cuts() == {3: 5}


def test_map_is_the_curate_page_class_view(fresh_run):
    run = tc.open(fresh_run.path)
    samples, decisions, _ = current_decisions(fresh_run)
    members = np.flatnonzero(samples.labels == 3)
    proposed = proposals(load_findings(fresh_run, len(samples)), len(samples))
    fig = run.map("3")
    assert isinstance(fig, go.Figure) and len(fig.data) == 2
    assert fig.layout.images[0].source.startswith("data:image/png;base64,")
    assert list(fig.data[1].customdata) == members.tolist()
    _, symbols, sizes = marker_style(members, decisions, {}, proposed)
    assert list(fig.data[1].marker.symbol) == symbols and list(fig.data[1].marker.size) == sizes
    flagged = [int(s) for s in members if decisions.flagged[s]]
    run.keep(flagged[:1])
    position = members.tolist().index(flagged[0])
    assert run.map(3).data[1].marker.symbol[position] == SYMBOLS["diamond"]
    with pytest.raises(InputError, match="unknown class"):
        run.map("ten")


def test_export_is_curator_export(fresh_run):
    run = tc.open(fresh_run.path)
    kept = current_decisions(fresh_run)[1].kept
    manifest, dest = run.export("v1")
    assert dest == fresh_run.exports / "v1" and (dest / "params.json").is_file()
    assert list(manifest.columns) == list(manifest_columns()) and len(manifest) == len(kept)
    assert manifest["kept"].dtype == bool and manifest["kept"].tolist() == kept.tolist()
    assert manifest["label"].iloc[0] == "0"  # class names stay text
    assert [j["kind"] for j in JobStore(fresh_run.store).list()] == ["export"]
    ids, _ = run.export("ids", format="indices")
    assert ids["index"].tolist() == np.flatnonzero(kept).tolist()
    for name, fmt, word in (("v1", "csv", "already exists"), ("../x", "csv", "invalid export"),
                            ("v2", "xml", "format .--format. must be one of csv")):
        with pytest.raises(InputError, match=word):
            run.export(name, format=fmt)
    assert not (fresh_run.exports / "v2").exists()


def test_experiment_is_curator_experiment(fresh_run):
    """``run.experiment(...)`` takes ``curator experiment``'s options as keywords,
    runs its job, and returns its summary as a DataFrame with its verdict (the
    steps budget and convergence included); bad values are the CLI's one line."""
    run = tc.open(fresh_run.path)
    for bad, err in (({"seeds": 0}, InputError), ({"budget": "time"}, InputError),
                     ({"sedes": 2}, TypeError)):
        with pytest.raises(err):
            run.experiment(**bad)
    summary, verdict = run.experiment(subsets="full,filtered", seeds=1, epochs=1,
                                      batch_sizes="64", model="cifar-resnet20", name="nb")
    assert sorted(summary["subset"]) == ["filtered", "full"]
    assert {"mean_test_acc", "converged", "diff_vs_full"} <= set(summary.columns)
    assert not summary["converged"].any()  # one epoch: too few to judge
    assert "batch 64: not converged" in verdict and "ship" not in verdict
    assert [j["kind"] for j in JobStore(fresh_run.store).list()] == ["experiment"]


def _features(n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    x, y, _ = digits_all()
    return x[:n].copy(), y[:n].copy()


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> tc.Run:
    """A run of 150 digits from arrays, without images, whose class names are not their
    codes: digit d is class "1d" (names 10 to 19, codes 0 to 9), so a test tells a class
    taken by the number its name is from one taken by its code. Read only: a test that
    curates takes its own copy (``own_run``)."""
    x, y = _features(150)
    return tc.from_arrays(x, y + 10, out=tmp_path_factory.mktemp("misuse") / "small", seed=0)


@pytest.fixture
def own_run(small_run, tmp_path) -> tc.Run:
    """A private copy of ``small_run``: the decisions a test makes, and what it undoes,
    are its own, whatever ran before it."""
    return tc.open_run(shutil.copytree(small_run.path, tmp_path / "own"))


# -- a run ------------------------------------------------------------------------------
def test_a_class_is_taken_as_its_number_wherever_as_its_name(own_run):
    """Class "13" is code 3: a number is the number a class's name is, never its code."""
    store = CurationStore(own_run.path / "curation.sqlite")
    own_run.cluster(13, eps=1.2)
    assert store.class_params()[3][0] == 1.2
    own_run.cluster([np.int64(14), "15"], min_samples=6)
    assert store.class_params()[4][1] == store.class_params()[5][1] == 6
    assert store.class_params()[1][1] != 6
    assert own_run.map(np.int64(13)).data
    for code in (3, np.int64(3)):  # class code 3 is named "13": refused, not taken for it
        with pytest.raises(tc.InputError, match="unknown class '3': classes are 10, 11"):
            own_run.cluster(code, eps=1.0)
    for bad in (13.0, True, [13, None]):
        with pytest.raises(tc.InputError, match="class_name must be a class name or"):
            own_run.cluster(bad, eps=1.0)


def test_relabel_takes_a_number_and_never_lists_what_it_refuses(own_run):
    store = CurationStore(own_run.path / "curation.sqlite")
    assert own_run.relabel([30], 13) == 1 and store.relabels() == {30: 3}
    assert own_run.relabel([31], "14") == 1 and store.relabels() == {30: 3, 31: 4}
    with pytest.raises(tc.InputError, match="label must be a class name or a class number, "
                                            "got 13.0"):
        own_run.relabel([30], 13.0)
    with pytest.raises(tc.InputError) as e:
        own_run.relabel([30], 3)  # code 3, not a name
    listed = str(e.value).split("use one of ")[1]
    assert "'3'" in str(e.value) and "3" not in listed.split(" (or")[0].split(", ")
    assert store.relabels() == {30: 3, 31: 4}


def test_undo_takes_back_decisions_never_the_pipeline_s_clustering(own_run, capsys):
    store = CurationStore(own_run.path / "curation.sqlite")
    assert not store.can_undo()
    before = (store.revision(), store.history())
    refused(own_run.undo, None, "nothing to undo: no decision is left to take back")
    assert main(["undo", str(own_run.path)]) == 2
    assert "nothing to undo" in one_line(capsys.readouterr().err)
    assert (store.revision(), store.history()) == before  # the refusals wrote nothing
    own_run.drop([5])
    assert own_run.undo() == "drop 1 sample(s)"
    with pytest.raises(tc.InputError, match="nothing to undo"):
        own_run.undo()
    assert len(store.class_params()) == 10 and own_run.summary()["size"].iloc[-1] == 150
    assert own_run.redo() == "drop 1 sample(s)" and store.overrides() == {5: "drop"}
    before = (store.revision(), store.history())
    with pytest.raises(tc.InputError, match="nothing to redo"):
        own_run.redo()
    assert (store.revision(), store.history()) == before


def test_experiment_without_images_writes_nothing(small_run):
    jobs = JobStore(small_run.path / "curation.sqlite").list()
    with pytest.raises(tc.InputError, match="an experiment .retraining. needs images"):
        small_run.experiment(subsets=["full", "filtered"], seeds=1, epochs=1)
    assert not (small_run.path / "experiments").exists()
    assert JobStore(small_run.path / "curation.sqlite").list() == jobs


def test_a_list_option_takes_numpy_integers_as_a_class_name_does(small_run):
    """An array's items are numpy integers: ``batch_sizes=list(np.array([64, 128]))`` is
    ``--batch-sizes 64,128``, as ``run.cluster(np.int64(3))`` is class 3."""
    def parsed(value):  # noqa: ANN001, ANN202
        return keywords("experiment", {"batch_sizes": value}, "experiment",
                        fixed={"run": "r"})["batch_sizes"]

    assert parsed([np.int64(64), np.uint8(128)]) == parsed([64, 128]) == parsed("64,128")
    assert parsed(list(np.array([32]))) == parsed(np.int32(32)) == parsed("32")
    for bad in ([np.float64(64.0)], [True], [np.bool_(True)], [64.0]):
        with pytest.raises(tc.InputError, match="list of names or whole numbers"):
            parsed(bad)
    assert small_run.map(np.uint8(13)).data  # the same whole numbers, the same helper
