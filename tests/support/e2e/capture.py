"""Capture one real payload of every hook event Claude Code emits, as fixtures.

    .venv/bin/python tests/support/e2e/capture.py [--out tests/fixtures/claude_code] [--raw FILE]

Each scenario runs the real ``claude -p`` against the loopback stand-in with a
recording hook (``record_hook.py``) wired to every event this version knows;
the first payload of each event is kept, with ids, paths, times and durations
replaced by fixed values so that the fixtures do not change from run to run.
Events that need an interactive terminal, MCP servers, agent teams or the auto
mode classifier are not emitted by a headless run and are listed as missing.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.support.e2e.harness import ROOT, claude_env, ensure_claude, run_claude  # noqa: E402
from tests.support.e2e.standin import StandInServer, api_error, bash, text, tool_use  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "claude_code"
RECORDER = Path(__file__).resolve().parent / "record_hook.py"
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification", "UserPromptSubmit",
          "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop", "StopFailure", "SubagentStart",
          "SubagentStop", "PreCompact", "PostCompact", "PermissionRequest", "PermissionDenied", "Setup",
          "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult", "ConfigChange",
          "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "CwdChanged", "FileChanged", "MessageDisplay")
BYPASS = ("--permission-mode", "bypassPermissions")


@dataclass
class Scenario:
    """One or more headless runs in one project; later prompts continue the session."""
    name: str
    prompts: list[str]
    script: list[list[dict]]
    args: tuple[str, ...] = BYPASS
    files: dict[str, str] = field(default_factory=dict)


SCENARIOS = [
    Scenario("tool call", ["list the files"], [[text("Listing."), bash("ls")], [text("done")]],
             files={"CLAUDE.md": "# Project notes\n"}),
    Scenario("failing tool", ["run a failing command"], [[bash("echo failing >&2; exit 3")], [text("it failed")]]),
    Scenario("subagent", ["ask a helper"], [[tool_use("Agent", {"description": "look around", "prompt": "say hi",
                                                                "subagent_type": "general-purpose"})],
                                            [text("hi from the helper")], [text("the helper said hi")]]),
    Scenario("cwd change", ["change directory"], [[bash("mkdir -p sub && cd sub")], [text("moved")]]),
    Scenario("settings change", ["change a setting"], [
        [tool_use("Write", {"file_path": "{project}/.claude/settings.local.json",
                            "content": json.dumps({"env": {"CAPTURED": "1"}})})],
        [bash("sleep 3")], [text("changed")]]),
    Scenario("watched file", ["touch the watched file"],
             [[bash("sleep 1; echo x > watched.txt; sleep 3")], [text("touched")]]),
    Scenario("slash command", ["/hello"], [[text("hello to you")]],
             files={".claude/commands/hello.md": "Say hello.\n"}),
    Scenario("task list", ["plan the work"], [[tool_use("TaskCreate", {"subject": "write tests",
                                                                       "description": "write the tests",
                                                                       "activeForm": "writing tests"})],
                                              [tool_use("TaskUpdate", {"taskId": "1", "status": "completed"})],
                                              [text("planned")]]),
    Scenario("compact", ["list the files", "say more", "/compact"],
             [[bash("ls")], [text("listed")], [text("more")], [text("<summary>listed the files</summary>")]]),
    Scenario("setup", ["hello"], [[text("hello")]], args=BYPASS + ("--init",)),
    Scenario("api error", ["fail the request"], [[api_error()]]),
]
# Interactive only: a permission dialog (PermissionRequest, then a Notification).
INTERACTIVE = Scenario("permission dialog", ["touch a file"], [[bash("touch asked.txt")], [text("asked")]],
                       args=("--permission-mode", "default"))
INTERACTIVE_WAIT_SECONDS = 30


def record_settings(python: str) -> dict:
    hooks = {}
    for event in EVENTS:
        matcher = "watched.txt" if event == "FileChanged" else "*"
        hooks[event] = [{"matcher": matcher, "hooks": [{"type": "command", "timeout": 20,
                                                       "command": f"{python} {RECORDER} {event}"}]}]
    return {"hooks": hooks}


def prepare(base: Path, scenario: Scenario) -> tuple[Path, Path, Path, list[list[dict]]]:
    """(its own directory, the project, the record file, the script) of a scenario."""
    own = base / re.sub(r"\W+", "-", scenario.name)
    project, record = own / "project", own / "record.jsonl"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(record_settings(sys.executable), indent=2))
    for relative, content in scenario.files.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(content)
    script = json.loads(json.dumps(scenario.script).replace("{project}", str(project)))
    return own, project, record, script


def recorded(record: Path, scenario: Scenario, project: Path, own: Path) -> list[dict]:
    if not record.exists():
        return []
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    return [dict(line, scenario=scenario.name, roots={"project": str(project), "base": str(own)}) for line in lines]


def run_scenario(claude: list[str], base: Path, scenario: Scenario) -> list[dict]:
    name = scenario.name
    own, project, record, script = prepare(base, scenario)
    with StandInServer(script) as standin:
        env = claude_env(own, standin.url, LEASH_E2E_RECORD=str(record))
        started = time.monotonic()
        for number, prompt in enumerate(scenario.prompts):
            more = ("--continue",) if number else ()
            run = run_claude(claude, project, prompt, env, args=scenario.args + more)
            print(f"  {name}: {prompt!r} exit {run.code} in {time.monotonic() - started:.1f} s, "
                  f"{len(standin.requests)} requests", file=sys.stderr)
            if run.code != 0 and name != "api error":
                print(f"    {run!r}", file=sys.stderr)
    return recorded(record, scenario, project, own)


def run_interactive(claude: list[str], base: Path, scenario: Scenario) -> list[dict]:
    """The scenario's first prompt in an interactive Claude Code on a private tmux
    server, until its permission dialog has been notified; then the server is killed."""
    if shutil.which("tmux") is None:
        print(f"  {scenario.name}: skipped (tmux is not installed)", file=sys.stderr)
        return []
    own, project, record, script = prepare(base, scenario)
    socket = own / "tmux.sock"
    with StandInServer(script) as standin:
        env = claude_env(own, standin.url, LEASH_E2E_RECORD=str(record), TERM="xterm-256color")
        trust_project(Path(env["CLAUDE_CONFIG_DIR"]), project)
        settings = [word for key, value in env.items() for word in ("-e", f"{key}={value}")]
        started = time.monotonic()
        subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40",
                        "-c", str(project), *settings, *claude, *scenario.args, scenario.prompts[0]],
                       check=True, env=env)
        try:
            while time.monotonic() - started < INTERACTIVE_WAIT_SECONDS:
                if record.exists() and '"Notification"' in record.read_text():
                    break
                time.sleep(0.5)
            time.sleep(1)
        finally:
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)
        print(f"  {scenario.name}: interactive, {time.monotonic() - started:.1f} s, "
              f"{len(standin.requests)} requests", file=sys.stderr)
    return recorded(record, scenario, project, own)


def trust_project(config_dir: Path, project: Path) -> None:
    """Claude Code's own state as after onboarding, the key approved and the project trusted."""
    config_dir.mkdir(parents=True, exist_ok=True)
    state = {"hasCompletedOnboarding": True, "theme": "dark",
             "customApiKeyResponses": {"approved": ["test"], "rejected": []},
             "projects": {str(project): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}}}
    (config_dir / ".claude.json").write_text(json.dumps(state))


# ---------------------------------------------------------------- normalising
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
FIXED_IDS = {"session_id": "00000000-0000-4000-8000-000000000001"}
VOLATILE_NUMBERS = ("duration_ms", "durationMs", "totalDurationMs", "elapsed_ms")


def normalise(line: dict, value) -> object:
    """``value`` (from ``line``) with the run's paths, ids and times replaced by fixed values."""
    raw = json.dumps(value)
    roots = line["roots"]
    project_key = re.sub(r"[^A-Za-z0-9]", "-", roots["project"])  # Claude Code's folder name for a project
    raw = raw.replace(project_key, "-work-project")
    raw = raw.replace(roots["project"], "/work/project").replace(roots["base"] + "/claude-home", "/home/agent")
    raw = raw.replace(roots["base"] + "/claude-tmp", "/tmp").replace(roots["base"], "/base")
    seen: dict[str, str] = {}

    def stable(match: re.Match) -> str:
        return seen.setdefault(match.group(0), f"00000000-0000-4000-8000-{len(seen) + 1:012d}")

    raw = UUID.sub(stable, raw)
    raw = re.sub(r"toolu_\d{8}standin", "toolu_01standin", raw)
    raw = re.sub(r"msg_\d{8}standin", "msg_01standin", raw)
    raw = re.sub(r"agent-a[0-9a-f]{16}", "agent-a0000000000000001", raw)
    raw = re.sub(r'"agent_id": "a[0-9a-f]{16}"', '"agent_id": "a0000000000000001"', raw)
    result = json.loads(raw)
    _zero_volatile(result)
    return result


def _zero_volatile(value) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in VOLATILE_NUMBERS and isinstance(item, (int, float)):
                value[key] = 0
            else:
                _zero_volatile(item)
    elif isinstance(value, list):
        for item in value:
            _zero_volatile(item)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--raw", type=Path, help="also write every recorded line here")
    parser.add_argument("--only", help="run only the scenarios whose name contains this")
    options = parser.parse_args(argv)
    claude, version = ensure_claude()
    print(f"Claude Code {version}", file=sys.stderr)
    lines: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="capture-", dir=ROOT / ".cache") as base:
        for scenario in SCENARIOS:
            if options.only and options.only not in scenario.name:
                continue
            lines += run_scenario(claude, Path(base), scenario)
        if not options.only or options.only in INTERACTIVE.name:
            lines += run_interactive(claude, Path(base), INTERACTIVE)
    if options.raw:
        options.raw.write_text("".join(json.dumps(line) + "\n" for line in lines))
    first: dict[str, dict] = {}
    for line in lines:
        first.setdefault(line["argv"][0], line)
    options.out.mkdir(parents=True, exist_ok=True)
    for event, line in sorted(first.items()):
        payload = normalise(line, line["stdin"])
        (options.out / f"{event}.json").write_text(json.dumps(payload, indent=2) + "\n")
    missing = [event for event in EVENTS if event not in first]
    manifest = {"claude_code_version": version,
                "events": {event: {"scenario": line["scenario"], "env": normalise(line, line["env"])}
                           for event, line in sorted(first.items())},
                "not_emitted": missing}
    (options.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"captured {len(first)} events: {', '.join(sorted(first))}", file=sys.stderr)
    print(f"not emitted by these scenarios: {', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
