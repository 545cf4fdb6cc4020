"""The feature-quality gauge (worker/pipeline/curation/gauge.py): what the number measures,
its verdict levels and the advice it gives."""

from __future__ import annotations

import numpy as np

from worker.pipeline.curation.gauge import FAIR_FROM, STRONG_FROM, judge, neighbour_agreement


def _blobs(n_per: int, n_classes: int, spread: float, seed: int = 0):
    """Gaussian blobs in 2-D and each point's 10 nearest others."""
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_classes, 2)) * 10
    y = np.repeat(np.arange(n_classes), n_per)
    x = centres[y] + rng.normal(size=(len(y), 2)) * spread
    nb = NearestNeighbors(n_neighbors=11).fit(x).kneighbors(x, return_distance=False)[:, 1:]
    return nb, y


def test_pure_neighbourhoods_read_one_and_mixed_ones_read_near_zero():
    nb, y = _blobs(100, 5, 0.5)
    none = np.zeros(len(y), dtype=bool)
    assert neighbour_agreement(nb, y, none, y, 5) > 0.99
    nb_mixed, _ = _blobs(100, 5, 100.0)  # features that see nothing of the classes
    assert neighbour_agreement(nb_mixed, y, none, y, 5) < 0.15


def test_correcting_the_wrong_labels_restores_the_agreement():
    """Label noise on good features lowers the given labels' agreement; correcting the
    issues brings it back, which is what tells noise apart from weak features."""
    nb, y = _blobs(100, 5, 0.5)
    rng = np.random.default_rng(1)
    wrong = rng.random(len(y)) < 0.3
    noisy = np.where(wrong, (y + 1) % 5, y)
    none = np.zeros(len(y), dtype=bool)
    assert neighbour_agreement(nb, noisy, none, noisy, 5) < 0.6
    assert neighbour_agreement(nb, noisy, wrong, y, 5) > 0.99


def test_verdict_levels():
    assert judge(STRONG_FROM).level == "strong"
    assert judge(FAIR_FROM).level == "fair" and judge(STRONG_FROM - 1e-3).level == "fair"
    weak = judge(FAIR_FROM - 1e-3)
    assert weak.level == "weak" and "efficientnet-lite0" in weak.line


def test_the_advice_names_a_step_the_run_has_not_taken():
    """A weak run on the pretrained default is told to fine-tune, not to use the backbone it
    already uses; pixels and random weights are pointed at it; a features file at images."""
    weak = FAIR_FROM - 1e-3
    pretrained = judge(weak, {"model": "efficientnet-lite0", "pretrained": True,
                              "finetune_epochs": 0}).advice
    assert "--finetune" in pretrained and "efficientnet-lite0" not in pretrained
    tuned = judge(weak, {"model": "efficientnet-lite0", "pretrained": True,
                         "finetune_epochs": 5}).advice
    assert "more --finetune epochs" in tuned
    for extract in ({"model": "pixels", "pretrained": None},
                    {"model": "resnet18", "pretrained": False}):
        assert "pretrained default (--model efficientnet-lite0)" in judge(weak, extract).advice
    own = judge(FAIR_FROM, {"model": "features", "finetune_epochs": 0}).advice
    assert "from the images with --model efficientnet-lite0" in own


def test_features_learned_from_the_labels_cannot_read_strong():
    """The scratch row of the detection grid (ResNet-20 trained from random initialisation
    on CIFAR-10N's noisy labels) measured 0.655 with F1 0.315: agreement with labels the
    network was trained on proves little, so it reads weak; a pretrained network
    fine-tuned on them reads at most fair; without --finetune the number decides."""
    scratch = {"model": "cifar-resnet20", "pretrained": False, "finetune_epochs": 15}
    assert judge(0.655, scratch).level == "weak" and "same labels" in judge(0.655, scratch).line
    tuned = {"model": "efficientnet-lite0", "pretrained": True, "finetune_epochs": 3}
    assert judge(0.9, tuned).level == "fair" and judge(0.5, tuned).level == "weak"
    plain = {"model": "efficientnet-lite0", "pretrained": True, "finetune_epochs": 0}
    assert judge(0.9, plain).level == "strong"
