"""Code safety: unread code, breaking changes, no rollback plan, unknown dependencies."""
from __future__ import annotations

import os
import re

from leash.core.base.lazy_re import lazy
from leash.core.policy.halts.conditions.registry import Finding, condition

# Commands whose damage no rollback can undo; reported under no_rollback_plan, critical.
_DEVICE = lazy(r"^/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d+n\d+|mmcblk\d+|disk\d+|md\d+|dm-\d+|loop\d+)")
_ROOTISH = {"/", "/*", "~", "~/", "~/*", "$HOME", "${HOME}", "$HOME/", "$HOME/*", "/home", "/etc", "/usr",
            "/var", "/bin", "/boot", "/lib", "/opt", "/root", "/srv", ".", "./", "*", "..", "../"}
_PUBLIC_DEF = {
    ".py": lazy(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z][A-Za-z0-9_]*)", re.MULTILINE),
    ".js": lazy(r"^[ \t]*export[ \t]+(?:default\s+)?(?:async\s+)?(?:function\*?|class|const|let|var)\s+"
                r"([A-Za-z_$][\w$]*)",
                      re.MULTILINE),
    ".go": lazy(r"^func[ \t]+(?:\([^)\n]*\)[ \t]*)?([A-Z]\w*)", re.MULTILINE),
}
_PUBLIC_DEF.update({ext: _PUBLIC_DEF[".js"] for ext in (".ts", ".tsx", ".jsx", ".mjs", ".cjs")})
# One pattern per keyword, each starting with its literal (searched in lower-cased
# text), so the regex engine skips to the keyword instead of trying every position.
_SCHEMA_BREAKS = (
    lazy(r"drop\s+(?:table|column|schema|database|index|view)\b"),
    lazy(r"truncate\s+(?:table\s+)?\w"),
    lazy(r"alter\s+table\s+[^\s]{1,256}\s+(?:drop|rename)\b"),
)
MAX_SCHEMA_CANDIDATES = 1000
MAX_BOMB_CANDIDATES = 10_000
_BOMB_NAME = lazy(r"[\w:]{1,64}\Z")


_DISK_PROGRAMS = frozenset({"wipefs", "mke2fs", "mkswap", "fdisk", "sfdisk", "parted"})


def _wipes_tree(ctx, command) -> bool:
    argv = command.argv
    return _recursive_rm(argv) and (any(a in _ROOTISH for a in command.written[1:] + argv[1:])
                                    or "--no-preserve-root" in argv
                                    or any(os.path.normpath(a) in _homes(ctx) for a in argv[1:] if a.startswith("/")))


def _writes_device(argv: list[str], program: str) -> bool:
    if program == "dd":
        return any(a.startswith("of=") and _DEVICE.match(a[3:]) for a in argv[1:])
    return program == "shred" and any(_DEVICE.match(a) for a in argv[1:])


def _destroys(ctx, command) -> str | None:
    """What one command wipes (a tree, a filesystem, a disk), shown, or None."""
    argv, program = command.argv, command.program
    if program == "rm" and _wipes_tree(ctx, command):
        return " ".join(argv)
    if program.startswith("mkfs") or program in _DISK_PROGRAMS or _writes_device(argv, program):
        return " ".join(argv)
    if any(op in (">", ">|") and _DEVICE.match(target) for op, target in command.redirects):
        return " ".join(argv) + " > device"
    return None


def destroyed_targets(ctx) -> list[str]:
    """Commands that wipe a filesystem, a disk or a whole tree."""
    return [f for command in ctx.simple_commands() if (f := _destroys(ctx, command))]


def _recursive_rm(argv: list[str]) -> bool:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--"))
    return "r" in flags.lower() or "--recursive" in argv


def _homes(ctx) -> set[str]:
    """The home directories an ``rm -r`` must not reach (asked only of such a command)."""
    return {os.path.expanduser("~"), ctx.tool_call().env.get("HOME") or "/"}


def force_pushes_to_shared_branch(ctx) -> list[str]:
    found = []
    for command in ctx.simple_commands():
        argv = command.argv
        if command.program != "git" or "push" not in argv:
            continue
        force = any(a in ("-f", "--force", "--force-with-lease", "--mirror") or a.startswith("--force-with-lease=")
                    or (a.startswith("-") and not a.startswith("--") and "f" in a) for a in argv)
        refs = [a for a in argv[argv.index("push") + 1:] if not a.startswith("-")]
        plus = any(r.lstrip("+") != r and r.lstrip("+").split(":")[-1] in ("main", "master") for r in refs)
        to_main = any(r.split(":")[-1].lstrip("+") in ("main", "master") for r in refs[1:])
        if (force and to_main) or plus:
            found.append(" ".join(argv))
    return found


def schema_break(lowered: str) -> tuple[int, int] | None:
    """Where a destructive schema statement starts and ends, as a whole word."""
    for pattern in _SCHEMA_BREAKS:
        for count, found in enumerate(pattern.finditer(lowered)):
            start = found.start()
            if start == 0 or not (lowered[start - 1].isalnum() or lowered[start - 1] == "_"):
                return start, found.end()
            if count >= MAX_SCHEMA_CANDIDATES:
                break
    return None


def fork_bomb(command: str) -> bool:
    """``NAME(){ NAME|NAME& };NAME`` (blanks anywhere): found from each ``(){``."""
    if "(" not in command or "{" not in command:
        return False
    compact = command.replace(" ", "").replace("\t", "")
    start = compact.find("(){")
    for _ in range(MAX_BOMB_CANDIDATES):
        if start == -1:
            return False
        name = _BOMB_NAME.search(compact, max(0, start - 64), start)
        if name and compact.startswith("{0}|{0}&}};{0}".format(name.group()), start + 3):
            return True
        start = compact.find("(){", start + 3)
    return False


@condition("modifying_unread_code", "code_safety", "critical", write_or_exec=True)
def modifying_unread_code(ctx, threshold):
    """Fires when a file to change (``target_files`` and
    ``proposed_changes.files_to_modify``) is not in ``files_read``: the set
    difference target - read, paths compared after normalisation against the
    cwd. Files the change creates (``new_files``) do not count. Off when the
    threshold's ``requires_read`` is false, and silent when ``reads_unknown``
    says no one reports this session's reads."""
    if threshold.get("requires_read") is False or ctx.reads_unknown:
        return None
    read = {ctx.norm(p) for p in ctx.files_read}
    created = {ctx.norm(p) for p in ctx.new_files}
    unread = [p for p in ctx.files_to_change if ctx.norm(p) not in read and ctx.norm(p) not in created]
    if not unread:
        return None
    which = ", ".join(unread)
    verb = "has" if len(unread) == 1 else "have"
    return Finding(f"Attempting to modify {which} which {verb} not been read",
                   annotations={"files_not_read": unread})


@condition("breaking_changes", "code_safety", "high", pure=True, write_or_exec=True)
def breaking_changes(ctx, threshold):
    """Fires when (a) an edit removes or renames a public definition — a Python
    ``def``/``class`` without a leading underscore, a JS/TS ``export``, a Go
    exported ``func`` — present in the old text and absent from the new, while
    ``proposed_changes.has_tests`` is not true (when the threshold's
    ``requires_tests_pass`` is false, removals fire even with tests);
    (b) a command or edit runs a destructive schema change (``DROP TABLE``,
    ``DROP COLUMN``, ``TRUNCATE``, ``ALTER TABLE ... DROP/RENAME``); or (c) a
    force-push rewrites ``main``/``master`` or a fork bomb would take the host
    down (both critical)."""
    details, severity = [], None
    tested = bool(ctx.proposed_changes and ctx.proposed_changes.get("has_tests") is True)
    if not tested or threshold.get("requires_tests_pass") is False:
        for edit in ctx.edits:
            pattern = _PUBLIC_DEF.get(os.path.splitext(edit["file"])[1])
            if pattern is None:
                continue
            before = {n for n in pattern.findall(edit["old"]) if not n.startswith("_")}
            gone = sorted(before - set(pattern.findall(edit["new"])))
            if gone:
                details.append(f"{edit['file']} removes or renames {', '.join(gone)}")
    for text in ctx.commands + [e["new"] for e in ctx.edits]:
        found = schema_break(text.lower())
        if found:
            details.append(f"destructive schema change: {text[found[0]:found[1]]}")
    pushes = force_pushes_to_shared_branch(ctx)
    bombs = [c for c in ctx.commands if fork_bomb(c)]
    if pushes or bombs:
        severity = "critical"
        details += [f"force-push rewrites shared history: {p}" for p in pushes]
        details += ["fork bomb: would exhaust the host's processes" for _ in bombs]
    if not details:
        return None
    return Finding("Change would break existing functionality: " + "; ".join(details), severity=severity)


@condition("no_rollback_plan", "code_safety", "high", write_or_exec=True)
def no_rollback_plan(ctx, threshold):
    """Fires when ``proposed_changes.has_rollback_plan`` is false (explicitly),
    and — critical — when a command destroys what no rollback can restore:
    ``rm -r`` of ``/``, ``~``, ``.``, ``*`` or a system directory,
    ``--no-preserve-root``, ``mkfs``/``wipefs``/partitioning tools, ``dd`` or a
    redirection onto a block device, ``shred`` of a device."""
    destroyed = destroyed_targets(ctx)
    if destroyed:
        return Finding("Irreversible destructive command, no rollback possible: " + "; ".join(destroyed),
                       severity="critical", context={"commands": destroyed})
    if ctx.proposed_changes is not None and ctx.proposed_changes.get("has_rollback_plan") is False:
        return Finding("No rollback plan provided for changes")
    return None


_PY_IMPORT = lazy(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+([\w*, ()]+)|import[ \t]+([\w., ]+))",
                  re.MULTILINE)
# "from '<spec>'" ends every static import and re-export; each alternative starts at a keyword and
# stops at the first quote, so the scan stays linear.
_JS_IMPORT = lazy(r"""(?:\bfrom|\bimport\s*\(?|\brequire\s*\()[ \t]*['"](\.{1,2}/[^'"\n]+)['"]""")
_JS_SOURCES = (".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs")
MAX_SOURCE_READ = 512_000  # a file's imports are at its top: a huge file is read this far
_JS_EXTENSIONS = ("", ".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs", "/index.js", "/index.ts", "/index.tsx")


def _existing(candidates) -> list[str]:
    return [c for c in candidates if os.path.isfile(c)]


def _relative_import(relative: str, names: str, here: str) -> tuple[list[str], list[str]]:
    """(files, modules) a ``from .x import a, b`` (or ``from x import a``) names."""
    dots = len(relative) - len(relative.lstrip("."))
    rest = relative.lstrip(".")
    names_list = [n.strip().split(" as ")[0] for n in names.strip("() ").split(",") if n.strip()]
    if not dots:
        return [], [rest] + [f"{rest}.{n}" for n in names_list if n != "*"]
    base = here
    for _ in range(dots - 1):
        base = os.path.dirname(base)
    prefix = os.path.join(base, *rest.split(".")) if rest else base
    candidates = [prefix + ".py", os.path.join(prefix, "__init__.py")]
    candidates += [os.path.join(prefix, n + ".py") for n in names_list if n != "*"]
    return _existing(candidates), []


def _module_files(module: str, root: str, here: str) -> list[str]:
    parts = module.split(".")
    return _existing(candidate for base in (root, here)
                     for candidate in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py")))


def _python_dependencies(source: str, root: str, here: str) -> list[str]:
    found: list[str] = []
    for relative, names, plain in _PY_IMPORT.findall(source):
        if plain:
            modules = [m.strip().split(" as ")[0] for m in plain.split(",")]
        else:
            files, modules = _relative_import(relative, names, here)
            found += files
        for module in modules:
            found += _module_files(module, root, here)
    return found


def _js_dependencies(source: str, here: str) -> list[str]:
    found: list[str] = []
    for spec in _JS_IMPORT.findall(source):
        candidate = next((c for ext in _JS_EXTENSIONS
                          if os.path.isfile(c := os.path.normpath(os.path.join(here, spec + ext)))), None)
        if candidate is not None:
            found.append(candidate)
    return found


def local_dependencies(path: str, root: str) -> list[str]:
    """Project files a Python or JS/TS file imports (only those that exist)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            source = handle.read(MAX_SOURCE_READ)
    except OSError:
        return []
    here = os.path.dirname(path)
    if path.endswith(".py"):
        found = _python_dependencies(source, root, here)
    elif path.endswith(_JS_SOURCES):
        found = _js_dependencies(source, here)
    else:
        found = []
    return sorted({os.path.normpath(f) for f in found if os.path.normpath(f) != os.path.normpath(path)})


@condition("unknown_dependencies", "code_safety", "medium", write_or_exec=True)
def unknown_dependencies(ctx, threshold):
    """Fires when a file to change imports project files the session has not
    read: Python ``import``/``from ... import`` (absolute ones resolved against
    the cwd and the file's directory, relative ones against the package) and
    JS/TS relative ``import``/``require``. Only imports that resolve to files
    that exist count — the standard library and installed packages never do."""
    read = {ctx.norm(p) for p in ctx.files_read}
    root = ctx.cwd or os.getcwd()
    unknown: list[str] = []
    created = {ctx.norm(p) for p in ctx.new_files}
    for target in ctx.files_to_change:
        path = ctx.norm(target)
        if path in created:
            continue  # a file the change creates imports nothing yet
        for dependency in local_dependencies(path, root):
            if dependency not in read and dependency not in unknown:
                unknown.append(dependency)
    if not unknown:
        return None
    shown = [os.path.relpath(u, root) if u.startswith(root) else u for u in unknown]
    return Finding(f"Target files depend on files that have not been read: {', '.join(shown)}",
                   annotations={"files_not_read": shown})
