"""Mistakes a notebook user makes, each refused in one ``tc.InputError`` line before
anything is written, and the same mistake at the CLI's and the New-run form's doors: one
check, three doors.

Real data throughout: scikit-learn's digits as features (a few hundred rows at most, so
every run here takes seconds), tmp_path runs, real image files.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import tsne_curator as tc
from app.cli import main
from tests.unit.test_cli import curator
from tsne_curator.options import keywords
from worker.pipeline.storage.curation_store import CurationStore
from worker.pipeline.storage.job_store import JobStore

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digits as (1797, 64) float64 features, labels and uint8 8×8 images."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data, d.target, np.round(d.images * (255 / 16)).astype(np.uint8)


def _features(n: int = 150) -> tuple[np.ndarray, np.ndarray]:
    x, y, _ = _digits()
    return x[:n].copy(), y[:n].copy()


def _one_line(text: str) -> str:
    """The only line of a command's stderr (progress bars left out), an ``error:``."""
    lines = [ln for ln in text.splitlines() if ln.strip() and "%|" not in ln]
    assert len(lines) == 1 and lines[0].startswith("error:"), text
    assert "Traceback" not in text
    return lines[0]


def _refused(call, out: Path | None, match: str) -> str:  # noqa: ANN001 - no arguments
    """``call()`` raises one InputError line matching ``match`` and ``out`` (the folder
    it would have made; None: the caller checks what else it could have written) stays
    absent."""
    with pytest.raises(tc.InputError, match=match) as e:
        call()
    assert "\n" not in str(e.value)
    if out is not None:
        assert not out.exists(), sorted(p.name for p in out.rglob("*"))
    return str(e.value)


def _features_file(folder: Path, x: np.ndarray, y: np.ndarray) -> tuple[Path, Path]:
    """``x`` as a float32 .npy file and ``y`` as its labels CSV, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "f.npy", x.astype(np.float32))
    (folder / "l.csv").write_text("label\n" + "".join(f"{v}\n" for v in y))
    return folder / "f.npy", folder / "l.csv"


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


# -- features ------------------------------------------------------------------------------
HUGE = """
import numpy as np, tsne_curator as tc
from sklearn.datasets import load_digits
d = load_digits()
try:
    tc.from_arrays(d.data[:300] * 1e20, d.target[:300], out={out!r})
except tc.InputError as exc:
    print(exc)
"""


def test_huge_finite_features_are_refused_without_killing_the_process(tmp_path):
    """Digits times 1e20 aborted the Python process in openTSNE (double free): run where a
    crash fails this test instead of killing pytest."""
    out = tmp_path / "huge"
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(HUGE.format(out=str(out)))],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == ("features row 0 has values up to 1.5e+21, beyond what the map "
                                "can take (|x| ≤ 1e+12): scale them first")
    assert not out.exists()


def test_float64_beyond_float32_says_so_not_nan(tmp_path):
    x, y = _features(40)
    x[12, 3] = 1e39
    _refused(lambda: tc.from_arrays(x, y, out=tmp_path / "o"), tmp_path / "o",
             r"features row 12 has values up to 1e\+39, which overflow float32")


def test_constant_or_nearly_constant_features_are_refused(tmp_path):
    x, y = _features(40)
    out = tmp_path / "o"
    _refused(lambda: tc.from_arrays(np.zeros_like(x), y, out=out), out,
             "features are constant: every row is the same")
    _refused(lambda: tc.from_arrays(x * 1e-30, y, out=out), out,
             "features differ by at most 1.6e-29 between rows, too little for the map")


VALUES = st.one_of(st.floats(-100, 100), st.sampled_from(
    [0.0, -0.0, 1.0, 1e-14, 3e-13, 1e11, -2e12, 1e20, 1e39, np.nan, np.inf, -np.inf]))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64]), st.integers(1, 12),
       st.integers(1, 3), st.integers(1, 5), st.data())
def test_the_value_check_fed_in_blocks_says_what_the_whole_array_shows(dtype, n, d, block,
                                                                      data):
    """:class:`FeatureValues` fed ``block`` rows at a time refuses exactly what a plain
    look at the whole array (as float32, what the map computes in) finds, first things
    first."""
    from worker.pipeline.sources.feature_values import FeatureValues

    with np.errstate(all="ignore"):  # 1e39 as float32 is inf, and so on: as intended
        x = np.array(data.draw(st.lists(VALUES, min_size=n * d, max_size=n * d)),
                     np.float64).reshape(n, d).astype(dtype)
        finite = np.isfinite(x).all(axis=1)
        x32 = x.astype(np.float32)
        spread = float((x32.max(axis=0).astype(np.float64) - x32.min(axis=0)).max())
    top = np.abs(x.astype(np.float64)).max(axis=1)
    large = top[top > 1e12]  # the first such row is named, with its largest value
    expected = ("NaN or inf" if not finite.all()
                else "overflow float32" if len(large) and large[0] > 3.5e38
                else "beyond what the map" if len(large)
                else "constant" if spread == 0 else "differ by at most" if spread < 1e-12
                else None)
    check = FeatureValues()
    for start in range(0, n, block):
        check.add(x[start:start + block], start)
    if expected is None:
        check.finish()
        return
    with pytest.raises(tc.InputError, match=expected):
        check.finish()


def _constant_column() -> np.ndarray:
    x = _features(150)[0].astype(np.float32)
    x[:, 5] = 7.0
    return x


ACCEPTED = {  # what real features look like: none of it is refused
    "a constant column beside varying ones": _constant_column,
    "uint8 pixel values 0-255": lambda: _digits()[2][:150].reshape(150, 64),
    "values around 1e6": lambda: 1e6 + _features(150)[0],
    "float32 values around 1e6": lambda: (1e6 + _features(150)[0]).astype(np.float32),
    "float16 features": lambda: _features(150)[0].astype(np.float16),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_the_value_check_takes_what_real_features_look_like(name):
    from tsne_curator.in_memory import check_features
    from worker.pipeline.sources.feature_values import check_feature_values

    x = ACCEPTED[name]()
    if name.startswith("uint8"):
        assert x.dtype == np.uint8 and x.min() == 0 and x.max() == 255
    check_feature_values(x)
    assert check_features(x).shape == x.shape  # tc.from_arrays's door


def test_a_large_value_is_found_without_a_float64_copy_of_the_block():
    """The row of a value beyond 1e12 is found from each row's extremes in the block's own
    dtype: a float64 copy of a 65,536-row block is 1 GB at D = 2048."""
    import tracemalloc

    from worker.pipeline.sources.feature_values import FeatureValues

    x = np.random.default_rng(0).normal(size=(512, 4096)).astype(np.float32)
    x[300, 7] = -3e12
    for block in (x, x.astype(np.float64)):
        check = FeatureValues()
        tracemalloc.start()
        try:
            check.add(block, 1000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert check.large is not None and check.large[0] == 1300
        assert check.large[1] == pytest.approx(3e12, rel=1e-6)
        assert peak < block.nbytes / 2, peak / block.nbytes  # NaN's (B, D) bool array at most


def test_huge_features_file_refused_at_the_cli_door(tmp_path):
    x, y = _features(300)
    feats, labels = _features_file(tmp_path / "data", x * 1e20, y)
    out = tmp_path / "run"
    r = curator("pipeline", "--dataset", f"features:{feats}", "--labels", str(labels),
                "--out", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr[-2000:])
    assert _one_line(r.stderr) == ("error: features file f.npy row 0 has values up to 1.5e+21, "
                                   "beyond what the map can take (|x| ≤ 1e+12): scale them "
                                   "first")
    assert not out.exists()


def test_a_resume_does_not_read_the_features_file_again(tmp_path):
    """The door's check reads a features file whole; the run's checked copy of the very
    file (same path, size and mtime: the extract step's key) spares a resume that read.
    Seen from outside: the file's values turned to NaN behind an unchanged size and mtime
    are not read, and once its mtime moves they are, and refused."""
    import os

    x, y = _features(150)
    feats, labels = _features_file(tmp_path / "data", x, y)
    out = tmp_path / "run"
    args = ("pipeline", "--dataset", f"features:{feats}", "--labels", str(labels), "--out",
            str(out))
    r = curator(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    stat = feats.stat()
    nan = np.load(feats)
    nan[40] = np.nan
    np.save(feats, nan)
    os.utime(feats, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    r = curator(*args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "(150 samples" in r.stdout
    os.utime(feats, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    r = curator(*args)
    assert r.returncode == 2
    assert _one_line(r.stderr).startswith("error: features file f.npy row 40 has NaN or inf")


def test_the_new_run_form_refuses_in_the_same_words(tmp_path):
    from app.server import create_app
    from worker.pipeline.sources.labels import check_features_file
    from worker.settings import Settings

    x, y = _features(60)
    feats, labels = _features_file(tmp_path / "data", x * 1e20, y)
    with pytest.raises(tc.InputError) as direct:
        check_features_file(feats)
    app = create_app(Settings(runs_root=tmp_path / "runs", data_roots=(tmp_path / "data",)))
    page = sys.modules["pages.runs"]  # as Dash imported the page
    with app.server.test_request_context("/"), pytest.raises(tc.InputError) as form:
        page.new_run_params(page.RunForm("new", f"features:{feats}", "train", str(labels),
                                         "label", None, 0, None, None, 0, 30))
    assert str(form.value) == str(direct.value)
    assert str(form.value).startswith("features file f.npy row 0 has values up to 1.5e+21")
    assert not (tmp_path / "runs" / "new").exists()


def test_ragged_feature_rows_are_one_error(tmp_path):
    x, y = _features(20)
    rows = [list(r) for r in x]
    rows[7] = rows[7][:5]
    _refused(lambda: tc.from_arrays(rows, y, out=tmp_path / "o"), tmp_path / "o",
             "features must be N rows of D numbers each: row 7 has 5 values and row 0 64")


def test_fewer_samples_than_the_map_needs_are_refused_up_front(tmp_path):
    x, y = _features(3)
    _refused(lambda: tc.from_arrays(x, y, out=tmp_path / "o"), tmp_path / "o",
             "the labels argument gives 3 sample.s.: the map needs at least 4")
    feats, labels = _features_file(tmp_path / "data", x, y)
    with pytest.raises(tc.InputError, match=r"dataset features:.*f.npy gives 3 sample"):
        tc.pipeline(f"features:{feats}", out=tmp_path / "o", labels=labels)
    assert not (tmp_path / "o").exists()


def test_a_dozen_samples_of_three_classes_make_a_run(tmp_path):
    """Four per class: the label evidence's later rounds once left a fold's voters with
    one class, which scikit-learn refused ("needs samples of at least 2 classes")."""
    x, y, _ = _digits()
    idx = np.concatenate([np.flatnonzero(y == c)[:4] for c in range(3)])
    run = tc.from_arrays(x[idx], y[idx], out=tmp_path / "twelve")
    assert run.summary()["size"].iloc[-1] == 12


def test_one_feature_column_makes_a_map(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 40)
    x = (3.0 * y + rng.normal(0, 0.5, len(y)))[:, None]
    run = tc.from_arrays(x, y, out=tmp_path / "line", seed=0)
    embedding = np.load(run.path / "embedding.npy")
    assert embedding.shape == (120, 2) and np.isfinite(embedding).all()
    assert run.summary()["size"].iloc[-1] == 120


def test_an_unreadable_image_file_is_refused_before_it_is_copied(tmp_path):
    _, _, pixels = _digits()
    x, y = _features(20)
    files = []
    for i in range(20):
        files.append(tmp_path / "img" / f"{i}.png")
        files[-1].parent.mkdir(exist_ok=True)
        Image.fromarray(pixels[i]).save(files[-1])
    files[13].write_text("not a picture, whatever the suffix says\n")
    _refused(lambda: tc.from_arrays(x, y, out=tmp_path / "o", images=files), tmp_path / "o",
             r"images\[13\] .*13.png is not a readable image \(UnidentifiedImageError")


def _digit_folder(root: Path, digit: int, n: int) -> Path:
    """An image folder of one class: ``n`` of digits' ``digit`` images as 32×32 PNGs."""
    _, y, pixels = _digits()
    (root / f"d{digit}").mkdir(parents=True)
    for i in np.flatnonzero(y == digit)[:n]:
        Image.fromarray(pixels[i]).resize((32, 32)).save(root / f"d{digit}" / f"{i}.png")
    return root


def test_a_one_class_folder_makes_a_run_and_too_few_images_do_not(tmp_path):
    """One class is a folder's own (its outliers and duplicates are worth finding); the
    map's minimum of samples holds for every dataset."""
    folder = _digit_folder(tmp_path / "zeros", 0, 30)
    out = tmp_path / "run"
    r = curator("pipeline", "--dataset", f"folder:{folder}", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "(30 samples, 0 files skipped)" in r.stdout and "d0 " in r.stdout
    assert tc.open_run(out).summary()["size"].iloc[-1] == 30
    # A folder is counted as ingest lists it (not at the door: listing a large folder
    # twice costs minutes), so the run's folder is claimed by then.
    few = _digit_folder(tmp_path / "few", 1, 3)
    r = curator("pipeline", "--dataset", f"folder:{few}", "--out", str(tmp_path / "o"))
    assert r.returncode == 2
    assert _one_line(r.stderr).endswith(f"dataset folder:{few} gives 3 sample(s): the map "
                                        "needs at least 4")


# -- the folder --------------------------------------------------------------------------
def test_no_dataset_for_a_new_folder_leaves_no_folder(tmp_path, capsys):
    out = tmp_path / "missing"
    _refused(lambda: tc.pipeline(None, out=out), out, "is not a run yet: give --dataset")
    assert main(["pipeline", "--out", str(out)]) == 2
    assert "is not a run yet" in _one_line(capsys.readouterr().err)
    assert not out.exists()


def test_serve_refuses_a_file_as_runs_root_before_printing(tmp_path, capsys):
    file = tmp_path / "runs.txt"
    file.write_text("")
    _refused(lambda: tc.serve(runs_root=file), None,
             "runs root .*runs.txt is a file: give a folder of runs")
    assert list(tmp_path.iterdir()) == [file] and file.read_text() == ""  # nothing made
    assert capsys.readouterr().out == ""
    assert main(["serve", "--runs-root", str(file), "--port", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "is a file" in _one_line(captured.err)


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
    _refused(own_run.undo, None, "nothing to undo: no decision is left to take back")
    assert main(["undo", str(own_run.path)]) == 2
    assert "nothing to undo" in _one_line(capsys.readouterr().err)
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


def test_a_store_made_before_the_pipeline_mark_keeps_its_clustering(tmp_path):
    """A store whose history predates the ``pipeline`` column: its cluster step's rows
    are marked when it is opened, so undo passes them by there too."""
    import sqlite3

    path = tmp_path / "curation.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, description TEXT "
            "NOT NULL, changes TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, created_at "
            "TEXT NOT NULL);"
            "CREATE TABLE class_params (label INTEGER PRIMARY KEY, eps REAL NOT NULL, "
            "min_samples INTEGER NOT NULL, updated_at TEXT NOT NULL);"
            "INSERT INTO class_params VALUES (0, 0.5, 5, 'then');")
        db.execute("INSERT INTO history (description, changes, created_at) VALUES (?, ?, ?)",
                   ("automatic parameters",
                    json.dumps([["class_params", 0, None, [0.5, 5]]]), "then"))
    store = CurationStore(path)
    assert store.undo() is None and store.class_params() == {0: (0.5, 5)}
    assert store.history()[0]["pipeline"]


def test_experiment_without_images_writes_nothing(small_run):
    jobs = JobStore(small_run.path / "curation.sqlite").list()
    with pytest.raises(tc.InputError, match="an experiment .retraining. needs images"):
        small_run.experiment(subsets=["full", "filtered"], seeds=1, epochs=1)
    assert not (small_run.path / "experiments").exists()
    assert JobStore(small_run.path / "curation.sqlite").list() == jobs


SUBSETS = ("full", "filtered", "random", "corrected", "pruned@0.5", "random@0.3")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(SUBSETS), min_size=1, max_size=4),
       st.text(alphabet="abcxyz", min_size=1, max_size=6))
def test_a_list_option_takes_a_list_and_quotes_what_it_refuses(names, bad):
    """``subsets=[...]`` is ``--subsets a,b``; a wrong name is quoted as given."""
    def parsed(value):  # noqa: ANN001, ANN202
        return keywords("experiment", {"subsets": value}, "experiment",
                        fixed={"run": "r"})["subsets"]

    assert parsed(names) == parsed(",".join(names)) == parsed(tuple(names))
    with pytest.raises(tc.InputError, match=f"unknown subset '{bad}'"):
        parsed([*names, bad])
    with pytest.raises(tc.InputError, match=r"list of names or whole numbers, got \{"):
        parsed(set(names))


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
