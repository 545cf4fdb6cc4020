"""Every number is checked before use: one definition per parameter
(worker.pipeline.number_params) used by the CLI, the forms, the callbacks and the jobs."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import build_parser
from worker.pipeline.errors import InputError
from worker.pipeline.number_params import PARAMS, check


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _numeric_flags() -> list[tuple[str, str, str]]:
    """(command, flag, parameter) for every flag that takes a number."""
    out = []
    for command, parser in _commands().items():
        for action in parser._actions:
            key = getattr(action.type, "param", None)
            if action.option_strings and key:
                assert PARAMS[key].flag == action.option_strings[0]
                out.append((command, action.option_strings[0], key))
    return out


FLAGS = _numeric_flags()


def _skeleton(command: str) -> list[str]:
    """The least arguments ``command`` parses with: its positionals and required options."""
    argv = [command]
    for action in _commands()[command]._actions:
        if not action.option_strings and action.dest not in ("help",):
            # A number where the positional is one (``curator similar RUN INDEX``).
            argv.append("1" if action.nargs == "+" or action.type is not None else "x")
        elif action.required:
            argv += [action.option_strings[0], "x"]
    return argv


def test_no_command_takes_a_number_without_its_range():
    """A flag whose default is a number, or parsed as int/float, goes through the registry."""
    for command, parser in _commands().items():
        for action in parser._actions:
            if action.type in (int, float) and action.option_strings:
                pytest.fail(f"curator {command} {action.option_strings[0]} has no range")
    assert {f for _, f, _ in FLAGS} >= {"--lr", "--weight-decay", "--batch-size", "--epochs",
                                        "--seeds", "--nnodes", "--node-rank", "--min-samples",
                                        "--eps", "--perplexity", "--pca-dims", "--port",
                                        "--concurrency", "--inject-noise", "--input-size"}


BAD = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e20", "1e300", "-1", "0",
                       "2.5", "-0.5", "abc", "", " ", "1e-400", "0x10"]) | \
    st.floats(allow_nan=True, allow_infinity=True).map(repr) | \
    st.integers(min_value=-10**30, max_value=10**30).map(str)


@settings(max_examples=400, deadline=None)
@given(flag=st.sampled_from(FLAGS), value=BAD)
def test_a_bad_number_on_any_command_is_one_line_and_exit_2(flag, value):
    command, option, key = flag
    try:
        check(key, value)
        return  # a value in range (a huge integer may be): nothing to refuse
    except InputError:
        pass
    stderr = io.StringIO()
    with pytest.raises(SystemExit) as exit_, contextlib.redirect_stderr(stderr):
        build_parser().parse_args([*_skeleton(command), f"{option}={value}"])
    err = stderr.getvalue()
    assert exit_.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: argument {option}"), err
    assert "Traceback" not in err and "ValueError" not in err


@pytest.mark.parametrize(("argv", "message"), [
    # The findings of the probe, each refused at the command line.
    (["retrain", "r", "--lr", "inf"], "--lr: must be a number > 0"),
    (["retrain", "r", "--weight-decay", "nan"], "--weight-decay: must be a number ≥ 0"),
    (["retrain", "r", "--batch-size", "1e20"], "--batch-size: must be a whole number"),
    (["retrain", "r", "--epochs", "1e20"], "--epochs: must be a whole number from 1"),
    (["experiment", "r", "--seeds", "1e20"], "--seeds: must be a whole number from 1 to 100"),
    (["retrain", "r", "--nnodes", "0"], "--nnodes: must be a whole number from 1"),
    (["cluster", "r", "--min-samples", "1e20"], "--min-samples: must be a whole number"),
    (["cluster", "r", "--eps", "1e300"], "--eps: must be a number > 0 and ≤ 1,000,000"),
    (["embed", "r", "--perplexity", "nan"], "--perplexity: must be a number > 0"),
    (["embed", "r", "--pca-dims", "0"], "--pca-dims: must be a whole number from 2"),
    (["serve", "--port", "70000"], "--port: must be a whole number from 1 to 65,535"),
    (["worker", "--concurrency", "-1"], "--concurrency: must be a whole number from 1"),
])
def test_the_probed_values_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
