"""The floors of README's "How the code is laid out", checked on the imports the code really makes.

Every module of ``raglab/`` (and the top-level ``raglab_launcher``) is parsed with :mod:`ast`; every
import counts, at module level or inside a function: ``import``, ``from ... import``, relative
imports and ``importlib.import_module("raglab...")`` with a literal name. Importing ``raglab.a.b``
also runs the package ``raglab.a``'s ``__init__``, so it counts as importing ``raglab.a`` too. The
test fails on an import of a higher floor and on any cycle (a strongly connected component of more
than one module), naming the importer, the imported module, their floors and the line.
"""

from __future__ import annotations

import ast
import os
import pkgutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Module (or package) prefix -> floor, bottom to top; the longest prefix decides. Declared once, here.
FLOORS: dict[str, int] = {
    # 1 foundations (numpy and pandas only)
    "raglab._validation": 1, "raglab._errors": 1, "raglab._results": 1, "raglab._interval": 1,
    "raglab._meta": 1, "raglab._version": 1, "raglab._optional": 1, "raglab._files": 1, "raglab._options": 1,
    # 2 row table, and the one metric registry
    "raglab._rowtable": 2, "raglab._columns": 2, "raglab._registry": 2,
    # 3 kernels (pure functions on arrays and row tables)
    "raglab.metrics": 3, "raglab.chunks": 3, "raglab.simulate": 3, "raglab.stats": 3,
    "raglab.gate": 3, "raglab.agreement": 3, "raglab.sizing": 3, "raglab.io": 3, "raglab.trec": 3,
    "raglab.evalset": 3, "raglab.abstention": 3, "raglab.tripwires": 3, "raglab.sampling": 3,
    "raglab._partition": 3,
    # 4 judges
    "raglab.judge": 4,
    # 5 row-table functions (a table in, a table out: runs, retrieval, boundaries, monitor)
    "raglab.runs": 5, "raglab.retrieval": 5, "raglab.boundaries": 5, "raglab.monitor": 5,
    # 6 looking (plots and explorers draw what the row-table functions compute)
    "raglab.plots": 6, "raglab.widgets": 6, "raglab.datasets": 6,
    # the engine-neutral core of the distributed accessors (row-table functions, partition by partition)
    "raglab.engines": 6,
    # 7 the accessor (df.rag: one entry per table-level function or view)
    "raglab.accessor": 7, "raglab.dask": 7, "raglab.spark": 7,
    # 8 programs (the package's __init__ loads the accessor, so it sits on top too)
    "raglab": 8, "raglab.cli": 8, "raglab.__main__": 8, "raglab.demo": 8, "raglab.testing": 8,
    "raglab_launcher": 9,  # the console script: it may import raglab, never the reverse
}

#: Known (importer, imported) violations in files this change does not own; each names its owner.
#: Cleared as they are fixed: an entry that no longer occurs fails the test, so the list only shrinks.
KNOWN_VIOLATIONS: set[tuple[str, str]] = set()  # none: every import follows the floors


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int


def floor_of(module: str, floors: Mapping[str, int] = FLOORS) -> int:
    """The floor of ``module``: that of its longest declared prefix (a top-level name counts only for itself,
    so a new ``raglab._x`` is not silently on the package's floor)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in floors and (n > 1 or n == len(parts)):
            return floors[prefix]
    raise KeyError(f"{module!r} has no floor: add it (or its package) to FLOORS in tests/test_layering.py")


def modules_of(root: Path, packages: Iterable[str], singles: Iterable[str] = ()) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` under the packages and the top-level single-file modules."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    for single in singles:
        path = root / f"{single}.py"
        if path.exists():
            found[single] = path
    return found


def _targets(module: str, is_package: bool, node: ast.AST, known: Mapping[str, Path]) -> list[str]:
    """The absolute module names one import node names (before mapping to known modules)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, base] if base else package)
        out = []
        for alias in node.names:  # `from raglab import io` imports the module raglab.io
            full = f"{base}.{alias.name}"
            out.append(full if full in known else base)
        return out
    if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "import_module":
            return [node.args[0].value]
    return []


def import_edges(known: Mapping[str, Path], roots: tuple[str, ...]) -> list[Edge]:
    """Every import between known modules, with the implicit imports of the packages on the way."""
    edges: list[Edge] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            for target in _targets(module, is_package, node, known):
                if target.split(".")[0] not in roots:
                    continue
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target not in known:
                    continue
                if target != module:
                    edges.append(Edge(module, target, node.lineno))
                parent = target.rsplit(".", 1)[0] if "." in target else None
                while parent and "." in parent:  # raglab.a.b runs raglab.a's __init__ (not the root's)
                    if parent in known and parent != module and not module.startswith(parent + "."):
                        edges.append(Edge(module, parent, node.lineno))
                    parent = parent.rsplit(".", 1)[0]
    return sorted(set(edges), key=lambda e: (e.importer, e.line, e.imported))


def cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.importer, set()).add(e.imported)
        graph.setdefault(e.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def violations(edges: list[Edge], floors: Mapping[str, int]) -> list[str]:
    """One line per upward import and per cycle (with the imports that close it)."""
    problems = []
    for e in edges:
        a, b = floor_of(e.importer, floors), floor_of(e.imported, floors)
        if b > a:
            problems.append(f"upward import: {e.importer} (floor {a}) -> {e.imported} (floor {b}), line {e.line}")
    for component in cycles(edges):
        members = set(component)
        inside = sorted({f"{e.importer} -> {e.imported} (line {e.line})" for e in edges
                         if e.importer in members and e.imported in members})
        problems.append(f"import cycle through {component}: " + "; ".join(inside))
    return problems


def check(root: Path, packages: tuple[str, ...], singles: tuple[str, ...], floors: Mapping[str, int],
          known_violations: set[tuple[str, str]] = frozenset()) -> list[str]:  # type: ignore[assignment]
    known = modules_of(root, packages, singles)
    edges = [e for e in import_edges(known, (*packages, *singles))
             if (e.importer, e.imported) not in known_violations]
    return violations(edges, floors)


def test_every_module_has_a_floor():
    for module in modules_of(ROOT, ("raglab",), ("raglab_launcher",)):
        floor_of(module)


def test_imports_follow_the_floors():
    problems = check(ROOT, ("raglab",), ("raglab_launcher",), FLOORS, KNOWN_VIOLATIONS)
    assert not problems, "imports break README's layering:\n" + "\n".join(problems)


def test_known_violations_still_occur():
    known = modules_of(ROOT, ("raglab",), ("raglab_launcher",))
    edges = {(e.importer, e.imported) for e in import_edges(known, ("raglab", "raglab_launcher"))}
    gone = KNOWN_VIOLATIONS - edges
    assert not gone, f"fixed: remove from KNOWN_VIOLATIONS: {sorted(gone)}"


def _package(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


TOY_FLOORS = {"toy": 3, "toy.low": 1, "toy.mid": 2, "toy.sub": 2}


def test_a_module_without_a_floor_is_named():
    assert floor_of("raglab.metrics.spans") == 3 and floor_of("raglab") == 8
    with pytest.raises(KeyError, match="'raglab._new' has no floor"):
        floor_of("raglab._new")


def test_the_check_catches_an_upward_import(tmp_path):
    root = _package(tmp_path, {
        "toy/__init__.py": "",
        "toy/low.py": "def f():\n    from toy import mid  # inside a function counts\n",
        "toy/mid.py": "",
    })
    problems = check(root, ("toy",), (), TOY_FLOORS)
    assert problems == ["upward import: toy.low (floor 1) -> toy.mid (floor 2), line 2"]


@pytest.mark.parametrize("spelling", [
    "from .. import mid",
    "import toy.mid",
    "from toy.mid import x",
    "import importlib\nimportlib.import_module('toy.mid')",
])
def test_the_check_catches_a_cycle(tmp_path, spelling):
    root = _package(tmp_path, {
        "toy/__init__.py": "",
        "toy/mid.py": "from toy.sub.leaf import y\nx = 1\n",
        "toy/sub/__init__.py": spelling + "\n",  # importing toy.sub.leaf runs toy.sub's __init__
        "toy/sub/leaf.py": "y = 2\n",
    })
    problems = check(root, ("toy",), (), TOY_FLOORS)
    assert len(problems) == 1 and problems[0].startswith("import cycle through ['toy.mid', 'toy.sub']"), problems


def test_same_floor_imports_without_a_cycle_pass(tmp_path):
    root = _package(tmp_path, {"toy/__init__.py": "", "toy/mid.py": "from .sub import leaf\n",
                               "toy/sub/__init__.py": "", "toy/sub/leaf.py": "from toy import low\n",
                               "toy/low.py": ""})
    assert check(root, ("toy",), (), TOY_FLOORS) == []


# --------------------------------------------------------------------------------------------------
# Every public module is reachable after `import raglab`
# --------------------------------------------------------------------------------------------------


def _public_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules([str(ROOT / "raglab")]) if not info.name.startswith("_"))


def test_the_public_modules_are_the_known_ones():
    assert {"chunks", "boundaries", "retrieval", "abstention", "simulate", "judge", "plots"} <= set(_public_modules())


def test_every_public_module_is_an_attribute_of_raglab_in_a_fresh_process():
    # A fresh interpreter: in this one, other tests have imported the submodules already.
    code = textwrap.dedent(f"""
        import importlib, sys
        import raglab
        names = {_public_modules()!r}
        for name in names:
            assert name in dir(raglab), name
            try:
                module = getattr(raglab, name)
            except ModuleNotFoundError as exc:  # an optional extra that is not installed: the message says which
                assert "pip install 'raglab[" in str(exc), (name, exc)
                continue
            assert module is importlib.import_module(f"raglab.{{name}}"), name
        try:
            raglab.no_such_module
        except AttributeError as exc:
            assert "no attribute 'no_such_module'" in str(exc)
        else:
            raise AssertionError("raglab.no_such_module did not raise")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr


def test_the_launcher_and_the_package_say_the_same_line():
    import raglab_launcher
    from raglab import _optional

    assert raglab_launcher.BROKEN_INSTALL == _optional.BROKEN_INSTALL
    message = ValueError("boom")
    assert raglab_launcher.cannot_start_line(message) == _optional.cannot_start_line(message)
    assert sys.modules["raglab_launcher"] is raglab_launcher
