"""More like this for an image file (worker/pipeline/map/image_query.py): on real runs of
real images, a sample's own file comes back first at distance 0, which holds only when the
file went the samples' own way (decode, thumbnail or file route, backbone, weights, input
size, precision, PCA); ``curator similar`` and ``run.similar`` agree; each refusal is one
line; the query's features are kept in the run's cache and read from there."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import tsne_curator as tc
from tests.digits_arrays import digits
from tests.refusals import one_line
from worker.pipeline.curation.similar_rows import similar_rows
from worker.pipeline.errors import InputError
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.map import image_query
from worker.pipeline.map.embedding import EmbeddingOptions, run_pca
from worker.pipeline.map.image_query import (
    MAX_QUERY_BYTES,
    decode_query_image,
    nearest_to_image,
    query_features,
)
from worker.pipeline.map.similar import SPACE_DIMS, nearest_rows, search_space
from worker.pipeline.runner import run_pipeline
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions
from worker.pipeline.storage.rundir import RunDir

CLASSES = ("airplane", "cat", "ship")


def _curator(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True,
                          text=True, timeout=300)


def _png(pixels: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def _folder_run(folder: Path, out: Path, features: FeatureOptions, seed: int = 0) -> RunDir:
    run = RunDir(out)
    run_pipeline(run, DatasetOptions(parse_spec(f"folder:{folder}"), seed=seed), features,
                 EmbeddingOptions())
    return run


@pytest.fixture(scope="module")
def photo_runs(cifar_mini, tmp_path_factory) -> dict[str, RunDir]:
    """Four runs of 30 CIFAR-10 photographs (3 classes × 10), one per route to the features:
    ``exact`` (32-px JPEGs: the network reads ingest's thumbnails, EfficientNet-Lite0),
    ``files`` (JPEGs of about 330 px, which decode at half scale, and PNGs of 40 to 49 × 48
    px, enlarged from the same photographs: the network reads each file, EfficientNet-Lite0),
    ``device`` (the same files, the JPEGs decoded by torchvision's decoder as on a GPU:
    ``--decode device``) and ``random`` (the 32-px JPEGs through a CIFAR ResNet-20 with
    random weights, drawn from seed 3)."""
    root = tmp_path_factory.mktemp("query-photos")
    for c in CLASSES:
        (root / "exact" / c).mkdir(parents=True)
        (root / "files" / c).mkdir(parents=True)
        for j, f in enumerate(sorted((cifar_mini / "train" / c).glob("*.jpg"))[:10]):
            (root / "exact" / c / f.name).write_bytes(f.read_bytes())
            img = Image.open(f).convert("RGB")
            if j % 2:
                img.resize((330 + 2 * j, 320 + j), Image.Resampling.BICUBIC).save(
                    root / "files" / c / f.name, quality=90)
            else:
                img.resize((40 + j, 48), Image.Resampling.BICUBIC).save(
                    root / "files" / c / f"{f.stem}.png")
    return {"exact": _folder_run(root / "exact", root / "runs" / "exact", FeatureOptions()),
            "files": _folder_run(root / "files", root / "runs" / "files", FeatureOptions()),
            "device": _folder_run(root / "files", root / "runs" / "device",
                                  FeatureOptions(decode="device")),
            "random": _folder_run(root / "exact", root / "runs" / "random",
                                  FeatureOptions(model="cifar-resnet20", seed=3), seed=3)}


def _sample_file(run: RunDir, index: int) -> Path:
    return Path(run.read_meta()["dataset"]["spec"].removeprefix("folder:")) \
        / run.read_samples().paths[index]


def _assert_own_sample_first(run: RunDir, index: int, data: bytes) -> None:
    """The file's features are the sample's, and the sample is its nearest at distance 0
    (the run may hold exact copies of it at 0 as well)."""
    feats = run.load_array(run.features, "extract")
    q = query_features(run, data)
    assert q.dtype == np.float32 and q.shape == feats[index].shape
    assert np.linalg.norm(q - feats[index]) <= 1e-4 * np.linalg.norm(feats[index])
    idx, dist = nearest_to_image(run, data, 5)
    assert idx.dtype == np.int64 and dist.dtype == np.float32 and len(idx) == 5
    assert dist[0] < 1e-3 and index in idx[dist < 1e-3]
    assert np.all(np.diff(dist) >= 0)


@pytest.mark.parametrize("name", ["exact", "files", "random"])
def test_a_samples_own_file_is_its_nearest_at_distance_zero(photo_runs, name):
    run = photo_runs[name]
    samples = run.read_samples()
    # A JPEG and, in ``files``, a PNG: both routes of each run.
    for index in (samples.paths.index("cat/0001.jpg"), samples.paths.index("ship/0004.jpg")
                  if name != "files" else samples.paths.index("ship/0004.png")):
        _assert_own_sample_first(run, index, _sample_file(run, index).read_bytes())


def test_a_jpeg_decoded_on_the_device_is_decoded_there_for_the_query(photo_runs):
    """Where extraction hands JPEG bytes to the device's decoder (CUDA's default, here
    ``--decode device`` on the CPU), the query's JPEG goes the same way; a PNG is decoded on
    the host in both."""
    run = photo_runs["device"]
    feats = run.load_array(run.features, "extract")
    samples = run.read_samples()
    for path in ("cat/0001.jpg", "ship/0004.png"):
        index = samples.paths.index(path)
        q = image_query._network_query(run, run.step("extract"),
                                       _sample_file(run, index).read_bytes(), None,
                                       jpeg_on_device=True)
        assert np.linalg.norm(q - feats[index]) <= 1e-4 * np.linalg.norm(feats[index])


def test_a_digit_written_from_the_thumbnails_is_its_sample_at_distance_zero(fresh_run):
    """The digits demo's ``pixels``: the file is standardised by the run's own pixel
    statistics, grey as the run's images are; grey or RGB, the same sample."""
    thumbs = fresh_run.load_array(fresh_run.thumbnails, "ingest")
    for index in (0, 17, len(thumbs) - 1):
        _assert_own_sample_first(fresh_run, index, _png(thumbs[index][..., 0]))
        _assert_own_sample_first(fresh_run, index, _png(thumbs[index]))


def test_the_file_search_is_the_sample_search_from_the_same_point(fresh_run):
    """``nearest_rows`` is the one search: a sample's file finds the sample's neighbours,
    the sample itself first."""
    thumbs = fresh_run.load_array(fresh_run.thumbnails, "ingest")
    space = search_space(fresh_run)
    idx, _ = nearest_to_image(fresh_run, _png(thumbs[17]), 12)
    by_index = similar_rows(fresh_run, 17, 11)
    assert idx[0] == 17 and list(idx[1:]) == [r["index"] for r in by_index]
    assert list(nearest_rows(space, space.pca.x[17], 12)[0]) == list(idx)
    # The rows searched are the run's PCA, kept once per process.
    np.testing.assert_array_equal(space.pca.x, run_pca(fresh_run, SPACE_DIMS).x)
    assert search_space(fresh_run) is space


def test_curator_similar_and_run_similar_give_the_same_rows_for_a_file(photo_runs):
    run = photo_runs["files"]
    path = _sample_file(run, 7)
    r = _curator("similar", str(run.path), str(path), "--k", "6", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    handle = tc.open(run.path)
    for query in (path, str(path), path.read_bytes()):
        frame = handle.similar(query, k=6)
        assert rows == frame.to_dict("records")
    assert rows[0]["index"] == 7 and rows[0]["distance"] == 0.0 and rows[0]["rank"] == 1
    assert rows == similar_rows(run, path.read_bytes(), 6)
    text = _curator("similar", str(run.path), str(path), "--k", "2")
    assert text.returncode == 0, text.stderr
    assert len(text.stdout.splitlines()) == 3 and "Traceback" not in text.stderr


def test_the_features_are_cached_in_the_run_and_read_from_there(fresh_run):
    thumbs = fresh_run.load_array(fresh_run.thumbnails, "ingest")
    data = _png(thumbs[40])
    before = {p: p.stat().st_mtime_ns for p in fresh_run.path.rglob("*") if p.is_file()}
    similar_rows(fresh_run, data, 3)
    after = {p: p.stat().st_mtime_ns for p in fresh_run.path.rglob("*") if p.is_file()}
    written = sorted(p.relative_to(fresh_run.path).as_posix()
                     for p in after if before.get(p) != after[p])
    key = fresh_run.step("extract")["cache_key"]
    name = f"cache/query-{key}-{hashlib.sha256(data).hexdigest()}.npy"
    assert written == [name]  # nothing else, and nothing outside the run
    # The second query reads the kept features: put another sample's there, and the file
    # now finds that sample.
    feats = fresh_run.load_array(fresh_run.features, "extract")
    np.save(fresh_run.path / name, feats[300])
    assert nearest_to_image(fresh_run, data, 1)[0][0] == 300
    # Damaged kept features are made again.
    (fresh_run.path / name).write_bytes(b"not an array")
    assert nearest_to_image(fresh_run, data, 1)[0][0] == 40


def test_the_network_stays_loaded_for_the_next_image(photo_runs):
    run = photo_runs["exact"]
    image_query._network.cache_clear()
    for index in (2, 3):
        data = _sample_file(run, index).read_bytes() + b"\0" * index  # not in the cache
        query_features(run, data)
    assert image_query._network.cache_info().misses == 1
    assert image_query._network.cache_info().hits == 1


def test_loading_the_network_first_leaves_the_query_only_its_features(photo_runs,
                                                                       fresh_run):
    """What the Curate page starts in the background when a run opens: the query after it
    finds the network loaded; a run whose query takes no network loads nothing."""
    run = photo_runs["exact"]
    image_query._network.cache_clear()
    assert image_query.load_network(run)
    query_features(run, _sample_file(run, 4).read_bytes() + b"\0\0\0\0\0")
    assert image_query._network.cache_info().misses == 1
    assert image_query._network.cache_info().hits == 1
    assert not image_query.load_network(fresh_run)  # digits: pixels, no network
    assert image_query._network.cache_info().misses == 1


# -- refusals ---------------------------------------------------------------------------------
def _bomb(side: int) -> bytes:
    """A real 1-bit PNG of side × side pixels: a few kB that decode to side² × 3 bytes."""
    out = io.BytesIO()
    Image.new("1", (side, side)).save(out, "PNG")
    return out.getvalue()


def _truncated_jpeg(cifar_mini: Path) -> bytes:
    """The first half of a real JPEG, whose pixels stop in its middle."""
    data = (cifar_mini / "train" / "cat" / "0000.jpg").read_bytes()
    return data[:len(data) // 2]


def test_each_refused_file_is_one_input_error(cifar_mini):
    photo = (cifar_mini / "train" / "cat" / "0001.jpg").read_bytes()
    cases = [
        (lambda: decode_query_image(b""), "the image file is empty"),
        (lambda: decode_query_image(photo, max_bytes=100),
         f"the image file is {len(photo):,} bytes, more than the 100 bytes"),
        (lambda: decode_query_image(b"x" * (MAX_QUERY_BYTES + 1)),
         "the image file is 32 MiB, more than the 32 MiB a query image may be"),
        (lambda: decode_query_image(b"label,path\n3,cat.jpg\n"),
         "not an image file Pillow reads: give a JPEG, PNG, WebP, BMP, GIF or TIFF file"),
        (lambda: decode_query_image(_bomb(9_000)),
         "the image has 9,000 × 9,000 pixels, more than the 64 megapixels"),
        (lambda: decode_query_image(_bomb(10_000)),  # Pillow's warning, a refusal here
         "more pixels than Pillow decodes, more than the 64 megapixels"),
        (lambda: decode_query_image(_bomb(20_000)),  # Pillow's own refusal
         "more pixels than Pillow decodes"),
        (lambda: decode_query_image(photo, max_pixels=1000),
         "the image has 32 × 32 pixels, more than the 0.001 megapixels"),
        (lambda: decode_query_image(_truncated_jpeg(cifar_mini)),
         "the image file is truncated or damaged (OSError: "),
    ]
    for call, message in cases:
        with pytest.raises(InputError) as e:
            call()
        assert message in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert decode_query_image(photo).mode == "RGB"


def test_each_refused_file_is_one_line_from_curator_similar(digits_run, cifar_mini, tmp_path):
    files = {"empty.png": b"", "labels.csv": b"label,path\n3,cat.jpg\n",
             "bomb.png": _bomb(20_000), "cut.jpg": _truncated_jpeg(cifar_mini)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    with open(tmp_path / "huge.png", "wb") as fh:  # sparse: refused before it is read
        fh.truncate(MAX_QUERY_BYTES + 1)
    (tmp_path / "folder").mkdir()
    cases = {"empty.png": "the image file is empty",
             "labels.csv": "not an image file Pillow reads",
             "bomb.png": "more than the 64 megapixels a query image may have",
             "cut.jpg": "the image file is truncated or damaged",
             "huge.png": "is 32 MiB, more than the 32 MiB a query image may be",
             "folder": "is not a file", "missing.jpg": "no file"}
    before = sorted(p.name for p in (digits_run.cache).iterdir())
    for name, message in cases.items():
        r = _curator("similar", str(digits_run.path), str(tmp_path / name))
        assert r.returncode == 2, (name, r.stderr)
        assert message in one_line(r.stderr), (name, r.stderr)
    assert sorted(p.name for p in (digits_run.cache).iterdir()) == before
    with pytest.raises(InputError, match="no file"):
        tc.open(digits_run.path).similar(tmp_path / "missing.jpg")
    with pytest.raises(InputError, match="a sample index"):
        tc.open(digits_run.path).similar(2.5)


def test_a_run_whose_features_cannot_be_made_again_refuses_a_file(photo_runs, cifar_mini,
                                                                   tmp_path):
    photo = _sample_file(photo_runs["exact"], 0)
    tuned = _folder_run(photo.parents[1], tmp_path / "tuned",
                        FeatureOptions(model="cifar-resnet20", finetune_epochs=1))
    feats, labels, images = digits(60)
    array_run = tc.from_arrays(feats, labels, tmp_path / "arrays", images=images, seed=0)
    for run, message in ((tuned, "fine-tuned on its labels (--finetune), which is not kept"),
                         (RunDir(array_run.path), "made from a features file")):
        with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            tc.open(run.path).similar(photo)
        r = _curator("similar", str(run.path), str(photo))
        assert r.returncode == 2 and message in one_line(r.stderr)
        assert not list(run.cache.glob("query-*"))
    # By sample index they answer as ever.
    assert len(tc.open(tuned.path).similar(0, k=3)) == 3

