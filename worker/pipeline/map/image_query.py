"""More like this for an image file that is not in the run: its nearest samples.

The file goes the way the run's own samples went, so that its distances are the map's:

- decoded as ingest decodes an image (``sources/decoding.open_rgb``: a JPEG at the reduced
  DCT scale the step asked for), after the limits an uploaded file must meet
  (:func:`decode_query_image`);
- made a thumbnail as ingest makes them (``sources/ingest.thumbnail``) where the run's
  features were computed from the thumbnails (``pixels``, and networks whose thumbnails
  are the images: CIFAR-size data); else handed to the network as a file is (a JPEG's
  bytes to the device's decoder on CUDA, as extraction does there by default);
- through the run's own backbone, weights, input size and precision (the extract step's
  record), resized and normalised on the device as extraction does
  (``features/datapath``), or, for ``pixels``, standardised by the run's own pixel means;
- projected with the run's PCA (:func:`~.embedding.run_pca`) and searched exactly, as
  :func:`~.similar.nearest_samples` searches.

A sample's own file, queried, finds that sample at distance 0 (to float rounding):
tests/integration/pipeline/map/test_image_query.py holds each path to that.

A network fine-tuned on the run's labels is not kept, so its features cannot be made again
for one image: such a run is refused, as is a run made from a features file (no network).
The query's features are kept in the run's ``cache/`` under the extract step's key and the
file's sha256. The network stays loaded in the process for the next query: on a CIFAR-10
mini run (2,000 photographs, EfficientNet-Lite0, bf16) on 2 cores of an Intel Xeon
(2026-11), a fresh process's first query took 2.7 to 3.1 s (importing torch 1.1 s,
building the network 1.7 s), and each new image after it 25 ms.
"""

from __future__ import annotations

import hashlib
import io
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from cachetools import LRUCache, cached
from PIL import Image, UnidentifiedImageError

from worker.pipeline.errors import InputError
from worker.pipeline.map.similar import nearest_rows, search_space
from worker.pipeline.number_params import check
from worker.pipeline.sources.decoding import open_rgb
from worker.pipeline.sources.ingest import thumbnail
from worker.pipeline.storage.rundir import RunDir, StepRecord, save_npy

if TYPE_CHECKING:
    import torch
    from torch import nn

    from worker.pipeline.features.backbones import Backbone

# An uploaded image larger than this is refused before it is decoded: a photograph from a
# camera is 2 to 15 MiB.
MAX_QUERY_BYTES = 32 * 2**20
# More pixels than this is refused before any pixel is decoded (a 1-bit PNG of 20,000 ×
# 20,000 pixels is a 48 kB file that decodes to 1.2 GB of RGB). Below Pillow's own warning
# (89 megapixels), so Pillow's check never speaks first for a file of allowed size.
MAX_QUERY_PIXELS = 64_000_000
# What Pillow may take the file for (its format names); anything else is "not an image".
QUERY_FORMATS = ("JPEG", "PNG", "WEBP", "BMP", "GIF", "TIFF")
ACCEPTED = "JPEG, PNG, WebP, BMP, GIF or TIFF"


def _amount(n: int) -> str:
    """``n`` bytes as a person reads it: MiB from 1 MiB up, else bytes."""
    return f"{n / 2**20:,.1f} MiB".replace(".0 MiB", " MiB") if n >= 2**20 else f"{n:,} bytes"


def read_query_file(path: Path, max_bytes: int = MAX_QUERY_BYTES) -> bytes:
    """The contents of the image file at ``path``; one that is too large is refused before
    it is read.

    Raises
    ------
    InputError
        No such file, a folder, unreadable, or larger than ``max_bytes``.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"no file {path}: give a sample index (a whole number) or an image "
                         "file")
    if not path.is_file():
        raise InputError(f"{path} is not a file: give a sample index or an image file")
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError(f"{path} is {_amount(size)}, more than the {_amount(max_bytes)} a "
                         "query image may be: give a smaller image")
    try:
        return path.read_bytes()
    except PermissionError:
        raise InputError(f"permission denied: {path}: give this user read access to it, "
                         "or copy it") from None


def decode_query_image(data: bytes, min_side: int | None = None,
                       max_bytes: int = MAX_QUERY_BYTES,
                       max_pixels: int = MAX_QUERY_PIXELS) -> Image.Image:
    """An uploaded image file's contents as an RGB image, decoded as ingest decodes a
    sample (:func:`~worker.pipeline.sources.decoding.open_rgb`; an animated GIF gives its
    first frame).

    Parameters
    ----------
    data : the file's bytes
    min_side : a JPEG decodes at the smallest DCT scale that keeps both sides at least this
        (as the run's samples were decoded for the same use); None: full size
    max_bytes, max_pixels : the limits, checked before any pixel is decoded

    Raises
    ------
    InputError
        Empty; larger than ``max_bytes``; not a JPEG, PNG, WebP, BMP, GIF or TIFF file;
        more than ``max_pixels`` pixels; truncated or damaged. One line each.
    """
    if not data:
        raise InputError(f"the image file is empty: give a {ACCEPTED} file")
    if len(data) > max_bytes:
        raise InputError(f"the image file is {_amount(len(data))}, more than the "
                         f"{_amount(max_bytes)} a query image may be: give a smaller image")
    try:
        with warnings.catch_warnings():
            # Pillow warns from 89 megapixels and refuses from twice that; its warning is
            # a refusal here.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=QUERY_FORMATS) as img:
                width, height = img.size
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _too_many_pixels("more pixels than Pillow decodes", max_pixels) from None
    except UnidentifiedImageError:
        raise InputError(f"not an image file Pillow reads: give a {ACCEPTED} file") from None
    except Exception as exc:  # noqa: BLE001 - a damaged header is a bad file, never a bug
        raise _damaged(exc) from None
    if width * height > max_pixels:
        raise _too_many_pixels(f"{width:,} × {height:,} pixels", max_pixels)
    try:
        img, _ = open_rgb(io.BytesIO(data), min_side)  # type: ignore[arg-type]  # a file
        return img
    except Exception as exc:  # noqa: BLE001 - a truncated or damaged file, in one line
        raise _damaged(exc) from None


def _too_many_pixels(shown: str, max_pixels: int) -> InputError:
    return InputError(f"the image has {shown}, more than the {max_pixels / 1e6:g} megapixels "
                      "a query image may have: give a smaller image")


def _damaged(exc: Exception) -> InputError:
    """The one line for a file whose header or pixels do not decode, with Pillow's why."""
    why = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:200]
    return InputError(f"the image file is truncated or damaged ({why}): give the whole file")


def query_features(run: RunDir, data: bytes) -> np.ndarray:
    """An image file's features, as the run's samples got theirs: float32 (D,).

    Kept in the run's ``cache/`` under the extract step's key and the file's sha256: a
    second query of the same file reads them.

    Raises
    ------
    InputError
        The file is refused (:func:`decode_query_image`); the run has no features yet; its
        features cannot be made again for one image (a fine-tuned network, or a features
        file with no network behind it).
    """
    done = run.step("extract")
    model = done.get("model")
    if done.get("status") != "done" or not model:
        raise InputError(f"run {run.run_id} has no features yet: run 'curator extract --out "
                         f"{run.path}' first")
    if model == "features":
        raise InputError(f"run {run.run_id} was made from a features file: there is no "
                         "network to put an image through; query by sample index")
    if done.get("finetune_epochs"):
        raise InputError(f"run {run.run_id}'s features come from a network fine-tuned on its "
                         "labels (--finetune), which is not kept: query by sample index, or "
                         "make a run without --finetune")
    seed = _random_init_seed(run, done)
    key = done.get("cache_key")
    path = None
    if key:
        seeded = "" if seed is None else f"-seed{seed}"
        path = run.cache / f"query-{key}{seeded}-{hashlib.sha256(data).hexdigest()}.npy"
        feats = _cached(path, done.get("feature_dim"))
        if feats is not None:
            return feats
    feats = _pixel_query(run, data) if model == "pixels" else \
        _network_query(run, done, data, seed)
    if done.get("feature_dim") and len(feats) != done["feature_dim"]:
        raise InputError(f"the image gave {len(feats)} features and run {run.run_id} has "
                         f"{done['feature_dim']}: its model changed since extraction; "
                         "run 'curator extract' again")
    if path is not None:
        save_npy(path, feats)
    return feats


def _cached(path: Path, dim: int | None) -> np.ndarray | None:
    """The features kept at ``path``, or None when there are none (or they are damaged:
    they are made again)."""
    if not path.is_file():
        return None
    try:
        feats = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError):
        return None
    if feats.dtype != np.float32 or feats.ndim != 1 or (dim and len(feats) != dim):
        return None
    return feats


def _random_init_seed(run: RunDir, done: StepRecord) -> int | None:
    """The seed a network without weights was initialised from (the run's ``--seed``, as
    extraction seeds torch before building it), or None for learned weights and pixels."""
    if done.get("pretrained") is not False:
        return None
    return int(run.read_meta()["dataset"].get("seed", 0))


def _thumbnail_side(run: RunDir) -> int:
    """The side of the run's thumbnails (ingest's, at most 64 px)."""
    return int(run.load_array(run.thumbnails, "ingest", mmap=True).shape[1])


def _pixel_query(run: RunDir, data: bytes) -> np.ndarray:
    """``pixels`` features of the image: its thumbnail, flattened (one channel where the
    run's thumbnails are grey) and standardised by the run's own per-pixel mean and
    deviation, as :func:`~worker.pipeline.features.extraction.pixel_features` standardised
    the samples."""
    thumbs = run.load_array(run.thumbnails, "extract", mmap=True)
    size = thumbs.shape[1]
    q = thumbnail(decode_query_image(data, min_side=size), size)
    mean, std = _pixel_stats(run)
    if len(mean) == size * size:  # the run's images are grey: one channel, as extraction
        q = np.asarray(Image.fromarray(q).convert("L"))
    x = q.reshape(-1).astype(np.float32)
    return ((x - mean) / np.where(std > 0, std, 1.0)).astype(np.float32)


@cached(LRUCache(maxsize=4), key=lambda run: (str(run.path), run.step("extract")
                                                .get("cache_key")),
        lock=threading.Lock())
def _pixel_stats(run: RunDir) -> tuple[np.ndarray, np.ndarray]:
    """The per-dimension mean and deviation of the run's flattened thumbnails, float32
    (D,) each, computed as extraction computed them (the same array, the same reductions:
    the same numbers)."""
    x = np.asarray(run.load_array(run.thumbnails, "extract"))
    if np.array_equal(x[..., 0], x[..., 1]) and np.array_equal(x[..., 0], x[..., 2]):
        x = x[..., 0]
    x = x.reshape(len(x), -1).astype(np.float32)
    return x.mean(axis=0), x.std(axis=0)


def _network_query(run: RunDir, done: StepRecord, data: bytes, seed: int | None,
                   jpeg_on_device: bool | None = None) -> np.ndarray:
    """The run's network's features of the image, float32 (D,).

    ``jpeg_on_device``: hand a JPEG file's bytes to the device's decoder, as extraction
    does with ``--decode device``; by default (None) where extraction does by default, on
    CUDA. (The extract step does not record where its JPEGs were decoded: the two decoders
    give features within cosine 0.999 of each other, features/datapath.py.)
    """
    import torch

    from worker.pipeline.features.datapath import (
        JPEG_MAGIC,
        HostBatch,
        from_thumbnails,
        normalise,
        to_device,
    )

    meta = run.read_meta()
    side = _thumbnail_side(run)
    bb, net, device = _run_network(run, done, seed)
    if meta.get("thumbnails_exact", False):
        # The network read ingest's thumbnails (they were the images): the query's own.
        image = Image.fromarray(thumbnail(decode_query_image(data, min_side=side), side))
    else:  # the network read each file, decoded for its input side
        image = decode_query_image(data, min_side=bb.input_size)
    on_device = device.type == "cuda" if jpeg_on_device is None else jpeg_on_device
    if on_device and not meta.get("thumbnails_exact", False) and data.startswith(JPEG_MAGIC):
        # The bytes as extraction's loader hands a JPEG file to the device (a row of
        # encoded bytes: sizes (-1, row)); the host decode above only checked the file.
        batch = HostBatch(torch.frombuffer(bytearray(data), dtype=torch.uint8),
                          torch.tensor([0, len(data)]), torch.tensor([[-1, 0]]))
    else:
        batch = from_thumbnails(np.array(image, np.uint8)[None])  # writable: torch's
    with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                enabled=done.get("precision") == "bf16"):
        feats = net(normalise(to_device(batch, bb.input_size, device), bb.mean, bb.std))
    return feats.float()[0].cpu().numpy().astype(np.float32)


def _run_network(run: RunDir, done: StepRecord, seed: int | None
                 ) -> tuple[Backbone, nn.Module, torch.device]:
    """The run's network as its extract step ``done`` built it (:func:`_network`)."""
    weights = done.get("weights")
    native = int(run.read_meta().get("native_size", _thumbnail_side(run)))
    return _network(done["model"], weights, _stamp(weights), done.get("input_size"), native,
                    seed)


def load_network(run: RunDir) -> bool:
    """Load the run's network into this process, as a first image query would, so that
    query waits only for its own features (30 ms, not 4.6 s with torch's import on 2
    cores: docs/benchmarks.md, "More like this"). Returns False, loading nothing, where an
    image query takes no network (pixels, a features file, a fine-tuned network, no
    features yet)."""
    done = run.step("extract")
    if (done.get("status") != "done" or done.get("model") in (None, "pixels", "features")
            or done.get("finetune_epochs")):
        return False
    _run_network(run, done, _random_init_seed(run, done))
    return True


def _stamp(weights: str | None) -> tuple[int, int] | None:
    """A weights file's size and modification time: a file replaced is loaded again."""
    if not weights:
        return None
    try:
        st = Path(weights).stat()
    except OSError:
        return None  # build_backbone says the file is missing
    return st.st_size, st.st_mtime_ns


# The last networks loaded, by what decides them: loading EfficientNet-Lite0 is most of a
# first query's time, so a server's next query of a run of the same model skips it. A
# query while the network loads (the Curate page loads it as it opens) waits for that load.
@cached(LRUCache(maxsize=2), condition=threading.Condition(), info=True)
def _network(model: str, weights: str | None, stamp: tuple[int, int] | None,
             input_size: int | None, native_size: int, seed: int | None
             ) -> tuple[Backbone, nn.Module, torch.device]:
    """``model`` as extraction built it (:func:`~worker.pipeline.features.extraction.
    network_features`), ready for inference, and its device: (Backbone, network, device)."""
    import torch

    from worker.pipeline.features.backbones import build_backbone, pick_device
    from worker.pipeline.features.extraction import _inference_net

    device = pick_device("auto")
    with torch.random.fork_rng(devices=[]):  # the process's own random state is left alone
        if seed is not None:  # random weights: drawn as extraction drew them
            torch.manual_seed(seed)
        # The class count sizes only the head, which features never pass through.
        bb = build_backbone(model, Path(weights) if weights else None, 10, native_size,
                            input_size)
    return bb, _inference_net(bb.net, device), device


def nearest_to_image(run: RunDir, data: bytes, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` samples nearest an image file's contents ``data``, nearest first, in the
    space of :func:`~.similar.nearest_samples` (no sample is left out).

    Returns
    -------
    indices : int64 (min(k, N),), distances : float32, the same shape, Euclidean in the
    features' PCA to :data:`~.similar.SPACE_DIMS` dimensions

    Raises
    ------
    InputError
        ``k`` out of range, or the file or the run refused (:func:`query_features`).
    """
    k = int(check("similar_k", k))
    feats = query_features(run, data)
    space = search_space(run)
    pca = space.pca
    q = feats if pca.mean is None else (feats - pca.mean) @ pca.components.T
    return nearest_rows(space, q, k)
