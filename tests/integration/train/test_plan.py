"""The steps budget gives a smaller subset more epochs, on the digits run."""

from __future__ import annotations

from worker.train.plan import (
    steps_per_epoch,
)


def test_the_steps_budget_gives_a_smaller_subset_more_epochs(fresh_run):
    """With ``--budget steps`` (the default) every subset gets at least
    full's optimizer steps; with ``epochs`` every subset gets the epochs given. The plan
    says each subset's epochs and steps."""
    from worker.train.config import TrainConfig
    from worker.train.data import select_subset
    from worker.train.experiment import budgeted, plan_lines
    from worker.train.plan import resolve

    n_full = len(select_subset(fresh_run, "full", 0).indices)
    n_filtered = len(select_subset(fresh_run, "filtered", 0).indices)
    assert n_filtered < n_full
    cfgs = [resolve(TrainConfig(subset=s, batch_size=64, epochs=10), n_full)[0]
            for s in ("full", "filtered", "random")]
    steps = {c.subset: budgeted(fresh_run, c, n_full, "steps") for c in cfgs}
    full_steps = steps_per_epoch(n_full, 64) * 10
    assert steps["full"] == (cfgs[0], full_steps)
    for subset in ("filtered", "random"):
        cfg, n_steps = steps[subset]
        assert cfg.epochs > 10 and full_steps <= n_steps < full_steps + steps_per_epoch(
            n_filtered, 64)
    same = {c.subset: budgeted(fresh_run, c, n_full, "epochs") for c in cfgs}
    assert {cfg.epochs for cfg, _ in same.values()} == {10}
    assert same["filtered"][1] < full_steps
    [line] = plan_lines(list(steps.values()), "steps")
    assert line.startswith("experiment: plan: batch 64 (SGD), the same optimizer steps: full 10 "
                           f"epochs = {full_steps:,} steps; filtered {steps['filtered'][0].epochs}")
    assert plan_lines(list(same.values()), "epochs")[0].startswith(
        "experiment: plan: batch 64 (SGD), the same epochs: full 10 epochs")
