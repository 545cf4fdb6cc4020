"""The API's keywords and the CLI's flags come from one declaration per option
(worker/option_table.py, read by tsne_curator/options.py): the same names, defaults and
checks, the same one-line refusals, lists taken as lists, and no argparse parser behind
the API."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tsne_curator as tc
from app.cli import build_parser
from tsne_curator.options import check_keyword, keywords
from worker.option_table import COMMANDS, NUMBER, PARSED, PATH, SWITCH, Option
from worker.pipeline.errors import InputError

_PARSER = build_parser()


_NUMBERS = sorted(name for name, o in COMMANDS["pipeline"].items() if o.kind == "number")


def _pipeline_flag(name: str, text: str) -> object:
    """What ``curator pipeline --out x --FLAG=TEXT`` parses option ``name`` to, or
    "refused"."""
    flag = COMMANDS["pipeline"][name].flag
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            ns = _PARSER.parse_args(["pipeline", "--out", "x", f"{flag}={text}"])
    except SystemExit:
        return "refused"
    return getattr(ns, name)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(_NUMBERS),
       value=st.one_of(st.integers(-5, 2**33), st.floats(), st.booleans(),
                       st.sampled_from(["", "x", "0.5", "1e3", "3", "-0"])))
def test_keywords_are_checked_exactly_as_the_cli_parses_their_flags(name, value):
    try:
        api = check_keyword(COMMANDS["pipeline"][name], value)
    except InputError as exc:
        assert name in str(exc)
        api = "refused"
    cli = _pipeline_flag(name, str(value))
    assert api == cli and type(api) is type(cli)


SUBSETS = ("full", "filtered", "random", "corrected", "pruned@0.5", "random@0.3")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(SUBSETS), min_size=1, max_size=4),
       st.text(alphabet="abcxyz", min_size=1, max_size=6))
def test_a_list_option_takes_a_list_and_quotes_what_it_refuses(names, bad):
    """``subsets=[...]`` is ``--subsets a,b``; a wrong name is quoted as given."""
    def parsed(value):  # noqa: ANN001, ANN202
        return keywords("experiment", {"subsets": value}, "experiment",
                        fixed={"run": "r"})["subsets"]

    assert parsed(names) == parsed(",".join(names)) == parsed(tuple(names))
    with pytest.raises(tc.InputError, match=f"unknown subset '{bad}'"):
        parsed([*names, bad])
    with pytest.raises(tc.InputError, match=r"list of names or whole numbers, got \{"):
        parsed(set(names))


PARSER = build_parser()  # every curator command, the app's curator serve included


def _skeleton(command: str) -> list[str]:
    """The least ``curator COMMAND`` parses: its positional argument and required flags."""
    argv = [command]
    for o in COMMANDS[command].values():
        argv += ([("0" if o.kind == NUMBER else "r")] if not o.flag
                 else [o.flag, "x"] if o.required else [])
    return argv


def _cli(command: str, option: Option, value: object) -> object:
    """What ``curator COMMAND`` parses ``option`` to from ``value``'s text, or the one line
    it refuses it with (after ``argument --flag: ``)."""
    arg = ([option.flag] if value else []) if option.kind == SWITCH \
        else [f"{option.flag}={value}"]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = PARSER.parse_args([*_skeleton(command), *arg])
    except SystemExit:
        line = err.getvalue().strip()
        assert "\n" not in line
        return ("refused", line.split(": ", 2)[-1].rsplit(" (see '", 1)[0])
    return getattr(ns, option.name)


def _api(option: Option, value: object) -> object:
    """What the API's check makes of ``value``, or the one line it refuses it with (after
    the keyword's label)."""
    try:
        return check_keyword(option, value)
    except InputError as exc:
        text = str(exc)
        assert "\n" not in text and text.startswith(option.label)
        return ("refused", text.removeprefix(f"{option.label} "))


# Every option an API call takes as a keyword, with its command: the positional run folder
# and curator cluster's --class are the calls' own arguments.
KEYWORDS = sorted((command, name) for command, options in COMMANDS.items()
                  for name, o in options.items() if o.flag and o.kind != "append")


TEXTS = st.one_of(st.text(max_size=12), st.sampled_from(
    ["0", "1", "-1", "0.5", "1e3", "2.5", "nan", "inf", "rule", "auto", "full,filtered",
     "pruned@0.5", "csv", "digits", "train", "fft", "resnet18", "pixels", " 3 "]))


@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(KEYWORDS), text=TEXTS)
@example(key=("cluster", "cut"), text="--")  # argparse dropped it: --cut=-- read as []
def test_a_keywords_text_is_read_and_refused_as_the_cli_reads_its_flag(key, text):
    """Any text for any keyword: the same value, or a one-line refusal where the CLI
    refuses, in the CLI's words for a number and a read text (``--cut``, ``--subsets``).
    (A choice's refusal lists the choices in the API's own words; an empty path is the
    API's own refusal: the CLI would read it as the current folder.)"""
    command, name = key
    option = COMMANDS[command][name]
    if option.kind == SWITCH or (option.kind == PATH and not text):
        return
    api, cli = _api(option, text), _cli(command, option, text)
    if option.kind not in (NUMBER, PARSED) and isinstance(api, tuple):
        api, cli = api[0], cli[0] if isinstance(cli, tuple) else cli
    assert api == cli and type(api) is type(cli)


NUMBERS = sorted(k for k in KEYWORDS if COMMANDS[k[0]][k[1]].kind == NUMBER)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(NUMBERS),
       value=st.one_of(st.integers(-5, 2**33), st.floats(), st.booleans()))
def test_an_out_of_range_number_is_the_same_one_line_error_as_the_flags(key, value):
    """A number out of range, not finite, or a fraction where a whole number is meant:
    the API's error says what the CLI's does, after naming the keyword and its flag."""
    command, name = key
    option = COMMANDS[command][name]
    api, cli = _api(option, value), _cli(command, option, value)
    assert api == cli and type(api) is type(cli)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_keyword_gives_the_defaults_the_command_parses(command):
    argv = _skeleton(command)
    parsed = vars(PARSER.parse_args(argv))
    fixed = {o.name: ("0" if o.kind == NUMBER else "r") if not o.flag else "x"
             for o in COMMANDS[command].values() if not o.flag or o.required}
    api = keywords(command, {}, command, fixed=fixed)
    assert api == {k: v for k, v in parsed.items() if k not in ("command", "fn")}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_commands_flags_are_the_declarations(command):
    """Each option the API declares is the flag ``curator COMMAND`` has: its name, flag,
    default, choices, metavar, help and range."""
    sub = next(a for a in PARSER._actions if a.dest == "command")
    actions = {a.dest: a for a in sub.choices[command]._actions if a.dest != "help"}
    assert set(actions) == set(COMMANDS[command])
    for name, o in COMMANDS[command].items():
        a = actions[name]
        assert a.option_strings[:1] == ([o.flag] if o.flag else [])
        assert (a.default, a.help, a.metavar, a.required) == \
            (o.default, o.help, o.metavar, o.required or not o.flag)
        assert (tuple(a.choices) if a.choices else None) == o.choices
        assert getattr(a.type, "param", None) == o.param


@pytest.mark.parametrize(("call", "word", "closest"), [
    (lambda: tc.pipeline("digits", out="never", perplexty=30), "perplexty", "perplexity"),
    (lambda: tc.from_arrays([[0.0]], [0], "never", min_sample=3), "min_sample",
     "min_samples"),
    (lambda: tc.pipeline("digits", out="never", colour="red"), "colour", None),
])
def test_a_misspelt_keyword_names_the_closest_option_in_one_line(call, word, closest):
    with pytest.raises(TypeError) as exc:
        call()
    text = str(exc.value)
    assert "\n" not in text and f"unexpected keyword argument {word!r}" in text
    hint = f"(did you mean {closest!r}?)" if closest else "did you mean"
    assert (hint in text) == bool(closest)
    assert not Path("never").exists()


def test_an_experiment_keyword_misspelt_is_refused_before_the_run_is_read():
    with pytest.raises(TypeError, match=r"'seed' \(did you mean 'seeds'\?\)"):
        keywords("experiment", {"seed": 2}, "experiment", fixed={"run": "r"})


def test_a_refused_value_of_each_kind_is_one_line_naming_keyword_and_flag():
    cases = {("pipeline", "perplexity"): -1, ("pipeline", "model"): "vgg",
             ("pipeline", "labels"): 3, ("cluster", "cut"): 2.5, ("cluster", "auto"): 1,
             ("experiment", "subsets"): "full,every", ("serve", "port"): 70_000,
             ("experiment", "batch_sizes"): [64.0], ("export", "dest"): 3}
    for (command, name), value in cases.items():
        option = COMMANDS[command][name]
        with pytest.raises(InputError) as exc:
            check_keyword(option, value)
        assert str(exc.value).startswith(f"{name} ({option.flag}) ")
        assert "\n" not in str(exc.value)


def test_an_option_not_given_is_the_steps_own_default():
    """The dataset, feature, map and training options' defaults, where the step's option
    object has a field for them, are that field's default: an option left out of a command
    or a call, and a step's options made without it (a form, a job record), agree."""
    import dataclasses

    from worker.option_table import DATASET, EMBEDDING, FEATURES, MULTI_NODE, TRAINING
    from worker.pipeline.features.feature_options import FeatureOptions
    from worker.pipeline.map.embedding import EmbeddingOptions
    from worker.pipeline.sources.ingest import DatasetOptions
    from worker.train.config import TrainConfig

    fields_of = {cls: {f.name: f.default for f in dataclasses.fields(cls)}
                 for cls in (DatasetOptions, FeatureOptions, EmbeddingOptions, TrainConfig)}
    # An option named otherwise than its field.
    field_name = {"finetune": "finetune_epochs", "workers": "num_workers"}
    checked = 0
    for cls, options in ((DatasetOptions, DATASET), (FeatureOptions, FEATURES),
                         (EmbeddingOptions, EMBEDDING), (TrainConfig, (*TRAINING, *MULTI_NODE))):
        for o in options:
            name = field_name.get(o.name, o.name)
            # --device not given is the settings' (CURATOR_DEVICE), read when it is used.
            if name in fields_of[cls] and (cls, name) != (FeatureOptions, "device"):
                assert o.default == fields_of[cls][name], (cls.__name__, o.name)
                checked += 1
    assert checked >= 30
