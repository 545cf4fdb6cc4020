"""Pruning by value (worker/pipeline/pruning.py): the prototype score against a plain
computation, CCS's coverage sampling, each class's quota, the verdict against pruning's
own random control, fractions that round to nothing, and rows that are not finite."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.pipeline import pruning
from worker.pipeline.errors import InputError
from worker.pipeline.pruning import choose, coverage_pick, prototype_distance, quota
from worker.train.subsets import parse_subset
from worker.train.verdict import compare, control_of, verdict


# -- the score -----------------------------------------------------------------------------
def test_prototype_distance_is_the_cosine_distance_to_the_kept_class_mean(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 12)).astype(np.float32) + 3.0
    y = rng.integers(0, 4, 300)
    keep = rng.random(300) > 0.2
    keep[y == 3] = False  # a class with nothing kept: no prototype
    monkeypatch.setattr(pruning, "BLOCK", 64)  # several blocks
    got = prototype_distance(x.astype(np.float16), y, keep)
    xc = x.astype(np.float16).astype(np.float64)
    xc -= xc[keep].mean(axis=0)
    u = xc / np.linalg.norm(xc, axis=1, keepdims=True)
    for c in range(3):
        centre = u[keep & (y == c)].mean(axis=0)
        centre /= np.linalg.norm(centre)
        np.testing.assert_allclose(got[y == c], 1 - u[y == c] @ centre, atol=1e-4)
    assert np.isnan(got[y == 3]).all()


def test_coverage_spreads_the_budget_over_the_score_range():
    """Most scores sit in one stratum: coverage still takes from every non-empty one,
    the easy and hard ends take their ends, and each picks exactly its quota."""
    rng = np.random.default_rng(1)
    scores = np.concatenate([rng.normal(0.3, 0.01, 900), np.linspace(0.5, 1.0, 100)])
    labels = np.zeros(1000, np.int64)
    pool = np.arange(1000)
    picked = coverage_pick(scores, 200, rng, strata=10)
    assert len(picked) == len(set(picked.tolist())) == 200
    bins = np.minimum(((scores - scores.min()) / np.ptp(scores) * 10).astype(int), 9)
    assert set(bins[picked].tolist()) == set(bins.tolist())
    assert (scores[picked] > 0.45).sum() > 60  # the sparse range is not starved
    easy = choose(scores, labels, pool, 0.2, "easy", 0)
    hard = choose(scores, labels, pool, 0.2, "hard", 0)
    assert scores[easy].max() <= np.sort(scores)[199] <= np.sort(scores)[-200] <= \
        scores[hard].min()
    assert len(easy) == len(hard) == quota(1000, 0.2) == 200


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=6),
       st.floats(0.01, 0.99), st.sampled_from(["coverage", "easy", "hard"]),
       st.integers(0, 3))
def test_every_method_keeps_each_class_quota_from_the_pool(sizes, f, method, seed):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    scores = np.random.default_rng(seed).random(len(labels)).astype(np.float32)
    pool = np.flatnonzero(np.random.default_rng(seed + 1).random(len(labels)) < 0.8)
    chosen = choose(scores, labels, pool, f, method, seed)
    assert set(chosen.tolist()) <= set(pool.tolist()) and np.all(np.diff(chosen) > 0)
    for c in np.unique(labels[pool]):
        assert (labels[chosen] == c).sum() == quota(int((labels[pool] == c).sum()), f)


def test_the_verdict_compares_pruned_with_its_own_random_control():
    assert control_of("pruned@0.5") == "random@0.5" and control_of("filtered") == "random"
    rows = [{"subset": s, "batch_size": 128, "final_test_acc": a, "train_size": n,
             "epochs": 30, "converged": "True", "gain_pp": 0.1, "loss_drop": 0.0}
            for s, n, accs in (("full", 1000, (0.80, 0.81, 0.805)),
                               ("pruned@0.5", 450, (0.78, 0.785, 0.78)),
                               ("random@0.5", 450, (0.75, 0.752, 0.749)),
                               ("random", 900, (0.70, 0.702, 0.699)))
            for a in accs]
    results = {r.subset: r for r in compare(rows)}
    assert results["pruned@0.5"].vs_random.diff == pytest.approx(
        np.mean([0.78, 0.785, 0.78]) - np.mean([0.75, 0.752, 0.749]))
    assert results["random@0.5"].vs_random is None  # the control has none
    line = verdict(list(results.values()), 128)
    assert "pruned@0.5 is better than random@0.5 by +3.13" in line
    assert "pruned@0.5 is worse than full" in line


def test_a_fraction_that_rounds_to_0_or_1_is_refused_and_jobs_write_one_name():
    from worker.jobs.job_params import train_config

    for text in ("pruned@0.0000001", "random@0.9999996"):
        with pytest.raises(InputError, match="between 0 and 1"):
            parse_subset(text)
    assert train_config({"subset": " pruned@.50 "}).subset == "pruned@0.5"


def test_a_row_that_is_not_finite_is_scored_nan_and_chosen_last():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    y = np.repeat([0, 1], 20)
    clean = prototype_distance(x, y, np.ones(40, bool))
    x[7, 2] = np.nan
    scores = prototype_distance(x, y, np.ones(40, bool))
    assert np.isnan(scores[7]) and np.isfinite(np.delete(scores, 7)).all()
    assert not np.allclose(np.delete(scores, 7), np.delete(clean, 7))  # 7 left the mean
    for method in ("coverage", "easy", "hard"):
        some = choose(scores, y, np.arange(40), 0.5, method, 0)
        assert 7 not in some and len(some) == 20
        assert 7 in choose(scores, y, np.arange(40), 1.0, method, 0)  # last, but there
