"""Entry points made from declarations: each number's ``Param`` (worker/pipeline/number_params.py)
and each finding kind's own attributes give the CLI's flags, the New-run form's bounds,
the map's legend and the review list's tooltip, so a new option or kind is not listed by
hand anywhere else."""

from __future__ import annotations

import dataclasses

from app.cli import build_parser
from app.curate import figures, review_list
from app.layout import number_input
from worker.cli.arguments import thresholds
from worker.pipeline.findings import kinds
from worker.pipeline.map.embedding import EmbeddingOptions
from worker.pipeline.number_params import PARAMS, group_params


def _flags(command: str) -> dict[str, object]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {a.option_strings[0]: a for a in sub.choices[command]._actions if a.option_strings}


def test_every_kind_with_a_cut_has_its_flag_and_default_from_its_param():
    cut_kinds = {k.name: k for k in kinds() if k.threshold}
    assert set(group_params("findings")) == {
        *(f"{name}_threshold" for name in cut_kinds),
        *(k.drop_threshold for k in cut_kinds.values() if k.drop_threshold)}
    flags = _flags("findings")
    for kind in cut_kinds.values():
        p = PARAMS[kind.threshold]
        assert kind.default_threshold == p.default is not None
        for name in filter(None, (kind.threshold, kind.drop_threshold)):
            p = PARAMS[name]
            flag = flags[p.flag]
            # Only a cut given on the command line is passed on: the step's own default,
            # or the cut a run stored, stands otherwise.
            assert flag.default is None and f"default {p.default:g}" in flag.help
            assert flag.type.param == name
    args = build_parser().parse_args(["findings", "r", "--outlier-threshold", "3",
                                      "--outlier-drop-threshold", "6"])
    assert thresholds(args) == {"outlier": 3.0, "outlier_drop": 6.0}


def test_the_t_sne_options_are_the_embedding_group_in_cli_options_and_record():
    group = group_params("embedding")
    fields = {f.name: f.default for f in dataclasses.fields(EmbeddingOptions)}
    for name, p in group.items():
        assert fields[name] == p.default  # written once, in number_params.py
    for command in ("embed", "pipeline"):
        flags = _flags(command)
        for name, p in group.items():
            assert flags[p.flag].default == p.default and flags[p.flag].dest == name
    args = build_parser().parse_args(["embed", "r", "--perplexity", "12"])
    from worker.cli.arguments import embed_opts

    assert embed_opts(args) == EmbeddingOptions(perplexity=12.0)


def test_a_forms_number_box_takes_its_bounds_from_its_param():
    """The New-run form's numbers are such boxes (app/pages/runs.py)."""
    for name in ("inject_noise", "finetune", "perplexity"):
        box = number_input("box", name)
        p = PARAMS[name]
        assert (box.min, box.max, box.value) == (p.low, p.high, p.default)
        assert box.step == (1 if p.integer else "any")


def test_the_legend_and_the_tooltip_come_from_the_kinds():
    drawn = figures.drawn_kinds()
    assert [k.name for k in drawn] == [k.name for k in kinds() if k.symbol]
    symbols = [k.symbol for k in drawn]
    assert len(set(symbols)) == len(symbols)  # one mark a kind
    # No kind takes a reviewer's marks (◆ keep, ✕ drop).
    assert {figures.FINDING_MARKS[s][0] for s in symbols}.isdisjoint(
        {figures.SYMBOLS["diamond"], figures.SYMBOLS["x"]})
    legend = {text: glyph for glyph, _colour, text in figures.LEGEND}
    for k in drawn:
        words = f"{k.title}: {figures.DECISION_WORDS[k.decision]}"
        assert legend[words] == figures.FINDING_MARKS[k.symbol][1]
    tip = next(c for c in review_list.COLUMNS if c["field"] == "finding")["headerTooltip"]
    assert all(f"{k.name} ({k.title})" in tip for k in kinds())
