"""No import cycle in core/ or console/, read from the source (AST): the
graph of the module-level imports (those run when a module loads) is acyclic,
and so is the graph with the deferred imports inside functions added (a cycle
hidden in a function is a cycle all the same), and so is the graph with the
imports under ``if TYPE_CHECKING`` added too: they never run, but a circle of
types is still two modules that cannot be read apart. A cycle found is
printed whole."""
from __future__ import annotations

import ast
from pathlib import Path

from ..support.checkout import ROOT
from ..support.source import parsed

FOLDERS = {"core": "leash.core", "console": "leash.console"}


def module_files() -> dict[str, Path]:
    """Dotted name (``leash.core.state.halts.api``) -> its file."""
    modules = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join([package] + parts)] = path
    return modules


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def module_level_imports(body: list[ast.stmt]):
    """Import statements run at load: top level, and inside top-level
    ``if``/``try``/``with`` blocks; never inside a function or class."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not is_type_checking(node):
                yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in [node.body, node.orelse, node.finalbody] + [h.body for h in node.handlers]:
                yield from module_level_imports(block)
        elif isinstance(node, ast.With):
            yield from module_level_imports(node.body)


def type_checking_imports(body: list[ast.stmt]):
    """The imports under a top-level ``if TYPE_CHECKING``."""
    for node in body:
        if isinstance(node, ast.If) and is_type_checking(node):
            yield from (inner for inner in node.body if isinstance(inner, (ast.Import, ast.ImportFrom)))


def every_import(body: list[ast.stmt]):
    """Module-level imports and the deferred ones inside functions and classes."""
    yield from module_level_imports(body)
    for node in body:
        for inner in ast.walk(node):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for statement in ast.walk(inner):
                    if isinstance(statement, (ast.Import, ast.ImportFrom)):
                        yield statement


def absolute_base(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    parts = name.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[:len(anchor) - (node.level - 1)]
    return ".".join(anchor + ([node.module] if node.module else []))


def import_graph(imports=module_level_imports) -> dict[str, set[str]]:
    """Each module -> the leash modules it imports (``imports`` picks which
    statements count)."""
    modules = module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = parsed(path)
        for node in imports(tree.body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = absolute_base(node, name, path.name == "__init__.py")
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component that has one (Tarjan's
    components, then a shortest path back to the start inside each)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [shortest_cycle(graph, component) for component in components]


def shortest_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    return paths[node] + [start]
                if nxt not in paths:
                    paths[nxt] = paths[node] + [nxt]
                    following.append(nxt)
        frontier = following
    return [start]


def test_the_graph_sees_the_imports_it_should():
    graph = import_graph()
    assert "leash.core.state.stop" in graph["leash.core.views.protocol"]
    assert "leash.core.state.halts.api" in graph
    assert any(graph[name] for name in graph if name.startswith("leash.console"))
    deferred = import_graph(every_import)
    cli_imports = deferred["leash.console.cli"]
    assert "leash.core.hook.hooks" in cli_imports or "leash.core.hook.main" in cli_imports


def assert_acyclic(graph: dict[str, set[str]]) -> None:
    cycles = find_cycles(graph)
    for cycle in cycles:
        print(" -> ".join(cycle))
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


def test_no_import_cycle_when_modules_load():
    assert_acyclic(import_graph())


def test_no_import_cycle_counting_deferred_imports():
    assert_acyclic(import_graph(every_import))


def test_no_import_cycle_counting_type_only_imports():
    assert_acyclic(import_graph(lambda body: [*every_import(body), *type_checking_imports(body)]))


def test_type_only_imports_are_seen():
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import b\n"
    assert [node.module for node in type_checking_imports(ast.parse(source).body)] == ["a"]


def test_a_cycle_is_found_and_printed_whole():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
