"""The data path to the network (features/datapath.py) on real CIFAR-10 JPEGs: the host
hands over uint8 only, and JPEGs decoded by the device's decoder give the features of the
host's decode."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from bench.jpeg_folder import write_folder
from worker.pipeline.errors import InputError
from worker.pipeline.features.datapath import LoaderOptions, host_batches, to_device
from worker.pipeline.features.extraction import network_features
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.decoding import open_rgb
from worker.pipeline.sources.ingest import DatasetOptions, ingest
from worker.pipeline.storage.rundir import RunDir

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


@pytest.fixture(scope="module")
def photos(cifar_mini, tmp_path_factory):
    """40 real CIFAR images as 256–500 px JPEG files (bench/jpeg_folder.py), ingested."""
    root = write_folder(tmp_path_factory.mktemp("photos") / "imgs", 40, cifar_mini)
    run = RunDir(tmp_path_factory.mktemp("run") / "run")
    ds = ingest(run, DatasetOptions(parse_spec(f"folder:{root}")))
    assert not run.read_meta()["thumbnails_exact"]
    return ds, run.read_meta()["native_size"]


@pytest.mark.parametrize("device", DEVICES)
def test_device_decoding_gives_the_features_of_host_decoding(photos, device):
    """The host decodes at a reduced DCT scale (draft), the device's decoder at full size
    and then takes the same blocks' means; both resize on the device. On CPU the 'device'
    decoder is torchvision's libjpeg.

    Mean cosine ≥ 0.999, and every image ≥ 0.997: EfficientNet-Lite0 is that sensitive to
    sub-grey-level changes (on these images, uniform noise of ±0.5 grey levels alone gives
    a least cosine of 0.986; docs/benchmarks.md, "The data path"), so no two JPEG decoders
    agree image by image to 0.999."""
    ds, native = photos
    opts = FeatureOptions(model="efficientnet-lite0", batch_size=16, precision="fp32",
                          device=device, decode="host", num_workers=1)
    host = network_features(ds, None, opts, native)
    dev = network_features(ds, None, replace(opts, decode="device"), native)
    cos = (host * dev).sum(1) / np.linalg.norm(host, axis=1) / np.linalg.norm(dev, axis=1)
    assert host.shape == (40, 1280)
    assert cos.mean() >= 0.999 and cos.min() >= 0.997, (cos.mean(), cos.min())


def test_the_host_hands_over_uint8_only(photos, cifar_mini):
    ds, _ = photos
    cpu = torch.device("cpu")
    for on_device in (False, True):
        batches = list(host_batches(ds, None, LoaderOptions(160, 16, 1, cpu, on_device)))
        assert sum(len(b) for b in batches) == 40
        for b in batches:
            assert b.data.dtype == torch.uint8 and b.data.ndim == 1
            assert (len(b.encoded) == len(b)) == on_device
            # drafted: a 256–500 px JPEG arrives at its size or half of it, never under the
            # network's side; JPEG bytes are the file's
            if not on_device:
                assert (b.sizes >= 160).all() and (b.sizes <= 500).all()
                assert b.offsets[-1] == int((b.sizes[:, 0] * b.sizes[:, 1] * 3).sum())
            else:
                assert all(b.part(r)[:3].tolist() == [255, 216, 255] for r in b.encoded)
            x = to_device(b, 160, cpu, ds)
            assert x.shape == (len(b), 3, 160, 160) and x.dtype == torch.float32


def test_images_smaller_than_the_network_take_both_routes(small_folder, tmp_path):
    """32-px CIFAR files bound for 160 px: upscaled on the device whoever decoded them."""
    ds = ingest(RunDir(tmp_path / "run"), DatasetOptions(parse_spec(f"folder:{small_folder}")))
    cpu = torch.device("cpu")
    x = [torch.cat([to_device(b, 160, cpu, ds) for b in host_batches(
        ds, None, LoaderOptions(160, 32, 0, cpu, on_device))]) for on_device in (False, True)]
    assert x[0].shape == (90, 3, 160, 160)
    assert (x[0] - x[1]).abs().mean() < 1.0  # grey levels: two libjpeg builds


def test_a_jpeg_that_changed_since_ingest_is_one_line(photos, tmp_path):
    ds, _ = photos
    path = ds.file_path(3)
    saved = path.read_bytes()
    try:
        path.write_bytes(saved[:200])
        for on_device in (False, True):
            how = LoaderOptions(160, 16, 0, torch.device("cpu"), on_device)
            with pytest.raises(InputError, match=r"cannot read .*changed since ingest"):
                for b in host_batches(ds, None, how):
                    to_device(b, 160, torch.device("cpu"), ds)
    finally:
        path.write_bytes(saved)


def test_draft_keeps_the_side_asked_for(photos):
    ds, _ = photos
    for i in range(10):
        full, size = open_rgb(ds.file_path(i))
        small, stored = open_rgb(ds.file_path(i), min_side=64)
        assert size == stored == full.size
        assert min(small.size) >= 64 and small.size[0] <= full.size[0] // 2
