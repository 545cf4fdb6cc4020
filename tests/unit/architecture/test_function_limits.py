"""Every function in ``app/``, ``worker/`` and ``tsne_curator/`` is short enough to read at
once and takes few enough parameters to call without a keyword list.

A function may span at most ``MAX_LINES`` lines (from its ``def`` to its last line,
decorators not counted) and take at most ``MAX_PARAMETERS`` parameters (positional-only,
ordinary and keyword-only ones, plus ``*args`` and ``**kwargs``; a method's ``self`` or
``cls`` is not counted). A longer function is split into named steps; parameters that
travel together are grouped in a small frozen dataclass.
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT

PACKAGES = ("app", "worker", "tsne_curator")


MAX_LINES = 60


MAX_PARAMETERS = 7


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The parameters a caller can pass: every named one but a leading ``self`` or
    ``cls``, plus one each for ``*args`` and ``**kwargs``."""
    args = node.args
    named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    bound = 1 if named and named[0] in ("self", "cls") and (args.posonlyargs or args.args) \
        else 0
    return len(named) - bound + (args.vararg is not None) + (args.kwarg is not None)


def line_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the ``def`` to the function's last line (its decorators not counted)."""
    return node.end_lineno - node.lineno + 1


def too_big(source: str, where: str) -> list[str]:
    """``where:line name (why)`` for each function in ``source``, nested ones included,
    over either limit."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        why = []
        if (lines := line_count(node)) > MAX_LINES:
            why.append(f"{lines} lines")
        if (params := parameter_count(node)) > MAX_PARAMETERS:
            why.append(f"{params} parameters")
        if why:
            out.append(f"{where}:{node.lineno} {node.name} ({', '.join(why)})")
    return out


def test_the_rule_counts_as_it_says():
    source = (
        "class A:\n"
        "    @staticmethod\n"
        "    @property\n"
        "    def m(self, a, b, /, c, d, *rest, e, f, **more):\n"
        "        pass\n"
        "def g(a, b, c, d, e, f, g):\n" + "    x = 1\n" * 59 +
        "def h(cls, a, b, c, d, e, f, g):\n"
        "    def inner(a, b, c, d, e, f, g, h):\n"
        "        pass\n"
    )
    found = too_big(source, "f.py")
    # m: a, b, c, d, e, f, *rest, **more (self not counted); its decorators add no lines.
    # g: 7 parameters, 60 lines, at both limits. h: a leading cls is not counted.
    assert found == ["f.py:4 m (8 parameters)", "f.py:67 inner (8 parameters)"]
    assert too_big("def f():\n" + "    x = 1\n" * 60, "f.py") == ["f.py:1 f (61 lines)"]


def test_no_function_is_over_the_limits():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += too_big(path.read_text(), str(path.relative_to(ROOT)))
    assert found == [], (
        f"split these into named steps, or group parameters that travel together in a "
        f"frozen dataclass (at most {MAX_LINES} lines and {MAX_PARAMETERS} parameters):\n"
        + "\n".join(found))
