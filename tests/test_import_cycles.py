"""No import cycles in releaselib: none between its modules, and none between its subpackages
(``stage``, ``hub``, ``verify``... and each top-level module) but the known back-edges below.

Read statically with ``ast``: the imports that run when a module is imported (module level and
class bodies, not function bodies, not ``if TYPE_CHECKING:``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "releaselib"

#: Subpackage imports that close a cycle today, to be removed: staging is the first step, and
#: ``stage/stage_env`` (``options.check_staging_dir``) and ``stage/staged_checks`` (``Options``,
#: the Space runtime, ``verify.probe``) import later ones, which import ``stage.discover``.
KNOWN_BACK_EDGES = {
    ("releaselib.stage", "releaselib.options"),
    ("releaselib.stage", "releaselib.space_runtime"),
    ("releaselib.stage", "releaselib.verify"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_time_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run at import: module level and class bodies, also inside
    ``if``/``try``, but not under ``if TYPE_CHECKING:`` nor in a function."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending += node.orelse
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for field in ("body", "orelse", "finalbody", "handlers"):
                pending += [n for n in getattr(node, field, []) if isinstance(n, ast.stmt)]
            pending += [s for h in getattr(node, "handlers", []) for s in h.body]


def module_graph() -> dict[str, set[str]]:
    """releaselib module -> the releaselib modules it imports at import time (its own
    packages left out: importing a submodule runs them first anyway)."""
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in import_time_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {
            m for m in found if m in paths and m != name and not name.startswith(f"{m}.")
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, successors = work[-1]
            successor = next(successors, None)
            if successor is not None:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                elif successor in stack:
                    low[node] = min(low[node], index[successor])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def subpackage(module: str) -> str:
    return ".".join(module.split(".")[:2])


def subpackage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, imported in graph.items():
        for other in imported:
            if subpackage(other) != subpackage(module):
                out.setdefault(subpackage(module), set()).add(subpackage(other))
    return out


def test_no_module_of_releaselib_imports_itself_back() -> None:
    assert cycles(module_graph()) == []


def test_subpackages_import_each_other_only_through_the_known_back_edges() -> None:
    graph = subpackage_graph(module_graph())
    missing = sorted(edge for edge in KNOWN_BACK_EDGES if edge[1] not in graph.get(edge[0], ()))
    assert missing == [], "no longer imported: drop these from KNOWN_BACK_EDGES"
    pruned = {a: {b for b in bs if (a, b) not in KNOWN_BACK_EDGES} for a, bs in graph.items()}
    assert cycles(pruned) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
