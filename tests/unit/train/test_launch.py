"""The training launcher's progress line (worker/train/launch.py): a training not started
yet says so."""

from __future__ import annotations


def test_a_training_not_started_yet_says_so_not_step_0_of_0():
    from worker.train.launch import TrainConfig, progress_message

    assert progress_message(TrainConfig(epochs=3), None, []) == "train: starting the processes"
    live = {"epoch": 0, "step": 5, "total_steps": 30}
    assert progress_message(TrainConfig(epochs=3), live, []) == "train: epoch 1/3, step 5/30"
    assert progress_message(TrainConfig(epochs=3), {**live, "loss": 2.30259}, []) == \
        "train: epoch 1/3, step 5/30, loss 2.303"
