"""How many paths a function has, read from the source as radon's cyclomatic
complexity counts them: one, plus one per ``if``, conditional expression,
loop (and its ``else``), ``except`` (and ``try``'s ``else``), each further
operand of ``and``/``or``, each comprehension's ``for`` and ``if``, ``assert``
and ``case``. A function nested in another is counted on its own.

console/ and core/store/ hold no function past radon's grade C (20); no
function anywhere in core/ or console/ reaches grade F (over 40). Where the
count differs from radon's, it counts more, never less (a lambda's branches
count toward the function around it), so a function this passes, radon
passes too."""
from __future__ import annotations

import ast
from pathlib import Path

from ..support.checkout import ROOT
from ..support.source import parsed

GRADE_C_MOST = 20
GRADE_E_MOST = 40
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def own_nodes(function: ast.AST):
    """The nodes of ``function``'s body, not those of the functions defined in it."""
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        if isinstance(node, FUNCTIONS):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


def complexity(function: ast.AST) -> int:
    total = 1
    for node in own_nodes(function):
        if isinstance(node, (ast.If, ast.IfExp, ast.Assert, ast.match_case)):
            total += 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            total += 1 + bool(node.orelse)
        elif isinstance(node, ast.Try):
            total += len(node.handlers) + bool(node.orelse)
        elif isinstance(node, ast.BoolOp):
            total += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            total += 1 + len(node.ifs)
    return total


def over(folders: tuple[str, ...], most: int) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(parsed(path)):
                if isinstance(node, FUNCTIONS) and (count := complexity(node)) > most:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({count})")
    return found


def test_the_console_and_the_store_seam_have_no_function_past_grade_c():
    assert over(("console", "core/store"), GRADE_C_MOST) == []


def test_no_function_reaches_grade_f():
    assert over(("core", "console"), GRADE_E_MOST) == []


def test_the_count_follows_the_paths(tmp_path: Path):
    source = tmp_path / "probe.py"
    source.write_text(
        "def f(a, b):\n"
        "    if a and b or a:\n"  # if +1, two more operands +2
        "        return [x for x in a if x]\n"  # comprehension +2
        "    for x in b:\n"  # +1
        "        pass\n"
        "    else:\n"  # +1
        "        pass\n"
        "    try:\n"
        "        pass\n"
        "    except ValueError:\n"  # +1
        "        pass\n"
        "    def inner():\n"  # counted on its own
        "        if a:\n"
        "            pass\n"
        "    return 1 if a else 2\n")  # +1
    [outer, inner] = [node for node in ast.walk(ast.parse(source.read_text())) if isinstance(node, FUNCTIONS)]
    assert complexity(outer) == 10 and complexity(inner) == 2
