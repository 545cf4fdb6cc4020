"""Verdicts that know when training stopped early: the plateau rule on
per-epoch rows, the verdict that names no winner while a compared run was still
learning (tests/integration/train/test_train.py runs a real under-trained experiment)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.train.convergence import (
    MAX_GAIN_PP,
    MIN_WINDOW,
    convergence,
    window_of,
)
from worker.train.verdict import compare, recommend, verdict


def _curve(epochs: int, rate: float, noise: float = 0.0, seed: int = 0) -> list[dict]:
    """Test accuracy rising to 0.8 with time constant 1/rate, loss falling likewise."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, epochs + 1)
    acc = 0.8 * (1 - np.exp(-rate * t)) + rng.normal(0, noise, epochs)
    loss = 0.3 + 2.0 * np.exp(-rate * t)
    return [{"epoch": e, "test_acc": float(a), "loss": float(v)}
            for e, (a, v) in enumerate(zip(acc, loss, strict=True))]


def test_a_plateau_converges_and_a_climb_does_not():
    assert convergence(_curve(60, 0.3)).converged
    c = convergence(_curve(20, 0.05))  # still climbing ~2 pp an epoch at the end
    assert not c.converged and c.window == 4 and c.gain_pp > 4
    assert "still gained" in c.reason("filtered") and "last 4 epochs" in c.reason("filtered")


def test_one_noisy_evaluation_neither_hides_nor_invents_a_gain():
    flat = _curve(40, 0.5, noise=0.003, seed=1)
    flat[-1]["test_acc"] += 0.01  # one lucky last epoch: +1 pp
    assert convergence(flat).converged  # the trend over 8 epochs barely moves
    climbing = _curve(40, 0.04)
    climbing[-1]["test_acc"] -= 0.02  # one unlucky last epoch
    assert not convergence(climbing).converged


def test_too_few_epochs_are_not_judged_converged():
    for epochs in range(0, MIN_WINDOW + 1):
        c = convergence(_curve(epochs, 5.0))
        assert not c.converged and c.window == 0
    assert "too few epochs" in convergence(_curve(1, 5.0)).reason("full")


@given(st.integers(0, 10_000))
def test_the_window_is_a_fifth_and_leaves_an_epoch_before_it(epochs):
    w = window_of(epochs)
    if w:
        assert MIN_WINDOW <= w < epochs and w == max(MIN_WINDOW, math.ceil(0.2 * epochs))
    else:
        assert epochs <= MIN_WINDOW


def _rows(accs: dict[str, list[float]], converged: dict[str, bool], gain: float = 3.1,
          epochs: int = 20) -> list[dict]:
    return [{"subset": s, "batch_size": 64, "final_test_acc": a, "train_size": 1000,
             "epochs": epochs, "converged": str(converged[s]),
             "gain_pp": gain if not converged[s] else 0.1, "loss_drop": 0.01}
            for s, values in accs.items() for a in values]


def test_the_verdict_names_no_winner_while_a_run_is_still_learning():
    accs = {"full": [0.70, 0.701, 0.699], "filtered": [0.62, 0.621, 0.619]}
    results = compare(_rows(accs, {"full": True, "filtered": False}))
    line = verdict(results, 64)
    assert line.startswith("batch 64: not converged: filtered still gained 3.1 pp over its "
                           "last 4 epochs") and "run with --epochs 40" in line
    assert "better" not in line and "worse" not in line and "ship" not in line
    assert recommend(results, 64) is None
    # Both converged: the same accuracies give a verdict and a subset to ship.
    done = compare(_rows(accs, {"full": True, "filtered": True}))
    assert "filtered is worse than full" in verdict(done, 64) and recommend(done, 64)
    # An experiment from before the rule (no converged column) is judged as before.
    old = compare([{k: v for k, v in r.items() if k not in ("converged", "gain_pp")}
                   for r in _rows(accs, {"full": True, "filtered": True})])
    assert old[0].converged is None and "worse than full" in verdict(old, 64)
    assert MAX_GAIN_PP == 0.5


def test_a_gain_smaller_than_the_test_set_can_tell_is_no_gain():
    """The digits demo's filtered training ended 0.967, 0.958, 0.967, 0.967 on its
    359-image hold-out: a trend of +0.84 pp, inside one standard error of its accuracy
    there (0.99 pp), so converged; the same curve on 10,000 test images is not."""
    rows = [{"test_acc": a, "loss": 0.3} for a in
            (0.9, 0.93, 0.95, 0.96, 0.96, 0.965, 0.962, 0.965, 0.966, 0.967, 0.966, 0.967,
             0.958, 0.967, 0.967)]
    small = convergence(rows, test_size=359)
    assert small.converged and small.gain_pp == pytest.approx(0.45 * 2, abs=0.1)
    assert small.cut_pp == pytest.approx(100 * math.sqrt(0.964 * 0.036 / 359), abs=0.02)
    big = convergence(rows, test_size=10_000)
    assert not big.converged and big.cut_pp == MAX_GAIN_PP


def test_the_results_page_draws_accuracy_against_batch_size():
    """The paper's Fig. 6–7 on the Results page: a trace per subset over
    batch sizes with the seeds' spread as error bars, hollow where a run had not
    converged."""
    from app.result_figures import accuracy_vs_batch

    rows = []
    for batch, done in ((1024, True), (8192, False)):
        for subset, accs in (("full", (0.75, 0.76)), ("filtered", (0.77, 0.79))):
            rows += [{"subset": subset, "batch_size": batch, "final_test_acc": a,
                      "train_size": 100, "epochs": 20, "converged": str(done),
                      "gain_pp": 0.1 if done else 2.0, "loss_drop": 0.0} for a in accs]
    fig = accuracy_vs_batch(compare(rows))
    traces = {t.name: t for t in fig.data}
    assert set(traces) == {"full", "filtered"}
    assert list(traces["filtered"].x) == [1024, 8192]
    assert list(traces["filtered"].y) == pytest.approx([78.0, 78.0])
    assert list(traces["filtered"].error_y.array) == pytest.approx([1.414, 1.414], abs=1e-3)
    assert list(traces["full"].marker.symbol) == ["circle", "circle-open"]
    assert fig.layout.xaxis.type == "log"
