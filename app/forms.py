"""Web forms to typed job parameters: the browser sends text, floats and empty boxes; the
jobs take :mod:`worker.jobs.job_params` dataclasses. Every number is checked by the one rule of
worker.pipeline.number_params, so a form, the CLI and a job's JSON are refused in the same words.
"""

from __future__ import annotations

from worker.jobs.job_params import train_config
from worker.train.config import TrainConfig, check_numbers

# The Retrain form's fields: a train job's settings of the same names.
TRAIN_FIELDS = ("subset", "model", "batch_size", "epochs", "nproc")


def train_form(fields: list[dict]) -> TrainConfig:
    """The Retrain form (Dash's list of ``{"id": {"name": …}, "value": …}``) as a checked
    :class:`TrainConfig`; an empty batch size or epochs is left to the planner, an empty
    process count is 1. Raises a one-line InputError for a value that cannot work."""
    values = {f["id"]["name"]: f.get("value") for f in fields}
    params = {name: values[name] for name in TRAIN_FIELDS if values.get(name) is not None}
    params["nproc"] = params.get("nproc") or 1
    return check_numbers(train_config(params))  # a field left out keeps its default
