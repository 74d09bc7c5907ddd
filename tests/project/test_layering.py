"""The layering docs/architecture.md shows, enforced: core never imports the console,
textual or rich; libtmux only in the tmux module; the hook path imports only
the standard library and leash's own core."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from ..support.checkout import ROOT, leash_argv
from ..support.layers import CONSOLE_SHARED, FRONT_ENDS, TIER_OF
from ..support.source import parsed

CORE = ROOT / "core"
UI_PACKAGES = {"textual", "rich", "textual_serve", "watchfiles"}
# The file backend's change stream watches the home (imported inside ``changes()`` only).
WATCHERS = {"core/store/files.py": {"watchfiles"}}
DRIVERS = {"libtmux", "psycopg", "psycopg_pool"}


def imported_names(path: Path) -> set[str]:
    """Every module a file imports, at any depth (inside functions too)."""
    tree = parsed(path)
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
    assert users == ["core/base/tmux.py"]


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
        costly = sorted(modules & {"typing", "dataclasses", "inspect"})  # milliseconds on every call
        assert costly == [], (event, costly)


def test_the_hook_command_is_handed_to_the_core_before_the_console_loads(home, tmp_path):
    payload = json.dumps({"session_id": "layering", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": str(tmp_path)}).encode()
    done = subprocess.run([sys.executable, "-X", "importtime"] + leash_argv()[1:] + ["hook", "pre-tool-use"],
                          input=payload, capture_output=True, cwd=ROOT, timeout=60)
    modules = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
               if line.startswith("import time:") and "|" in line}
    console = sorted(m for m in modules if m.startswith("leash.console"))
    assert console == ["leash.console", "leash.console.cli"], console  # the tiny entry, nothing more
    assert "leash.core.hook.main" in modules


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




def core_imports(path: Path) -> set[str]:
    """Every ``leash.core`` module ``path`` imports at any depth (deferred imports
    inside functions too), resolving ``from leash.core.x import module``."""
    tree = parsed(path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("leash.core."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "leash.core":
                found.update(f"leash.core.{alias.name}" for alias in node.names)
            elif node.module.startswith("leash.core."):
                found.add(node.module)
    return found


def layer_of(module: str) -> str:
    return module.split(".")[2]


def test_core_is_folders_by_layer_with_no_flat_module_but_its_init():
    flat = sorted(p.name for p in CORE.glob("*.py") if p.name != "__init__.py")
    assert flat == []
    folders = sorted(p.name for p in CORE.iterdir() if (p / "__init__.py").exists())
    assert folders == sorted(TIER_OF)


def test_each_layer_imports_only_the_layers_below_it_deferred_imports_included():
    upward = []
    for path in sorted(CORE.rglob("*.py")):
        relative = path.relative_to(CORE)
        if len(relative.parts) == 1:
            continue  # core/__init__.py: the public names, imported on first use
        own = relative.parts[0]
        for module in core_imports(path):
            other = layer_of(module)
            if other in ("StopProtocol", "StopInterrupt", "HandsOffError"):
                other = "views"
            if other != own and TIER_OF[other] >= TIER_OF[own]:
                upward.append(f"{relative} ({own}) imports {module} ({other})")
    assert upward == []


def test_the_public_api_keeps_its_names():
    code = ("from leash.core import StopProtocol, StopInterrupt, HandsOffError, loopguard; "
            "print(StopProtocol.__name__, StopInterrupt.__name__, HandsOffError.__name__, loopguard.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["StopProtocol", "StopInterrupt", "HandsOffError", "leash.core.state.loopguard"]


# console/'s tiers: what an operator does (``operations``) and the errors every
# front end raises are shared; the three front ends stand side by side. The
# command line starts the other two only through their package's own names
# (``leash.console.tui.run_console``, ``leash.console.serve.run_serve``).
CONSOLE = ROOT / "console"


def console_imports(path: Path) -> set[str]:
    """Every ``leash.console`` module ``path`` imports, at any depth, type-only imports included."""
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("leash.console"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("leash.console"):
            found.update(f"{node.module}.{alias.name}" if node.module == "leash.console" else node.module
                         for alias in node.names)
    return found


def console_tier(module_or_path: str) -> str:
    parts = module_or_path.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in FRONT_ENDS else "shared"


def test_the_console_is_three_front_ends_over_what_they_share():
    shared = sorted(f"{name.rsplit('.', 1)[-1]}.py" for name in CONSOLE_SHARED if name != "leash.console")
    assert sorted(p.name for p in CONSOLE.glob("*.py")) == ["__init__.py"] + shared
    assert sorted(p.name for p in CONSOLE.iterdir() if (p / "__init__.py").exists()) == sorted(FRONT_ENDS)
    crossing = []
    for path in sorted(CONSOLE.rglob("*.py")):
        relative = path.relative_to(CONSOLE)
        own = relative.parts[0] if len(relative.parts) > 1 else "shared"
        for module in sorted(console_imports(path)):
            other = console_tier(module)
            if other in (own, "shared"):
                continue
            if own == "cli" and module in ("leash.console.tui", "leash.console.serve"):
                continue  # the entry points of the other two front ends
            crossing.append(f"console/{relative} ({own}) imports {module} ({other})")
    assert crossing == []


def test_what_the_front_ends_share_imports_none_of_them():
    for name in ("errors.py", "operations.py"):
        assert {console_tier(m) for m in console_imports(CONSOLE / name)} <= {"shared"}, name


def test_the_console_tier_rule_sees_a_crossing(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from leash.console.tui.screens.confirm import Confirmed\nfrom leash.console import errors\n")
    assert console_imports(probe) == {"leash.console.tui.screens.confirm", "leash.console.errors"}
    assert console_tier("leash.console.tui.screens.confirm") == "tui"
    assert console_tier("leash.console.errors") == "shared"
