"""A fork's lineage (``core.lineage``) from transcripts shaped like Claude Code's
own and from Claude Code's command line.

The transcripts in ``tests/fixtures/claude_code_fork/<version>/`` were
captured from real ``claude -p`` runs (2.1.197 and 2.1.332) against the e2e
stand-in: ``claude -p --session-id P`` (one turn with a Bash call), then
``claude -p --resume P --fork-session "run the probe"``. ``parent.jsonl`` is
P's transcript, ``fork-first-call.jsonl`` the fork's as its first PreToolUse
hook saw it (nothing of P in it yet), ``fork.jsonl`` the fork's after its
first turn. Ids, paths and times were replaced by fixed values the same way in
every file (P is ``...00a``, the fork ``...00b``), and text values over 200
characters elided; keys, line order and ``uuid`` sharing are as recorded:
every line the fork copies keeps its ``uuid`` and gets the fork's
``sessionId``."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from leash.core.base import agentproc
from leash.core.base.wellknown import HOOK_PID_ENV
from leash.core.hook.hooks import answer
from leash.core.state import lineage
from leash.core.state.halts.api import record_halt
from leash.core.views.protocol import StopProtocol

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code_fork"
VERSIONS = ["2.1.197", "2.1.332"]
PARENT = "00000000-0000-4000-8000-00000000000a"
FORK = "00000000-0000-4000-8000-00000000000b"
HOOK_PID = 5000


@pytest.fixture
def projects(tmp_path) -> Path:
    """Claude Code's folder of one project's transcripts."""
    folder = tmp_path / "claude" / "projects" / "-work-project"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def no_claude_ancestor(tmp_path, monkeypatch) -> dict:
    """A /proc where the hook's parent is a shell run by nothing that resumes."""
    return fake_proc(tmp_path, monkeypatch, ["bash", "-l"])


def fake_proc(tmp_path: Path, monkeypatch, claude_argv: list[str]) -> dict:
    """A /proc of hook (5000) -> timeout (4000) -> sh (3000) -> ``claude_argv``
    (2000), all one user's; returns the env that names the hook's pid."""
    root = tmp_path / "proc"
    chain = [(HOOK_PID, "python3", ["python3", "-P", "hookentry.py", "hook", "pre-tool-use"], 4000),
             (4000, "timeout", ["timeout", "-k", "2", "25", "python3"], 3000),
             (3000, "sh", ["/bin/sh", "-c", "timeout ... || exit 2 # leash-hook"], 2000),
             (2000, Path(claude_argv[0]).name, claude_argv, 1000),
             (1000, "bash", ["bash"], 1)]
    for pid, comm, argv, ppid in chain:
        folder = root / str(pid)
        folder.mkdir(parents=True)
        # Fields after "(comm)": state, the parent (field 4) ... the start time (field 22).
        (folder / "stat").write_text(f"{pid} ({comm}) S {ppid} " + " 0" * 17 + f" {pid * 10} 0 0\n")
        (folder / "comm").write_text(comm + "\n")
        (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        (folder / "status").write_text(f"Name:\t{comm}\nUid:\t1000\t1000\t1000\t1000\n")
    monkeypatch.setattr(agentproc, "PROC", str(root))
    return {HOOK_PID_ENV: str(HOOK_PID)}


def place(projects: Path, version: str, name: str, session_id: str) -> str:
    path = projects / f"{session_id}.jsonl"
    shutil.copyfile(FIXTURES / version / name, path)
    return str(path)


def known_parent(home, projects: Path, version: str) -> str:
    """The parent as the hooks saw it run: registered with its transcript."""
    path = place(projects, version, "parent.jsonl", PARENT)
    StopProtocol(home).sessions.observe(PARENT, cwd="/work/project", transcript_path=path, now=1_800_000_000)
    return path


def pre_tool_use(home, session_id: str, transcript: str, env: dict, command: str = "touch marker"):
    payload = {"session_id": session_id, "transcript_path": transcript, "cwd": "/work/project",
               "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": command, "description": "run a command"}}
    out, _, code = answer("pre-tool-use", json.dumps(payload).encode(), home=str(home), env=env)
    assert code == 0
    return json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if out else None


def record(home, session_id: str) -> dict:
    return StopProtocol(home).sessions.get(session_id)


# ------------------------------------------------------------------ the real shapes
@pytest.mark.parametrize("version", VERSIONS)
def test_the_real_fork_shares_message_uuids_and_no_session_id(version):
    parent = [json.loads(line) for line in (FIXTURES / version / "parent.jsonl").read_text().splitlines()]
    fork = [json.loads(line) for line in (FIXTURES / version / "fork.jsonl").read_text().splitlines()]
    assert {line.get("sessionId") for line in fork} == {FORK}  # rewritten on every line
    parent_uuids = [line["uuid"] for line in parent if "uuid" in line]
    fork_uuids = [line["uuid"] for line in fork if "uuid" in line]
    assert fork_uuids[:len(parent_uuids)] == parent_uuids  # copies first, in order
    first_call = (FIXTURES / version / "fork-first-call.jsonl").read_bytes()
    assert lineage.message_uuids(first_call) == []  # nothing of the parent at the fork's first call


@pytest.mark.parametrize("version", VERSIONS)
def test_a_fork_is_linked_to_its_parent_by_the_messages_they_share(home, projects, no_claude_ancestor, version):
    known_parent(home, projects, version)
    StopProtocol(home).acknowledge_stop("ops", PARENT, "review the parent first")
    fork = place(projects, version, "fork.jsonl", FORK)

    reason = pre_tool_use(home, FORK, fork, no_claude_ancestor)

    assert reason is not None and "review the parent first" in reason and PARENT in reason
    assert (record(home, FORK)["parent"], record(home, FORK)["parent_by"]) == (PARENT, lineage.BY_TRANSCRIPT)


@pytest.mark.parametrize("version", VERSIONS)
def test_before_the_copies_are_written_nothing_is_settled_then_the_next_call_links(home, projects,
                                                                                   no_claude_ancestor, version):
    known_parent(home, projects, version)
    fork = place(projects, version, "fork-first-call.jsonl", FORK)
    assert pre_tool_use(home, FORK, fork, no_claude_ancestor) is None
    assert not lineage.settled(record(home, FORK))  # too early to say: asked again

    StopProtocol(home).acknowledge_stop("ops", PARENT, "review the parent first")
    place(projects, version, "fork.jsonl", FORK)
    assert "review the parent first" in pre_tool_use(home, FORK, fork, no_claude_ancestor)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_command_line_links_the_fork_at_its_first_call(home, projects, tmp_path, monkeypatch, version):
    known_parent(home, projects, version)
    StopProtocol(home).acknowledge_stop("ops", PARENT, "review the parent first")
    env = fake_proc(tmp_path, monkeypatch, ["/opt/claude/claude", "-p", "run the probe", "--output-format", "json",
                                            "--resume", PARENT, "--fork-session"])
    fork = place(projects, version, "fork-first-call.jsonl", FORK)

    reason = pre_tool_use(home, FORK, fork, env)

    assert reason is not None and "review the parent first" in reason
    assert record(home, FORK)["parent_by"] == lineage.BY_COMMAND_LINE


@pytest.mark.parametrize("version", VERSIONS)
def test_a_halt_on_the_parent_holds_the_fork_from_its_first_call(home, projects, tmp_path, monkeypatch, version):
    known_parent(home, projects, version)
    record_halt({"session_token": PARENT, "halt_type": "security", "severity": "critical",
                 "condition_name": "secrets_exposure", "description": "a key in a command"}, home=home)
    env = fake_proc(tmp_path, monkeypatch, ["claude", "-p", "run the probe", "-r", PARENT, "--fork-session"])
    fork = place(projects, version, "fork-first-call.jsonl", FORK)

    reason = pre_tool_use(home, FORK, fork, env)

    assert reason is not None and "halted" in reason
    assert pre_tool_use(home, FORK, fork, env, command="ls") is None  # only looking is allowed meanwhile


def test_2_1_197_sends_session_start_under_the_parents_id_and_the_prompt_is_still_held(home, projects, tmp_path,
                                                                                        monkeypatch):
    parent_transcript = known_parent(home, projects, "2.1.197")
    StopProtocol(home).acknowledge_stop("ops", PARENT, "review the parent first")
    env = fake_proc(tmp_path, monkeypatch, ["claude", "-p", "run the probe", "--resume", PARENT, "--fork-session"])
    start = {"session_id": PARENT, "transcript_path": parent_transcript, "cwd": "/work/project",
             "hook_event_name": "SessionStart", "source": "resume"}
    answer("session-start", json.dumps(start).encode(), home=str(home), env=env)
    assert record(home, PARENT).get("parent", "") == ""  # never its own parent

    prompt = {"session_id": FORK, "transcript_path": str(projects / f"{FORK}.jsonl"), "cwd": "/work/project",
              "hook_event_name": "UserPromptSubmit", "prompt": "run the probe"}
    out, _, _ = answer("user-prompt-submit", json.dumps(prompt).encode(), home=str(home), env=env)

    assert json.loads(out)["decision"] == "block" and "review the parent first" in json.loads(out)["reason"]
    assert record(home, FORK)["parent"] == PARENT


# ------------------------------------------------------------------ what is not trusted, and the bounds
def test_a_session_named_on_the_command_line_counts_only_when_leash_knows_it(home, projects, tmp_path, monkeypatch):
    env = fake_proc(tmp_path, monkeypatch, ["claude", "-p", "go", "--resume=someone-else", "--fork-session"])
    StopProtocol(home).acknowledge_stop("ops", "someone-else", "not a session leash has seen")
    fork = place(projects, "2.1.332", "fork-first-call.jsonl", FORK)
    assert pre_tool_use(home, FORK, fork, env) is None
    assert not lineage.settled(record(home, FORK))


def test_a_session_of_its_own_is_settled_once_with_no_parent(home, projects, no_claude_ancestor):
    known_parent(home, projects, "2.1.332")
    other = place(projects, "2.1.197", "parent.jsonl", "fresh-session")  # messages no known session holds

    assert pre_tool_use(home, "fresh-session", other, no_claude_ancestor) is None

    assert record(home, "fresh-session")["parent_by"] == lineage.BY_NONE


def test_a_session_is_never_linked_to_its_own_fork(home, projects, no_claude_ancestor):
    """The parent seen again after its fork was linked: the fork holds the
    parent's messages too, but descends from it."""
    known_parent(home, projects, "2.1.332")
    fork = place(projects, "2.1.332", "fork.jsonl", FORK)
    pre_tool_use(home, FORK, fork, no_claude_ancestor)
    sessions = StopProtocol(home).sessions
    assert lineage.settle(sessions, PARENT, str(projects / f"{PARENT}.jsonl"), {}, no_claude_ancestor) == \
        {"parent_by": lineage.BY_NONE}


def test_of_two_forks_of_one_parent_neither_is_the_others_parent(home, projects, no_claude_ancestor):
    known_parent(home, projects, "2.1.332")
    first = place(projects, "2.1.332", "fork.jsonl", FORK)
    pre_tool_use(home, FORK, first, no_claude_ancestor)
    # A second fork of the parent: its copies are the parent's messages, which the first fork holds too.
    second = projects / "second-fork.jsonl"
    copies = [json.dumps({**json.loads(line), "sessionId": "second-fork"}, separators=(",", ":"))
              for line in (FIXTURES / "2.1.332" / "parent.jsonl").read_text().splitlines()]
    second.write_text("\n".join(copies) + "\n")

    pre_tool_use(home, "second-fork", str(second), no_claude_ancestor)

    assert record(home, "second-fork")["parent"] == PARENT


def test_only_the_head_of_a_transcript_is_read(tmp_path):
    path = tmp_path / "long.jsonl"
    filler = json.dumps({"type": "attachment", "content": "x" * lineage.HEAD_BYTES})
    path.write_text(filler + "\n" + json.dumps({"type": "user", "uuid": "beyond-the-head"}) + "\n")
    assert lineage.message_uuids(lineage._head(str(path))) == []


def test_only_the_most_recently_seen_candidates_are_opened(home, projects, no_claude_ancestor, monkeypatch):
    sessions = StopProtocol(home).sessions
    place(projects, "2.1.332", "parent.jsonl", PARENT)
    sessions.observe(PARENT, now=1_800_000_000)  # the oldest of them all
    for number in range(lineage.MAX_CANDIDATES):
        sessions.observe(f"newer-{number}", now=1_800_000_100 + number)
    opened: list[str] = []
    real_head = lineage._head
    monkeypatch.setattr(lineage, "_head", lambda path: opened.append(path) or real_head(path))
    fork = place(projects, "2.1.332", "fork.jsonl", FORK)

    assert lineage.settle(sessions, FORK, fork, {}, no_claude_ancestor) == {"parent_by": lineage.BY_NONE}
    assert len(opened) == 1 + lineage.MAX_CANDIDATES and not any(PARENT in path for path in opened)


@pytest.mark.parametrize("argv, named", [
    (["claude", "-p", "hi", "--resume", "abc", "--fork-session"], "abc"),
    (["claude", "-r", "abc"], "abc"),
    (["claude", "--resume=abc", "--fork-session"], "abc"),
    (["claude", "--continue", "--fork-session"], ""),
    (["claude", "-p", "hi"], ""),
])
def test_the_resumed_session_on_a_command_line(argv, named):
    assert lineage.resumed_session(argv) == named
