"""The layering DESIGN.md fixes, enforced: core never imports the console,
textual or rich; libtmux only in the tmux module; the hook path imports only
the standard library and leash's own core."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, leash_argv

CORE = ROOT / "core"
UI_PACKAGES = {"textual", "rich", "textual_serve", "watchfiles"}
# The file backend's change stream watches the home (imported inside ``changes()`` only).
WATCHERS = {"core/store/files.py": {"watchfiles"}}
DRIVERS = {"libtmux", "psycopg", "psycopg_pool"}


def imported_names(path: Path) -> set[str]:
    """Every module a file imports, at any depth (inside functions too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def top(name: str) -> str:
    return name.split(".")[0]


def test_core_never_imports_the_console_textual_or_rich():
    offenders = {}
    for path in sorted(CORE.rglob("*.py")):
        allowed = WATCHERS.get(str(path.relative_to(ROOT)), set())
        bad = {n for n in imported_names(path)
               if (top(n) in UI_PACKAGES and top(n) not in allowed) or n.startswith(("console", "leash.console"))}
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def test_libtmux_only_in_the_tmux_module():
    users = sorted(str(p.relative_to(ROOT)) for folder in ("core", "console", "bench", "contrib")
                   for p in (ROOT / folder).rglob("*.py") if "libtmux" in {top(n) for n in imported_names(p)})
    assert users == ["core/tmux.py"]


def test_the_hook_path_imports_only_the_standard_library_and_leash(home, tmp_path):
    payload = json.dumps({"session_id": "layering", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls src | grep -c py"}, "cwd": str(tmp_path)}).encode()
    for event in ("pre-tool-use", "post-tool-batch", "user-prompt-submit"):
        done = subprocess.run([sys.executable, "-X", "importtime"] + leash_argv()[1:] + ["hook", event],
                              input=payload, capture_output=True, cwd=ROOT, timeout=60)
        modules = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
                   if line.startswith("import time:") and "|" in line}
        modules.discard("imported package")
        tops = {top(m) for m in modules}
        assert not tops & (UI_PACKAGES | DRIVERS), (event, sorted(tops & (UI_PACKAGES | DRIVERS)))
        foreign = sorted(t for t in tops if t not in sys.stdlib_module_names and t not in sys.builtin_module_names
                         and t not in ("core", "console", "leash") and not t.startswith("_")
                         and t not in ("sitecustomize", "usercustomize", "encodings"))
        assert foreign == [], (event, foreign)


def test_the_hook_command_is_handed_to_the_core_before_the_console_loads(home, tmp_path):
    payload = json.dumps({"session_id": "layering", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": str(tmp_path)}).encode()
    done = subprocess.run([sys.executable, "-X", "importtime"] + leash_argv()[1:] + ["hook", "pre-tool-use"],
                          input=payload, capture_output=True, cwd=ROOT, timeout=60)
    modules = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
               if line.startswith("import time:") and "|" in line}
    console = sorted(m for m in modules if m.startswith("leash.console"))
    assert console == ["leash.console", "leash.console.cli"], console  # the tiny entry, nothing more
    assert "leash.core.hookmain" in modules


def test_the_console_follows_changes_through_the_backend_only():
    """The console's live view is the backend's change stream: no file
    watcher of its own, so a backend with another source slots in."""
    watching = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "console").rglob("*.py")
                      if "watchfiles" in {top(n) for n in imported_names(p)})
    assert watching == []


def test_psycopg_only_in_the_postgresql_store():
    drivers = {"psycopg", "psycopg_pool"}
    users = sorted(str(p.relative_to(ROOT)) for folder in ("core", "console")
                   for p in (ROOT / folder).rglob("*.py") if drivers & {top(n) for n in imported_names(p)})
    assert users == ["core/store/pg.py"]
