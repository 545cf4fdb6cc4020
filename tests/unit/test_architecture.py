"""The layout docs/architecture.md describes, held against the code.

The import graph counts every in-project import: at module level, inside functions (the
deferred imports that keep heavy libraries out of start-up) and under ``TYPE_CHECKING``,
so a cycle cannot hide behind any of them.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "worker")
PIPELINE = ROOT / "worker" / "pipeline"
MAX_LINES = 600
MAX_PIPELINE_MODULES = 8


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom,
             modules: dict[str, Path]) -> set[str]:
    """The project modules ``node`` imports: for ``from P import x``, ``P.x`` when that is
    a module, else ``P``; relative imports resolved against ``module``."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            if path.name != "__init__.py":
                parts = parts[:-1]
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
        names = subs if len(subs) == len(node.names) else [*subs, base]
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


DISCOVERY = "pkgutil.iter_modules(__path__)"


def import_graph() -> dict[str, set[str]]:
    """module → the project modules it imports, counting every import statement in it, and
    for a package that imports every module in its folder (``DISCOVERY`` in its
    ``__init__``: findings/detectors/), an edge to each of them."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        text = path.read_text()
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                graph[module] |= _targets(module, path, node, modules)
        if path.name == "__init__.py" and DISCOVERY in text:
            graph[module] |= {m for m in modules if m.rpartition(".")[0] == module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_counting_deferred_imports():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    """The check itself: a cycle whose one edge is an import inside a function is found."""
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from app import b\n")
    (pkg / "b.py").write_text("def f():\n    from app.a import x\n    return x\n")
    (tmp_path / "worker").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert cycles(import_graph()) == [["app.a", "app.b"]]


def test_a_package_that_imports_its_folder_has_an_edge_to_each_module(tmp_path, monkeypatch):
    pkg = tmp_path / "worker" / "kinds"
    pkg.mkdir(parents=True)
    (tmp_path / "worker" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(f"for m in {DISCOVERY}:\n    pass\n")
    (pkg / "one.py").write_text("from worker import kinds\n")
    (tmp_path / "app").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert cycles(import_graph()) == [["worker.kinds", "worker.kinds.one"]]


def test_module_names_do_not_repeat():
    names = Counter(p.name for m, p in _modules().items()
                    if p.name not in ("__init__.py", "__main__.py"))
    assert [n for n, k in names.items() if k > 1] == []


def test_no_module_is_over_600_lines():
    long = {m: n for m, p in _modules().items()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_pipeline_folder_shows_its_stages():
    """worker/pipeline/ holds its stages as packages and at most 8 modules directly."""
    direct = sorted(p.name for p in PIPELINE.glob("*.py"))
    assert len(direct) <= MAX_PIPELINE_MODULES, direct
    stages = {p.name for p in PIPELINE.iterdir() if (p / "__init__.py").is_file()}
    assert {"sources", "features", "map", "findings", "storage", "evaluation"} <= stages


def test_the_pipeline_imports_no_framework():
    """worker/pipeline/ stays framework-free: a notebook, the CLI, a task and a test call
    the same functions (docs/architecture.md)."""
    banned = ("dash", "celery", "redis", "flask", "app")
    bad = []
    for path in PIPELINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            bad += [f"{path.relative_to(ROOT)}: {n}" for n in names
                    if n.split(".")[0] in banned]
    assert bad == []


def test_architecture_doc_names_every_package():
    """docs/architecture.md has a line for every package of app/ and worker/."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    packages = sorted(str(p.parent.relative_to(ROOT)) + "/" for pkg in PACKAGES
                      for p in (ROOT / pkg).rglob("__init__.py"))
    assert [p for p in packages if f"`{p}`" not in text] == []
