"""No test module imports another: what tests share lives in helper modules
(``tests/support/``, the e2e rigs), so a test file can move or go alone."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def imported_test_modules(path: Path) -> list[str]:
    """The ``test_*`` modules ``path`` imports (``from . import test_x``, ``from .test_x import …``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if any(part.startswith("test_") for part in parts):
                found.append(node.module or "")
            found += [alias.name for alias in node.names if alias.name.startswith("test_")]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if any(p.startswith("test_") for p in alias.name.split("."))]
    return found


def test_the_reader_sees_each_way_of_importing_a_test_module(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("from . import test_a as a\nfrom .test_b import x\nimport tests.test_c\nfrom .rig import y\n")
    assert imported_test_modules(sample) == ["test_a", "test_b", "tests.test_c"]


def test_no_test_module_imports_another():
    offenders = {str(path.relative_to(TESTS)): names for path in sorted(TESTS.rglob("test_*.py"))
                 if (names := imported_test_modules(path))}
    assert offenders == {}
