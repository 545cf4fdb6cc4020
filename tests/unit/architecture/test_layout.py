"""The layout docs/architecture.md describes, held against the code.

The import graph counts every in-project import: at module level, inside functions (the
deferred imports that keep heavy libraries out of start-up) and under ``TYPE_CHECKING``,
and the packages an import runs on the way (importing ``a.b.c`` runs ``a/b/__init__``),
so a cycle cannot hide behind any of them.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

from tests.conftest import ROOT

# Bottom to top: worker/ (the pipeline and the CLI), app/ (the front end), tsne_curator/
# (the Python API, a facade over both).
PACKAGES = ("app", "worker", "tsne_curator")


PIPELINE = ROOT / "worker" / "pipeline"


MAX_LINES = 600


MAX_PIPELINE_MODULES = 8


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        if not (ROOT / pkg).is_dir():  # a test's toy project has only some of them
            continue
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
    # Importing a.b.c runs a/__init__ and a/b/__init__ first: an edge to each package above
    # the target that is not above this module (those are imported before it).
    mine = _packages_above(module)
    return found | {p for t in found for p in _packages_above(t) - mine - {module}
                    if p in modules}


def _packages_above(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


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


# What a deferred import may keep out of a process's start-up (`curator --help` must not
# load numpy; the app loads torch only for a job).
HEAVY = {"numpy", "torch", "torchvision", "sklearn", "scipy", "cleanlab", "openTSNE",
         "matplotlib", "celery", "kombu", "timm", "PIL", "dash", "dash_bootstrap_components",
         "dash_ag_grid", "plotly", "flask", "flask_caching", "flask_talisman", "waitress",
         "redis", "orjson", "tqdm", "annoy", "pandas", "pydantic", "pydantic_core",
         "pydantic_settings", "cachetools"}


def _start_up() -> tuple[dict[str, set[str]], dict[str, set[str]], list]:
    """Per module: the project modules and heavy libraries its top level imports, and every
    in-project import inside a function as (module, line, the modules it runs)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    heavy: dict[str, set[str]] = {}
    deferred = []
    for module, path in modules.items():
        graph[module], heavy[module] = set(), set()
        tree = ast.parse(path.read_text(), str(path))
        inside = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                  for n in ast.walk(f) if n is not f}
        checking = {id(n) for i in ast.walk(tree) if isinstance(i, ast.If)
                    and "TYPE_CHECKING" in ast.unparse(i.test) for n in ast.walk(i)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or id(node) in checking:
                continue
            targets = _targets(module, path, node, modules)
            if id(node) in inside:
                if targets:
                    deferred.append((module, node.lineno, targets))
                continue
            graph[module] |= targets
            names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""] if not node.level else []
            heavy[module] |= {n.split(".")[0] for n in names} & HEAVY
    return graph, heavy, deferred


def test_a_deferred_import_keeps_a_heavy_library_out_of_start_up():
    """An import inside a function is kept only where importing its module at the top would
    load a heavy library that the importing module does not load already (docs/
    architecture.md, "Deferred imports"); anywhere else it belongs at the top."""
    graph, heavy, deferred = _start_up()

    def loads(module: str) -> set[str]:
        seen, todo, out = set(), [module], set()
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                out |= heavy[m]
                todo += graph[m] | (_packages_above(m) & graph.keys())
        return out

    pointless = [f"{m}:{line} imports {sorted(targets)}" for m, line, targets in deferred
                 if not set().union(*map(loads, targets)) - loads(m)]
    assert pointless == []


def test_no_import_cycle_counting_deferred_imports():
    """Module cycles, within a layer too. The layers themselves are import-linter contracts
    (tests/integration/architecture/test_layers.py); this graph also sees what
    import-linter cannot: the packages an import runs on the way, and a package that
    imports its whole folder
    (``DISCOVERY``: findings/detectors/)."""
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
    direct = sorted(p.name for p in PIPELINE.glob("*.py") if p.name != "__init__.py")
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
    """docs/architecture.md has a line for every package of app/, worker/ and
    tsne_curator/."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    packages = sorted(str(p.parent.relative_to(ROOT)) + "/" for pkg in PACKAGES
                      for p in (ROOT / pkg).rglob("__init__.py"))
    assert [p for p in packages if f"`{p}`" not in text] == []
