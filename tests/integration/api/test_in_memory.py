"""``tc.from_arrays`` (tsne_curator/in_memory.py) making real runs from digits' pixels in
memory: through the features path, with image files copied into the run, Ctrl-C leaving no
partial file, huge values refused without killing the process, and the smallest runs that
make a map."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

import tsne_curator as tc
from tests.conftest import ROOT
from tests.digits_arrays import digits, digits_all
from tsne_curator import pipeline_call
from tsne_curator.tables import FINDING_COLUMNS
from worker.pipeline.errors import InputError
from worker.pipeline.progress import TqdmProgress
from worker.pipeline.storage.rundir import RunDir


def _leftovers(path) -> list[str]:  # noqa: ANN001
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if ".tmp" in p.name)


NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


@pytest.fixture(scope="module")
def array_run(tmp_path_factory):
    feats, labels, images = digits(360)
    return tc.from_arrays(feats, labels, tmp_path_factory.mktemp("arr") / "emb",
                          class_names=NAMES, images=images, seed=0)


# -- tc.from_arrays --------------------------------------------------------------------------
def test_from_arrays_goes_through_the_features_path(array_run):
    run = RunDir(array_run.path)
    samples = run.read_samples()
    assert sorted(samples.classes) == sorted(NAMES) and len(samples) == 360
    spec = run.read_meta()["dataset"]["spec"]
    assert spec == f"features:{array_run.path.resolve() / 'input' / 'features.npy'}"
    feats, labels, _ = digits(360)
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
    feats, labels, pixels = digits(200)
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


def test_ctrl_c_leaves_no_partial_file_and_the_next_call_resumes(tmp_path, monkeypatch):
    feats, labels, _ = digits(200)
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


def test_a_dozen_samples_of_three_classes_make_a_run(tmp_path):
    """Four per class: the label evidence's later rounds once left a fold's voters with
    one class, which scikit-learn refused ("needs samples of at least 2 classes")."""
    x, y, _ = digits_all()
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
