"""The store seam is typed on both sides: every ``backend`` a function of core/
or the console takes is annotated, ``RemoteBackend`` is a ``Backend`` without a
cast, no caller sniffs what a store hands it with ``hasattr``, and a store call
the protocol does not offer (``approvals.answr(..., bye=...)`` in a real caller)
fails the type check the way ``make lint`` runs it."""
from __future__ import annotations

import ast
import os
from pathlib import Path

from ..support.checkout import ROOT
from ..support.source import parsed

SEAM_USERS = ("core", "console")


def _sources() -> list[Path]:
    return sorted(path for folder in SEAM_USERS for path in (ROOT / folder).rglob("*.py")
                  if "__pycache__" not in path.parts)


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_every_backend_parameter_is_annotated():
    untyped = []
    for path in _sources():
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                untyped += [f"{_relative(path)}:{node.lineno} {node.name}()" for argument in arguments
                            if argument.arg == "backend" and argument.annotation is None]
    assert not untyped, "untyped backend parameters:\n" + "\n".join(untyped)


def test_no_backend_enters_through_a_cast():
    casts = [f"{_relative(path)}:{number}" for path in _sources()
             for number, line in enumerate(path.read_text().splitlines(), 1) if "cast(Backend" in line]
    assert not casts, f"a Backend made by a cast: {casts}"


# mypy's cache, kept between runs in the checkout's (git-ignored) .cache: cold
# it costs seconds of CPU, warm a fraction. The probes are written at new paths
# each run, where mypy compares each file's hash with what its cache recorded.
MYPY_CACHE = ROOT / ".cache" / "mypy-tests-seam"


def _mypy(tmp_path: Path, monkeypatch, module: Path) -> str:
    """mypy's report on ``module`` with the project's settings, ``leash`` read
    from this checkout through links (as ``make lint`` reads it)."""
    from mypy import api

    package = tmp_path / "path" / "leash"
    package.mkdir(parents=True)
    for folder in SEAM_USERS:
        os.symlink(ROOT / folder, package / folder)
    monkeypatch.setenv("MYPYPATH", str(tmp_path / "path"))
    report, errors, _ = api.run([str(module), "--config-file", str(ROOT / "pyproject.toml"),
                                 "--cache-dir", str(MYPY_CACHE), "--no-error-summary",
                                 "--follow-imports", "silent"])
    return report + errors


# A real caller of the seam (a function that once took an untyped backend),
# its store call misspelled as a slip would make it.
CALLER = ROOT / "console" / "cli" / "approvals.py"
RIGHT = "backend.approvals.answer(args.approval_id, allow=allow, by=args.source,"
MISSPELLED = "backend.approvals.answr(args.approval_id, allow=allow, bye=args.source,"


def test_a_store_call_the_protocol_does_not_offer_fails_the_type_check(tmp_path, monkeypatch):
    text = CALLER.read_text()
    assert RIGHT in text, "the stop call this test misspells has moved: update RIGHT"
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "right_caller.py").write_text(text)
    (probe / "misspelled_caller.py").write_text(text.replace(RIGHT, MISSPELLED))

    report = _mypy(tmp_path, monkeypatch, probe / "misspelled_caller.py")
    assert '"ApprovalStore" has no attribute "answr"' in report, report
    assert _mypy(tmp_path / "again", monkeypatch, probe / "right_caller.py") == ""


def test_what_a_store_hands_out_is_never_sniffed_with_hasattr():
    # A record is read by its attributes (``as_dict()``: its stored dict), so no
    # caller asks what it was handed.
    sniffs = [f"{_relative(path)}:{number}" for path in _sources()
              for number, line in enumerate(path.read_text().splitlines(), 1) if "hasattr(" in line]
    assert not sniffs, f"hasattr sniffs: {sniffs}"


PROTOCOL_FILES = sorted((ROOT / "core" / "store").glob("protocols*.py"))


def _protocols() -> list[ast.ClassDef]:
    """Every ``Protocol`` class of core/store/protocols*.py."""
    return [node for path in PROTOCOL_FILES for node in parsed(path).body if isinstance(node, ast.ClassDef)
            and any(getattr(base, "id", "") == "Protocol" for base in node.bases)]


def test_every_protocol_member_says_what_it_returns():
    members = [(cls.name, member) for cls in _protocols() for member in cls.body
               if isinstance(member, ast.FunctionDef)]
    assert len(members) > 100
    assert [f"{name}.{member.name}" for name, member in members if not ast.get_docstring(member)] == []


# A container named without what it holds: a dict or list standing for a record.
UNTYPED_CONTAINERS = frozenset({"dict", "list", "Dict", "List", "Mapping", "Sequence", "Any", "object"})


def _bare(annotation: ast.expr | None) -> list[str]:
    """The containers ``annotation`` names without saying what they hold
    (``dict``, ``list[dict]``, ``dict[str, list]``: each a bare dict or list)."""
    if annotation is None:
        return ["(no annotation)"]
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return _bare(ast.parse(annotation.value, mode="eval").body)
    found: list[str] = []
    subscripted = {id(node.value) for node in ast.walk(annotation) if isinstance(node, ast.Subscript)}
    for node in ast.walk(annotation):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in UNTYPED_CONTAINERS and (id(node) not in subscripted or name in ("Any", "object")):
            found.append(ast.unparse(annotation))
    return found


def _answers(cls: ast.ClassDef) -> list[tuple[str, ast.expr | None]]:
    """(member, what it answers) of a protocol: each method's return, each attribute's type."""
    found: list[tuple[str, ast.expr | None]] = []
    for member in cls.body:
        if isinstance(member, ast.FunctionDef):
            found.append((f"{cls.name}.{member.name}()", member.returns))
        elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
            found.append((f"{cls.name}.{member.target.id}", member.annotation))
    return found


def test_no_protocol_member_answers_a_bare_dict_or_list():
    # What a store hands out is a record (or scalars, or collections of them
    # keyed by what they are): never a dict whose keys a caller must know.
    bare = [f"{member} -> {shown}" for cls in _protocols() for member, answer in _answers(cls)
            for shown in _bare(answer)]
    assert len(PROTOCOL_FILES) > 1 and bare == [], "protocol members answering bare containers:\n" + "\n".join(bare)


def test_the_bare_container_check_sees_what_it_forbids():
    def answer(text: str) -> list[str]:
        return _bare(ast.parse(text, mode="eval").body)

    for forbidden in ("dict", "list[dict]", "dict[str, list]", "tuple[str, dict] | None", "Any", "'dict'"):
        assert answer(forbidden), forbidden
    for allowed in ("HaltListing", "dict[str, StopRecord]", "dict[str, dict[str, MeterState]]", "list[str] | None",
                    "tuple[WarrantRecord, bool]", "ContextManager[HaltUnit]", "None", "bool"):
        assert answer(allowed) == [], allowed
