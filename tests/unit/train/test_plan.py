"""Training settings chosen from the subset size (worker/train/plan.py), their warnings,
the comparison verdict, and trainings run side by side stopping at the first failure."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from worker.train.plan import (
    MIN_STEPS_PER_EPOCH,
    TARGET_TOTAL_STEPS,
    auto_batch_size,
    make_plan,
    steps_per_epoch,
)
from worker.train.verdict import compare, difference, recommend, verdict


def test_the_digits_demo_gets_a_batch_that_trains():
    plan = make_plan(1275, None, None, None)
    assert (plan.batch_size, plan.epochs) == (32, 16)
    assert plan.steps_per_epoch == 39 and plan.total_steps == 624
    assert plan.chosen == ("batch size", "epochs") and not plan.warnings


def test_cifar_size_keeps_the_usual_batch():
    plan = make_plan(50_000, None, None, None)
    assert plan.batch_size == 256 and plan.epochs == 10


def test_given_settings_are_kept_and_a_too_large_batch_warns():
    plan = make_plan(1275, 256, 10, 0.2)
    assert (plan.batch_size, plan.epochs, plan.lr) == (256, 10, 0.2) and plan.chosen == ()
    assert len(plan.warnings) == 1 and "4 optimizer steps per epoch" in plan.warnings[0]


def test_too_few_steps_in_all_warns():
    plan = make_plan(1275, 32, 2, None)
    assert plan.steps_per_epoch >= MIN_STEPS_PER_EPOCH
    assert "78 optimizer steps in all" in plan.warnings[0]


@given(n=st.integers(640, 5_000_000), world=st.sampled_from([1, 2, 4, 8]))
def test_the_rule_always_gives_enough_steps(n, world):
    """Property: from 640 images up, the chosen settings never warn."""
    plan = make_plan(n, None, None, None, world)
    assert plan.steps_per_epoch >= MIN_STEPS_PER_EPOCH
    assert plan.total_steps >= min(TARGET_TOTAL_STEPS, plan.steps_per_epoch * 100)
    assert not plan.warnings
    assert plan.batch_size % world == 0  # every rank takes the same share of a batch


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 600), batch=st.integers(1, 700), world=st.sampled_from([1, 2, 3, 4]))
def test_steps_match_the_training_loop(n, batch, world):
    """The planner's count is the number of batches the loop's source yields, on every
    rank, each of ``batch // world`` samples, no sample twice in an epoch."""
    import numpy as np
    import torch

    from worker.train.batches import InMemory, RankShare
    from worker.train.data import TrainData

    assume(world <= batch <= n)  # what validate() and resolve() let through
    x = np.zeros((n, 3, 2, 2), np.uint8)
    data = TrainData(x, np.arange(n, dtype=np.int64), x[:1], np.zeros(1, np.int64), ["a"],
                     np.arange(n), "hold-out")
    seen = []
    for rank in range(world):
        source = InMemory(data, RankShare(torch.device("cpu"), rank, world, batch))
        batches = list(source.train_batches(0, torch.Generator().manual_seed(0)))
        assert len(batches) == source.steps_per_epoch == steps_per_epoch(n, batch, world) >= 1
        assert {len(y) for _, y in batches} == {batch // world}
        seen += [int(i) for _, y in batches for i in y]
    assert len(seen) == len(set(seen))


def test_auto_batch_is_a_power_of_two_in_range():
    for n in (10, 700, 3000, 10**7):
        b = auto_batch_size(n)
        assert 16 <= b <= 256 and b & (b - 1) == 0


def _rows(accs: dict[str, list[float]], batch: int = 64) -> list[dict]:
    return [{"subset": s, "batch_size": batch, "final_test_acc": a, "train_size": 1000}
            for s, values in accs.items() for a in values]


def test_a_clear_gain_and_a_difference_inside_the_noise():
    results = compare(_rows({"full": [0.80, 0.81, 0.805], "filtered": [0.85, 0.852, 0.848],
                             "random": [0.84, 0.80, 0.86]}))
    line = verdict(results, 64)
    assert "filtered is better than full by +4.50" in line
    assert "filtered − random = +1.67" in line and "inside the noise" in line
    filtered = next(r for r in results if r.subset == "filtered")
    assert filtered.sd == pytest.approx(0.002)


def test_one_seed_says_there_is_no_spread():
    line = verdict(compare(_rows({"full": [0.8], "filtered": [0.9]})), 64)
    assert "one seed" in line and "+10.00 pp" in line


def test_identical_seeds_have_no_spread_to_test():
    d = difference([0.5, 0.5], [0.5, 0.5])
    assert d.se == 0 and not d.clear


def test_form_values_are_coerced_or_refused_in_one_line():
    from worker.jobs.job_params import train_config
    from worker.pipeline.errors import InputError
    from worker.train.config import check_numbers

    cfg = check_numbers(train_config({"batch_size": "", "epochs": 3.0, "nproc": "2",
                                      "lr": "0.05"}))
    assert (cfg.batch_size, cfg.epochs, cfg.nproc, cfg.lr) == (None, 3, 2, 0.05)
    for params, message in (({"epochs": 2.5}, "--epochs must be a whole number"),
                            ({"batch_size": "abc"}, "--batch-size must be a whole number"),
                            ({"lr": "fast"}, "--lr must be a number > 0"),
                            ({"lr": float("inf")}, "--lr must be a number > 0"),
                            ({"epochs": 1e12}, "--epochs must be a whole number from 1 to"),
                            ({"nproc": None}, "--nproc must be a whole number"),
                            ({"nnodes": 1, "node_rank": 5}, "--node-rank must be .* < 1"),
                            ({"weight_decay": float("nan")}, "--weight-decay must be")):
        with pytest.raises(InputError, match=message):
            check_numbers(train_config(params))


def test_a_batch_larger_than_the_subset_is_refused():
    from worker.pipeline.errors import InputError
    from worker.train.config import TrainConfig
    from worker.train.plan import resolve

    assert resolve(TrainConfig(batch_size=500), 500)[0].batch_size == 500
    with pytest.raises(InputError, match=r"from 1 to 500 \(the subset's size\), got 501"):
        resolve(TrainConfig(batch_size=501), 500)


def test_the_verdict_names_the_subset_to_ship():
    better = compare(_rows({"full": [0.80, 0.81, 0.805], "filtered": [0.82, 0.815, 0.81],
                            "corrected": [0.86, 0.862, 0.858]}))
    line = verdict(better, 64)
    assert "corrected is better than full" in line and line.endswith("ship: corrected")
    assert recommend(better, 64) == "corrected"
    # A curated subset inside the noise of full is not worth shipping over it.
    level = compare(_rows({"full": [0.80, 0.82, 0.81], "filtered": [0.81, 0.80, 0.82]}))
    assert recommend(level, 64).startswith("full")
    assert recommend(compare(_rows({"full": [0.8], "filtered": [0.9]})), 64) is None


def test_optimizer_auto_is_lars_from_a_batch_of_4096():
    """``--optimizer auto`` (the default) trains the paper's large
    batches with LARS and the others with SGD; a named optimizer is kept at any batch."""
    from worker.train.config import TrainConfig
    from worker.train.plan import LARS_FROM, optimizer_for, resolve

    assert optimizer_for("auto", LARS_FROM) == "lars"
    assert optimizer_for("auto", LARS_FROM - 1) == "sgd"
    assert optimizer_for("sgd", 8192) == "sgd" and optimizer_for("lars", 64) == "lars"
    assert TrainConfig().optimizer == "auto"
    big = resolve(TrainConfig(batch_size=8192, epochs=2), 50_000)[0]
    small = resolve(TrainConfig(batch_size=1024, epochs=2), 50_000)[0]
    assert (big.optimizer, small.optimizer) == ("lars", "sgd")


def test_trainings_at_once_stop_at_the_first_failure():
    """``--parallel``'s scheduler: in order when 1; with several, the first failure sets
    the stop that the trainings under way watch (they stop at their next progress
    report), none begins after it, and the failure is raised once they have ended."""
    import threading
    import time

    from worker.pipeline.errors import InputError
    from worker.train.experiment import _map

    order: list[int] = []
    _map(order.append, 4, 1)
    assert order == [0, 1, 2, 3]

    began, lock, stop = [], threading.Lock(), threading.Event()

    def train(i: int) -> None:
        if stop.is_set():  # as run_experiment's trainings do before they launch
            return
        with lock:
            began.append(i)
        if i == 0:
            time.sleep(0.05)
            raise InputError("training 0 failed")
        deadline = time.monotonic() + 10
        while not stop.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)  # a training under way, reporting progress
        assert stop.is_set(), "the running training was never told to stop"

    with pytest.raises(InputError, match="training 0 failed"):
        _map(train, 8, 2, stop)
    assert 0 in began and set(began) <= {0, 1}
