"""The Python API (``tsne_curator``), on real data: scikit-learn's digits.

One real ``tc.pipeline`` (the issue's done-when snippet); the methods run on a copy of the
session's digits run (``fresh_run``) and on small runs made from digits' pixels in memory
(``tc.from_arrays``). The store is one store: what the API decides, the CLI and the read
model see, and the other way round.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import socket

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import tsne_curator as tc
from app.cli import build_parser, main
from app.curate.figures import SYMBOLS, marker_style
from tsne_curator import options, pipeline_call
from tsne_curator.bars import progress_bar
from tsne_curator.tables import FINDING_COLUMNS
from worker.option_table import COMMANDS
from worker.pipeline.curation.findings_report import findings_report
from worker.pipeline.curation.snapshot import current_decisions, current_snapshot, summary_rows
from worker.pipeline.errors import InputError
from worker.pipeline.export import manifest_columns
from worker.pipeline.findings import load_findings, proposals
from worker.pipeline.progress import TqdmProgress
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.job_store import JobStore
from worker.pipeline.storage.rundir import RunDir


def _files(path) -> dict[str, bytes]:  # noqa: ANN001
    """Every file under ``path`` but the lock files (their holder line changes), by name."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and "lock" not in p.name and not p.name.startswith("curation.")}


def _leftovers(path) -> list[str]:  # noqa: ANN001
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if ".tmp" in p.name)


@pytest.fixture(scope="module")
def api_run(tmp_path_factory):
    """The issue's done-when snippet, once: digits with 10% injected noise."""
    return tc.pipeline("digits", out=tmp_path_factory.mktemp("nb") / "nbrun",
                       inject_noise=0.1, seed=0)


def _digits(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digits' first ``n`` samples: pixels as (n, 64) float features, labels, uint8 images."""
    from sklearn.datasets import load_digits

    d = load_digits()
    images = np.round(d.images[:n] * (255 / 16)).astype(np.uint8)
    return d.data[:n].astype(np.float32), d.target[:n], images


NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


@pytest.fixture(scope="module")
def array_run(tmp_path_factory):
    feats, labels, images = _digits(360)
    return tc.from_arrays(feats, labels, tmp_path_factory.mktemp("arr") / "emb",
                          class_names=NAMES, images=images, seed=0)


# -- tc.pipeline ---------------------------------------------------------------------------
def test_done_when_findings_have_kind_label_and_map_is_a_figure(api_run, digits_run):
    df = api_run.findings()
    print(df.head())
    assert list(df.columns) == list(FINDING_COLUMNS)
    assert "label" in set(df["kind"])
    assert type(api_run.map("3")) is go.Figure
    # The same run as run_pipeline's with the same options (the session's digits run).
    label = findings_report(digits_run, "label", top=0)["kinds"][0]
    assert (df["kind"] == "label").sum() == label["count"] > 0


def test_pipeline_again_resumes_and_other_options_are_refused(api_run):
    before = {p.name: p.stat().st_mtime_ns for p in api_run.path.glob("*.npy")}
    features = (api_run.path / "features.npy").read_bytes()
    again = tc.pipeline("digits", out=api_run.path, inject_noise=0.1, seed=0)
    assert again.path == api_run.path
    for name in ("embedding.npy", "thumbnails.npy"):  # not made again
        assert (api_run.path / name).stat().st_mtime_ns == before[name]
    assert (api_run.path / "features.npy").read_bytes() == features  # from the cache
    after = _files(api_run.path)
    with pytest.raises(InputError, match="other options"):
        tc.pipeline("digits", out=api_run.path, inject_noise=0.2, seed=0)
    with pytest.raises(InputError, match="perplexity"):
        tc.pipeline("digits", out=api_run.path, perplexity=-1)
    assert _files(api_run.path) == after


@pytest.mark.parametrize("options, word", [
    ({"inject_noise": 1.5}, "inject_noise (--inject-noise) must be a number ≥ 0 and < 1"),
    ({"seed": -1}, "seed (--seed) must be a whole number"),
    ({"seed": 1.5}, "seed (--seed)"),
    ({"seed": True}, "seed (--seed)"),
    ({"n_iter": "many"}, "n_iter (--n-iter)"),
    ({"eps": 0}, "eps (--eps) must be a number > 0"),
    ({"min_samples": 0}, "min_samples (--min-samples)"),
    ({"model": "vgg"}, "model (--model) must be one of pixels"),
    ({"noise_kind": "asymmetric"}, "noise_kind (--noise-kind)"),
    ({"duplicate_threshold": 2}, "duplicate_threshold (--duplicate-threshold)"),
    ({"thresholds": {"duplicate": 0}}, "duplicate_threshold (--duplicate-threshold)"),
    ({"thresholds": {"label": 0.5}}, "no finding kind 'label' with a cut"),
    ({"labels": 3}, "labels (--labels) must be a path"),
    ({"shards": 2}, "curator pipeline --shards"),
])
def test_a_bad_value_is_one_input_error_naming_the_keyword(tmp_path, options, word):
    out = tmp_path / "new"
    with pytest.raises(InputError) as exc:
        tc.pipeline("digits", out=out, **options)
    assert word in str(exc.value) and "\n" not in str(exc.value)
    assert not out.exists()


def test_a_bad_spec_or_unknown_keyword_touches_nothing(tmp_path):
    out = tmp_path / "new"
    with pytest.raises(InputError, match="unknown dataset spec"):
        tc.pipeline("imagenet", out=out)
    with pytest.raises(TypeError) as exc:
        tc.pipeline("digits", out=out, inject_nosie=0.1)
    text = str(exc.value)
    assert "did you mean 'inject_noise'" in text and "valid keywords:" in text
    assert "perplexity" in text and "shards" not in text.split("valid keywords:")[1]
    assert not out.exists()


_PARSER = build_parser()
_NUMBERS = sorted(name for name, o in COMMANDS["pipeline"].items() if o.kind == "number")


def _cli(name: str, text: str) -> object:
    """What ``curator pipeline --out x --FLAG=TEXT`` parses option ``name`` to, or
    "refused"."""
    flag = COMMANDS["pipeline"][name].flag
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            ns = _PARSER.parse_args(["pipeline", "--out", "x", f"{flag}={text}"])
    except SystemExit:
        return "refused"
    return getattr(ns, name)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(_NUMBERS),
       value=st.one_of(st.integers(-5, 2**33), st.floats(), st.booleans(),
                       st.sampled_from(["", "x", "0.5", "1e3", "3", "-0"])))
def test_keywords_are_checked_exactly_as_the_cli_parses_their_flags(name, value):
    try:
        api = options.check_keyword(COMMANDS["pipeline"][name], value)
    except InputError as exc:
        assert name in str(exc)
        api = "refused"
    cli = _cli(name, str(value))
    assert api == cli and type(api) is type(cli)


# -- tc.from_arrays --------------------------------------------------------------------------
def test_from_arrays_goes_through_the_features_path(array_run):
    run = RunDir(array_run.path)
    samples = run.read_samples()
    assert sorted(samples.classes) == sorted(NAMES) and len(samples) == 360
    spec = run.read_meta()["dataset"]["spec"]
    assert spec == f"features:{array_run.path.resolve() / 'input' / 'features.npy'}"
    feats, labels, _ = _digits(360)
    assert np.array_equal(np.load(array_run.path / "features.npy"), feats)
    assert [samples.classes[c] for c in samples.labels] == [NAMES[y] for y in labels]
    df = array_run.findings()
    assert list(df.columns) == list(FINDING_COLUMNS)
    manifest, dest = array_run.export("pictures", format="imagefolder")
    kept = manifest[manifest["kept"]]
    assert len(list((dest / "images").rglob("*.png"))) == len(kept)
    assert manifest["path"].iloc[0] == "images/0000000.png"


def test_from_arrays_takes_image_files_and_copies_them_into_the_run(tmp_path):
    """``images=`` as N file paths (a user's folder, e.g. df["path"]): each file is copied
    into the run, so the run stays whole when the originals go; the same files again
    resume; a missing or non-image path is one error before anything is written."""
    feats, labels, pixels = _digits(200)
    src = tmp_path / "src"
    src.mkdir()
    files = []
    for i, p in enumerate(pixels):
        files.append(src / f"d{i}.{'jpg' if i % 2 else 'png'}")
        Image.fromarray(p).save(files[-1])
    for bad, word in (([*files[:-1], src / "gone.png"], "images\\[199\\] .*no such file"),
                      ([*files[:-1], src / "notes.txt"], "not an image file"),
                      (files[:-1], "images must be 200 image file paths")):
        with pytest.raises(InputError, match=word):
            tc.from_arrays(feats, labels, tmp_path / "bad", images=bad)
        assert not (tmp_path / "bad").exists()
    run = tc.from_arrays(feats, labels, tmp_path / "emb", images=[str(f) for f in files],
                         seed=0)
    again = tc.from_arrays(feats, labels, tmp_path / "emb", images=files, seed=0)
    assert again.path == run.path
    copied = sorted((run.path / "input" / "images").iterdir())
    assert [f.name for f in copied[:2]] == ["0000000.png", "0000001.jpg"]
    assert all(c.read_bytes() == f.read_bytes() for c, f in zip(copied, files, strict=True))
    shutil.rmtree(src)
    manifest, dest = run.export("pictures", format="imagefolder")
    assert len(list((dest / "images").rglob("*.*"))) == int(manifest["kept"].sum())


@pytest.mark.parametrize("change, word", [
    (lambda f, y, i: (np.where(np.arange(len(f))[:, None] == 7, np.nan, f), y, i), "row 7"),
    (lambda f, y, i: (f[:, 0], y, i), "N×D"),
    (lambda f, y, i: (f, y[:-1], i), "labels must be 40 values"),
    (lambda f, y, i: (f, y.astype(float), i), "whole numbers or text"),
    (lambda f, y, i: (f, np.zeros_like(y), i), "one class"),
    (lambda f, y, i: (f, [" 3"] * 20 + ["4"] * 20, i), "surrounding spaces"),
    (lambda f, y, i: (f, y, i[:-1]), "images must be 40"),
    (lambda f, y, i: (f, y, i.astype(np.float32)), "uint8"),
])
def test_from_arrays_bad_arrays_are_one_error_and_touch_nothing(tmp_path, change, word):
    feats, labels, images = change(*_digits(40))
    out = tmp_path / "emb"
    with pytest.raises(InputError, match=word):
        tc.from_arrays(feats, labels, out, images=images)
    assert not out.exists()


def test_from_arrays_bad_names_or_keywords_touch_nothing(tmp_path):
    feats, labels, _ = _digits(40)
    out = tmp_path / "emb"
    with pytest.raises(InputError, match="label 9 has no name"):
        tc.from_arrays(feats, labels, out, class_names=["a", "b"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'model'"):
        tc.from_arrays(feats, labels, out, model="resnet18")
    with pytest.raises(InputError, match="perplexity"):
        tc.from_arrays(feats, labels, out, perplexity=0)
    assert not out.exists()


def test_ctrl_c_leaves_no_partial_file_and_the_next_call_resumes(tmp_path, monkeypatch):
    feats, labels, _ = _digits(200)
    out = tmp_path / "emb"

    class StopAt:
        """A progress bar whose user presses Ctrl-C once a step's report comes."""

        def __init__(self, step: str) -> None:
            self.step = step

        def __call__(self, done: int, total: int, message: str) -> bool:
            if message.startswith(self.step):
                raise KeyboardInterrupt
            return False

        def close(self) -> None:
            pass

    monkeypatch.setattr(pipeline_call, "progress_bar", lambda: StopAt("extract"))
    with pytest.raises(KeyboardInterrupt):  # inside the copy of the features
        tc.from_arrays(feats, labels, out)
    assert not (out / "features.npy").exists() and _leftovers(out) == []
    monkeypatch.setattr(pipeline_call, "progress_bar", lambda: StopAt("embed"))
    with pytest.raises(KeyboardInterrupt):  # inside t-SNE
        tc.from_arrays(feats, labels, out)
    assert not (out / "embedding.npy").exists() and _leftovers(out) == []
    copied = (out / "features.npy").stat().st_mtime_ns
    monkeypatch.setattr(pipeline_call, "progress_bar", TqdmProgress)
    run = tc.from_arrays(feats, labels, out)  # the locks were let go; extract is not redone
    assert (out / "features.npy").stat().st_mtime_ns == copied
    assert run.summary()["size"].iloc[-1] == 200
    with pytest.raises(InputError, match="other arrays"):
        tc.from_arrays(feats[::-1].copy(), labels, out)


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


def test_serve_starts_what_curator_serve_starts(tmp_path, monkeypatch, capsys):
    import app.server

    started = []
    monkeypatch.setattr(app.server, "serve", lambda s, debug: started.append((s, debug)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tc.serve(runs_root=tmp_path, port=port)
    (settings_, debug), = started
    assert (settings_.runs_root, settings_.port, debug) == (tmp_path, port, False)
    assert f"127.0.0.1:{port}" in capsys.readouterr().out
    for bad in (0, 70_000, True, "http"):
        with pytest.raises(InputError, match=r"port \(--port\)"):
            tc.serve(port=bad)
    assert len(started) == 1


def test_progress_bars_go_through_tqdm_auto(monkeypatch):
    import tqdm.auto

    made, written = [], []

    class Bar:
        def __init__(self, total: int, **kw) -> None:
            self.total, self.n = total, 0
            made.append(self)

        @staticmethod
        def write(text: str, **kw) -> None:
            written.append(text)

        def refresh(self) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    # Bars are for a terminal or a notebook (progress.bars_wanted): piped, none is made.
    monkeypatch.setattr("worker.pipeline.progress.bars_wanted", lambda: False)
    progress_bar()(1, 4, "embed: t-SNE")
    assert made == []
    monkeypatch.setattr("worker.pipeline.progress.bars_wanted", lambda: True)
    bar = progress_bar()
    bar(1, 4, "embed: t-SNE")
    assert len(made) == 1 and made[0].n == 1
    # A training: a warning is a line above the bars; its end reported twice is one bar.
    bar(0, 44, "train: plan: 2 epochs")
    bar(0, 44, "warning: 2 epochs are too few to judge convergence")
    bar(44, 44, "train: epoch 2/2 | test acc 0.727")
    bar(44, 44, "train: reused; test acc 0.727")
    assert len(made) == 2 and made[1].n == 44
    assert written == ["warning: 2 epochs are too few to judge convergence"]
    bar(0, 60, "train: plan: 3 epochs")  # the next training: a bar of its own
    assert len(made) == 3


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
