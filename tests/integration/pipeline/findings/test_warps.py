"""The warp match and the copy-robust index (findings/warps.py) on real CIFAR-10
photographs: against a plain per-pair loop (oracle), on copies that a crop, a stretch, a
rotation or a blur moved, on what the index finds, and on a run whose copies moved."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image, ImageFilter

from tests.integration.conftest import train_photos
from worker.pipeline.findings import get_kind
from worker.pipeline.findings.files import load_findings
from worker.pipeline.findings.pixels import grey_views, match_pairs
from worker.pipeline.findings.warps import (
    K_KEY,
    VARIANTS,
    WARPS,
    WarpOptions,
    candidates,
    copy_views,
    key_neighbours,
    warp_evidence,
    warp_match,
    warped,
)


@pytest.fixture(scope="module")
def photos(cifar_mini) -> np.ndarray:
    """200 CIFAR-10 train photographs, 20 a class: uint8 (200, 32, 32, 3)."""
    return train_photos(cifar_mini, 20)


def _moved(img: np.ndarray, how: str) -> np.ndarray:
    """A copy of a 32-px photograph that a crop, a stretch, a rotation or a blur moved."""
    im = Image.fromarray(img)
    if how == "crop":  # keeps 72% of the area, off centre
        im = im.crop((1, 3, 28, 30)).resize((32, 32), Image.Resampling.BICUBIC)
    elif how == "aspect":  # stretched 1.3× along x, centre-cropped back
        im = im.resize((42, 32), Image.Resampling.BICUBIC).crop((5, 0, 37, 32))
    elif how == "rotate":
        im = im.rotate(8, resample=Image.Resampling.BILINEAR, fillcolor=(128, 128, 128))
    elif how == "blur":
        im = im.filter(ImageFilter.GaussianBlur(1.2))
    return np.asarray(im)


def _plain(va, i: int, vb, j: int) -> float:
    """The warp match of one pair, the slow way: every warp of each, both ways."""
    best = -1.0
    for src, s, dst, d in ((va, i, vb, j), (vb, j, va, i)):
        w = warped(src.thumbs[s:s + 1])[0]
        for other in (dst.view(d), dst.view(d, torch.tensor(True))):
            best = max(best, float((w @ other).max()))
    return best


@pytest.mark.parametrize("block, slots", [(256, 256 * 64), (4, 12)])
def test_the_grid_match_is_the_plain_loop(photos, monkeypatch, block, slots):
    """Pairs grouped by query and padded per block give each pair the value a loop over
    its warps gives, whatever the queries' degrees (1 to 9, and a hub of 30), across
    blocks (``BLOCK`` 4, ``BLOCK_SLOTS`` 12: a block per few queries, the hub alone), for
    two sets and within one (both ways in one pass)."""
    import worker.pipeline.findings.warps as warps

    monkeypatch.setattr(warps, "BLOCK", block)
    monkeypatch.setattr(warps, "BLOCK_SLOTS", slots)
    rng = np.random.default_rng(0)
    v = copy_views(photos[:60])
    w = copy_views(photos[60:100])
    a = np.r_[np.repeat(np.arange(30), rng.integers(1, 10, 30)), np.full(30, 7)]
    b = rng.integers(0, 40, len(a))
    for other, bb in ((w, b), (v, b + 20)):
        got = warp_match(v, a, other, bb, refine=np.zeros(len(a), bool))
        want = np.array([_plain(v, i, other, j) for i, j in zip(a, bb, strict=True)])
        assert got.shape == (len(a), len(VARIANTS))
        np.testing.assert_allclose(got, np.repeat(want[:, None], len(VARIANTS), 1),
                                   atol=1e-5)
    assert len(WARPS) > 40 and WARPS[0] == (1.0, 1.0, 0.0, 0.0, 0.0)
    # the refinement starts from the grid's best and keeps it when it finds nothing better
    assert (warp_match(v, a, w, b) >= warp_match(v, a, w, b, refine=np.zeros(len(a), bool))
            - 1e-6).all()


@pytest.mark.parametrize("how", ["crop", "aspect", "rotate", "blur"])
def test_a_moved_copy_matches_its_source_above_every_other_picture(photos, how):
    """Each moved copy's warp match with its source beats its match with all 199 other
    photographs, and on crops and stretches lifts what the pixel match alone gives."""
    copies = np.stack([_moved(p, how) for p in photos[:40]])
    v, c = copy_views(photos), copy_views(copies)
    n = len(photos)
    a = np.repeat(np.arange(40), n)
    b = np.tile(np.arange(n), 40)
    m = warp_match(c, a, v, b).max(1).reshape(40, n)
    own = m[np.arange(40), np.arange(40)]
    m[np.arange(40), np.arange(40)] = -1
    assert (own > m.max(1)).mean() >= 0.95, (own, m.max(1))
    assert np.median(own) > 0.95
    if how in ("crop", "aspect"):
        pixel = match_pairs(grey_views(copies), np.arange(40), grey_views(photos),
                            np.arange(40))
        assert np.median(own) > np.median(pixel) + 0.03, (np.median(own), np.median(pixel))


def test_the_key_index_finds_blurred_and_mirrored_copies(photos):
    """A mirror leaves the key unchanged; a blurred or colour-shifted copy has its source
    among its ``K_KEY`` nearest keys out of 200 photographs."""
    v = copy_views(photos)
    mirrored = copy_views(photos[:, :, ::-1].copy())
    np.testing.assert_allclose(mirrored.key, v.key, atol=1e-5)
    moved = np.stack([_moved(p, "blur") for p in photos[:20]] +
                     [np.clip(p * 0.7 + 40, 0, 255).astype(np.uint8) for p in photos[20:40]])
    near = key_neighbours(v.key, copy_views(moved).key, K_KEY)
    found = (near == np.arange(40)[:, None]).any(1)
    assert found.mean() >= 0.95, np.flatnonzero(~found)
    own = key_neighbours(v.key, None, 3)
    assert (own != np.arange(len(photos))[:, None]).all()  # never itself


def test_candidates_and_the_reference():
    """Candidates: no repeats, no self pairs; the reference is each row's best and its
    ``rank + 1``-th best match, as a sort says."""
    a, b = candidates(np.array([[1, 2], [0, 0], [1, 1]]), np.array([[2], [2], [2]]))
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(0, 1), (0, 2), (1, 0),
                                                               (1, 2), (2, 1)]
    rng = np.random.default_rng(1)
    photos = rng.integers(0, 255, (12, 32, 32, 3), dtype=np.uint8)
    v = copy_views(photos)
    a, b = candidates(np.stack([rng.permutation(12)[:6] for _ in range(12)]))
    # refine every pair
    ev = warp_evidence(v, v, a, b, 12, WarpOptions(2, same=True, promise=-1.0))
    np.testing.assert_allclose(ev.match, warp_match(v, a, v, b), atol=1e-6)
    grid = warp_match(v, a, v, b, refine=np.zeros(len(a), bool))[:, 0]
    for i in range(12):
        for c in range(len(VARIANTS)):
            assert ev.best[i, c] == pytest.approx(ev.match[a == i, c].max())
        m = np.sort(grid[a == i])[::-1]  # distinctness: read on the grid
        assert ev.distinct[i] == pytest.approx(max(1 - m[min(2, len(m) - 1)], 1e-3))
    # its own reference: the best candidate of rows drawn at random is refined
    ev = warp_evidence(v, v, a, b, 12, WarpOptions(2, same=True))
    assert len(ev.reference) == 12 and ev.promise > -1.0


@pytest.fixture(scope="module")
def moved_run(cifar_mini, tmp_path_factory):
    """300 CIFAR-10 photographs with 10% injected copies made by the held-out
    transformations (crop, rotate, jitter, blur, jpeg, overlay, aspect), through the CIFAR
    ResNet-20 (trained on CIFAR-10's true labels)."""
    from tests.integration.conftest import shared_file
    from tests.integration.pipeline.findings.test_proposed import _pipeline
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.storage.rundir import RunDir

    base = tmp_path_factory.mktemp("moved")
    root = base / "imgs"
    for cls in sorted(p.name for p in (cifar_mini / "train").iterdir()):
        (root / cls).mkdir(parents=True)
        for f in sorted((cifar_mini / "train" / cls).glob("*.jpg"))[30:60]:
            (root / cls / f.name).write_bytes(f.read_bytes())
    weights = shared_file("weights/resnet20-12fca82f.th")
    return _pipeline(RunDir(base / "run"), f"folder:{root}", inject_duplicates=0.1,
                     duplicate_strength="held-out",
                     features=FeatureOptions(model="cifar-resnet20", weights=weights))


def test_copies_that_moved_are_marked_by_the_warp_match(moved_run):
    """Through the whole pipeline: crops, stretches and rotations are found (the pixel match
    alone found 0.07 of the crops and stretches: docs/benchmarks.md), every mark is right,
    a copy only the warp test could find says so in its why-line, and is proposed."""
    from worker.pipeline.findings.base import View
    from worker.pipeline.sources.inject import read_truth

    n = len(moved_run.read_samples())
    table = load_findings(moved_run, n)["duplicate"]
    kind = get_kind("duplicate")
    scores = kind.score_truth(table, table.issue, read_truth(moved_run.path))
    assert scores["precision"] == 1.0, scores
    assert scores["recall"] >= 0.8, scores
    assert min(scores["recall_by_strength"][h] for h in ("crop", "aspect", "rotate")) >= 0.5
    f = table.facts
    # marks whose pixel match to the kept copy is below the pixel test's cut: the pixel
    # test could not have made them
    moved = np.flatnonzero(table.issue & (f["match"] < table.info["pixel_cut"]))
    assert len(moved) >= 3, "no mark rests on the warp test"
    samples = moved_run.read_samples()
    view = View(samples.paths, [str(c) for c in range(10)], samples.labels)
    assert "warped match" in kind.why(table, int(moved[0]), view)
    assert not kind.dropping(table)[moved].any()  # proposed: kept until a person decides
