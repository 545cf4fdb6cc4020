"""Feature extraction (worker/pipeline/features/extraction.py) on real images: pretrained
features that separate classes, the file path and the thumbnail path giving the same
features, fine-tuning, weights files, and bf16 features cached apart from fp32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.integration.conftest import shared_file
from worker.pipeline.errors import InputError
from worker.pipeline.features.backbones import build_backbone, read_state_dict
from worker.pipeline.features.extraction import (
    ADAPT_LR,
    SCRATCH_LR,
    extract,
    finetune_lr,
)
from worker.pipeline.features.feature_options import FeatureOptions
from worker.pipeline.sources.datasets import parse_spec
from worker.pipeline.sources.ingest import DatasetOptions, ingest
from worker.pipeline.storage.rundir import RunDir


def _knn_accuracy(x: np.ndarray, y: np.ndarray) -> float:
    from sklearn.model_selection import cross_val_score
    from sklearn.neighbors import KNeighborsClassifier

    return float(cross_val_score(KNeighborsClassifier(5), x, y, cv=3).mean())


def test_pretrained_cifar_resnet_features_separate_classes(cifar_mini, tmp_path):
    weights = shared_file("weights/resnet20-12fca82f.th")
    run = RunDir(tmp_path / "run")
    ds = ingest(run, DatasetOptions(parse_spec(f"folder:{cifar_mini}", split="test")))
    assert run.read_meta()["thumbnails_exact"]
    feats = extract(run, ds, FeatureOptions(model="cifar-resnet20", weights=weights,
                                            batch_size=128))
    assert feats.shape == (1000, 64) and feats.dtype == np.float32
    assert _knn_accuracy(feats, ds.samples.labels) > 0.6  # chance is 0.1
    # Same key → served from the cache, not recomputed.
    cached = list(run.cache.glob("features-*.npy"))
    assert len(cached) == 1
    mtime = cached[0].stat().st_mtime_ns
    again = extract(run, ds, FeatureOptions(model="cifar-resnet20", weights=weights))
    assert np.array_equal(again, feats) and cached[0].stat().st_mtime_ns == mtime


def test_file_decoding_path_matches_thumbnail_path(small_folder, tmp_path):
    """Folders whose thumbnails are not exact decode files through a DataLoader instead."""
    from worker.pipeline.features.extraction import network_features

    run = RunDir(tmp_path / "run")
    ds = ingest(run, DatasetOptions(parse_spec(f"folder:{small_folder}")))
    opts = FeatureOptions(model="resnet18", batch_size=32, num_workers=1)
    thumbs = np.load(run.thumbnails)
    torch.manual_seed(0)
    a = network_features(ds, thumbs, opts, 32)
    b = network_features(ds, None, opts, 32)
    assert a.shape == (90, 512)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_finetune_then_extract(cifar_mini, tmp_path):
    run = RunDir(tmp_path / "run")
    ds = ingest(run, DatasetOptions(parse_spec(f"folder:{cifar_mini}", split="test")))
    feats = extract(run, ds, FeatureOptions(model="cifar-resnet20", finetune_epochs=1,
                                            batch_size=100))
    assert feats.shape == (1000, 64) and np.isfinite(feats).all()
    step = run.read_meta()["steps"]["extract"]
    # No weights: trained from random initialisation, at the from-scratch rate.
    assert step["finetune_epochs"] == 1 and step["finetune_lr"] == SCRATCH_LR


def test_finetuning_rate_follows_whether_weights_were_loaded():
    weights = shared_file("weights/resnet20-12fca82f.th")
    assert build_backbone("cifar-resnet20", weights, 10, 32).pretrained
    assert not build_backbone("cifar-resnet20", None, 10, 32).pretrained
    assert (finetune_lr(True), finetune_lr(False)) == (ADAPT_LR, SCRATCH_LR)
    assert ADAPT_LR < SCRATCH_LR


def test_weights_that_do_not_fit(tmp_path):
    weights = shared_file("weights/resnet20-12fca82f.th")
    with pytest.raises(InputError, match="does not fit this model"):
        build_backbone("cifar-resnet56", weights, 10, 32)
    with pytest.raises(InputError, match="weights file not found"):
        read_state_dict(tmp_path / "missing.th")
    (tmp_path / "junk.th").write_bytes(b"garbage")
    with pytest.raises(InputError, match="cannot read weights file"):
        read_state_dict(tmp_path / "junk.th")


def test_bf16_features_agree_with_fp32_and_are_cached_apart(cifar_mini, tmp_path):
    weights = shared_file("weights/resnet20-12fca82f.th")
    run = RunDir(tmp_path / "run")
    ds = ingest(run, DatasetOptions(parse_spec(f"folder:{cifar_mini}", split="test")))
    opts = {"model": "cifar-resnet20", "weights": weights, "batch_size": 250}
    fp32 = extract(run, ds, FeatureOptions(precision="fp32", **opts))
    assert run.read_meta()["steps"]["extract"]["precision"] == "fp32"
    bf16 = extract(run, ds, FeatureOptions(precision="bf16", **opts))
    assert run.read_meta()["steps"]["extract"]["precision"] == "bf16"
    assert len(list(run.cache.glob("features-*.npy"))) == 2  # one cache entry each
    assert not np.array_equal(fp32, bf16)
    cos = (fp32 * bf16).sum(1) / (np.linalg.norm(fp32, axis=1) * np.linalg.norm(bf16, axis=1))
    assert cos.min() > 0.99
