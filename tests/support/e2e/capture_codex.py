"""Capture real Codex CLI hook payloads, one per event and tool, as fixtures.

    .venv/bin/python tests/support/e2e/capture_codex.py [--version 0.169.0|latest] [--out DIR]

Each scenario runs the real ``codex exec`` against the loopback stand-in with
a recording hook on every event Codex has (``codex_cli.EVENT_LABELS``): its
command writes its stdin to a file of the capture's temporary folder, and the
PermissionRequest recorder also answers ``allow`` so that the run goes on
without a reviewer. The hooks are trusted through ``codex app-server`` first.

Scenarios: a shell command, an ``apply_patch`` that adds a file and one that
updates it (SessionStart, UserPromptSubmit, Pre/PostModelRequest, Pre/PostToolUse,
Stop, SessionEnd); ``--approve-for-me`` with a command that asks for
escalation and a patch outside the writable roots (PermissionRequest); an auto
compaction (PreCompact, PostCompact, SessionStart ``compact``); a subagent
(``multi_agent_v2``: SubagentStart, SubagentStop); SIGINT during a command
(Interrupt). About 7 s.

The first payload of each event (and tool) is written to
``tests/fixtures/codex_cli/<Event>[.<tool>[.<variant>]].json`` with the
temporary paths replaced by ``<CWD>``, ``<CODEX_HOME>`` and ``<TMP>``, ids by
``<SESSION_ID>``, ``<TURN_ID>``, ``<AGENT_ID>`` (then ``<UUID_n>``) and the
rollout file's date by ``<DATE>``/``<TIME>``, so that a new capture changes
only what Codex changed. It exits non-zero, naming them, when an event was not
captured or a run failed; the temporary folder is removed either way.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.support.e2e.codex_cli import (  # noqa: E402
    EVENT_LABELS,
    EXEC_ARGS,
    ROOT,
    binary_version,
    codex_env,
    install_codex,
    run_codex,
    trust_hooks,
    write_codex_config,
)
from tests.support.e2e.codex_standin import (  # noqa: E402
    CodexStandin,
    add_file_patch,
    apply_patch,
    call,
    for_agent,
    shell,
    text,
    update_file_patch,
)

OUT = ROOT / "tests" / "fixtures" / "codex_cli"
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PermissionRequest")
SHORT_TIMEOUT_EVENTS = ("SessionEnd", "Interrupt")  # Codex clamps these to 3 s (and warns above)
ALLOW = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}
ESCALATE = call("exec_command", {"cmd": "echo escalated > escalated.txt", "sandbox_permissions": "require_escalated",
                                 "justification": "write a file"})


@dataclass
class Scenario:
    name: str
    script: list[dict]
    args: tuple[str, ...] = EXEC_ARGS
    settings: dict = field(default_factory=dict)
    interrupt: bool = False  # SIGINT once the scripted command has started


def scenarios(outside: str) -> list[Scenario]:
    """``outside`` is a path outside the writable roots, for a patch that needs
    approval. The parent waits for its subagent (``wait_agent``), so the
    subagent stops before the session ends."""
    return [
        Scenario("tools", [shell("echo hi > out.txt"), apply_patch(add_file_patch("notes.txt", "hello")),
                           apply_patch(update_file_patch("notes.txt", "hello", "bye")), text("done")]),
        Scenario("permission", [ESCALATE, apply_patch(add_file_patch(outside, "outside")), text("done")],
                 args=("--json", "--skip-git-repo-check", "--approve-for-me"),
                 settings={"sandbox_workspace_write": {"exclude_slash_tmp": True, "exclude_tmpdir_env_var": True}}),
        Scenario("compact", [shell("echo compacting"), text("done")], settings={"model_auto_compact_token_limit": 12}),
        Scenario("subagent", [call("spawn_agent", {"message": "say hi", "task_name": "helper", "fork_turns": "none"},
                                   namespace="collaboration"),
                              for_agent("/root", call("wait_agent", {"timeout_ms": 30000}, namespace="collaboration")),
                              for_agent("/root/helper", text("hi from the helper")), text("done")],
                 args=(*EXEC_ARGS, "--enable", "multi_agent_v2")),
        Scenario("interrupt", [shell("sleep 30"), text("done")], interrupt=True),
    ]


def recording_hooks(folder: Path) -> dict[str, list[dict]]:
    """A hook on every event that writes its stdin to ``folder/<Event>.<ns>.<pid>.json``."""
    hooks = {}
    for event in EVENT_LABELS:
        target = shlex.quote(str(folder / event))
        command = f'cat > {target}."$(date +%s%N)".$$.json'
        if event == "PermissionRequest":
            command += f"; printf '%s\\n' {shlex.quote(json.dumps(ALLOW))}"
        group: dict = {"hooks": [{"type": "command", "command": command,
                                  "timeout": 3 if event in SHORT_TIMEOUT_EVENTS else 10}]}
        if event in TOOL_EVENTS:
            group = {"matcher": ".*", **group}
        hooks[event] = [group]
    return hooks


def interrupted_run(codex: Path, home: Path, project: Path, proxy_url: str, records: Path) -> int:
    """``codex exec`` sent SIGINT a second after its PreToolUse hook recorded
    the (long) scripted command; its exit code."""
    proc = subprocess.Popen([str(codex), "exec", *EXEC_ARGS, "run the command"], cwd=project,
                            env=codex_env(home, proxy_url=proxy_url), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not any(records.glob("PreToolUse.*.json")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the command to interrupt never started")
            time.sleep(0.1)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        return proc.wait(timeout=30)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_scenario(codex: Path, scenario: Scenario, base: Path) -> list[tuple[str, dict]]:
    """The (event, payload) pairs one scenario recorded, in the order they were written."""
    home, project, records = base / "codex-home", base / "project", base / "records"
    for folder in (project, records):
        folder.mkdir(parents=True)
    with CodexStandin(scenario.script) as api:
        write_codex_config(home, api.url, recording_hooks(records), settings=scenario.settings)
        trust_hooks(codex, home, cwd=project)
        if scenario.interrupt:
            interrupted_run(codex, home, project, api.proxy_url, records)
        else:
            run = run_codex(codex, "do the task", codex_home=home, cwd=project, args=scenario.args,
                            proxy_url=api.proxy_url)
            if run.returncode != 0:
                raise RuntimeError(f"scenario {scenario.name}: {run!r}")
        if api.blocked or api.errors:
            raise RuntimeError(f"scenario {scenario.name}: blocked {api.blocked}, errors {api.errors}")
    files = sorted(records.glob("*.json"), key=lambda path: int(path.name.split(".")[1]))
    return [(path.name.split(".")[0], json.loads(path.read_text())) for path in files]


# ----------------------------------------------------------------- normalising
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ROLLOUT_DATE = re.compile(r"sessions/\d{4}/\d{2}/\d{2}/rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-")
ID_FIELDS = (("session_id", "SESSION_ID"), ("turn_id", "TURN_ID"), ("agent_id", "AGENT_ID"))


def normalise(payload: dict, paths: list[tuple[Path, str]]) -> dict:
    """``payload`` with temporary paths, ids and dates replaced by placeholders."""
    names: dict[str, str] = {}
    for key, label in ID_FIELDS:
        value = payload.get(key)
        if isinstance(value, str) and UUID.fullmatch(value) and value not in names:
            names[value] = f"<{label}>"

    def fix(value: object) -> object:
        if isinstance(value, dict):
            return {key: fix(item) for key, item in value.items()}
        if isinstance(value, list):
            return [fix(item) for item in value]
        if not isinstance(value, str):
            return value
        for path, placeholder in paths:
            value = value.replace(str(path), placeholder)
        value = ROLLOUT_DATE.sub("sessions/<DATE>/rollout-<TIME>-", value)
        for found in UUID.findall(value):
            names.setdefault(found, f"<UUID_{len(names) + 1}>")
            value = value.replace(found, names[found])
        return value

    return fix(payload)  # type: ignore[return-value]


def fixture_name(event: str, payload: dict) -> str:
    """``<Event>[.<tool>[.<variant>]]`` (an apply_patch is ``add`` or ``update``;
    a SessionStart after compaction is ``SessionStart.compact``)."""
    tool = payload.get("tool_name") if event in TOOL_EVENTS else None
    if tool == "apply_patch":
        patch = (payload.get("tool_input") or {}).get("command", "")
        return f"{event}.apply_patch.{'update' if '*** Update File:' in patch else 'add'}"
    if tool:
        return f"{event}.{tool}"
    if event == "SessionStart" and payload.get("source") not in (None, "startup"):
        return f"{event}.{payload['source']}"
    return event


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=None, help="Codex version (a number or latest; default: the pinned one)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    codex = install_codex(args.version)
    version = binary_version(codex)
    captured: dict[str, tuple[str, dict]] = {}
    seen_events: set[str] = set()
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="codex-capture-") as temp:
        for index, scenario in enumerate(scenarios(str(Path(temp) / "outside" / "outside.txt"))):
            base = Path(temp) / f"{index}-{scenario.name}"
            started = time.monotonic()
            try:
                records = run_scenario(codex, scenario, base)
            except Exception as exc:  # one failing scenario should not hide the others' payloads
                failures.append(f"{scenario.name}: {exc}")
                continue
            paths = [(base / "project", "<CWD>"), (base / "codex-home", "<CODEX_HOME>"), (Path(temp), "<TMP>")]
            for event, payload in records:
                seen_events.add(event)
                name = fixture_name(event, payload)
                captured.setdefault(name, (scenario.name, normalise(payload, paths)))
            print(f"{scenario.name}: {len(records)} payloads in {time.monotonic() - started:.1f} s")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (_scenario, payload) in sorted(captured.items()):
        (args.out / f"{name}.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    missing = sorted(set(EVENT_LABELS) - seen_events)
    print(f"codex {version}: wrote {len(captured)} fixtures to {args.out}")
    for name, (scenario_name, _payload) in sorted(captured.items()):
        print(f"  {name}.json  ({scenario_name})")
    if missing:
        failures.append(f"events not captured: {', '.join(missing)}")
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
