"""Capture the real hook payloads of the Gemini CLI, as fixtures.

    .venv/bin/python tests/support/e2e/capture_gemini.py [--version 0.61.0|latest] [--out DIR]

It installs the CLI (``gemini_cli.install_gemini``), wires a recording hook to
every hook event the installed version declares, and runs it headless against
the loopback stand-in (``gemini_standin``) in a private temporary directory
that is removed afterwards:

1. a scripted session that calls ``run_shell_command``, ``write_file``,
   ``replace``, ``read_file`` and the tool ``say`` of a small stdio MCP server
   (``MCP_SERVER``, named ``probe``: the CLI calls it ``mcp_probe_say``) and
   then answers with text: this emits every event but ``Notification``;
2. a session whose BeforeTool hook answers ``{"decision": "ask"}``: the CLI
   then fires ``Notification`` (``ToolPermission``) and waits for a
   confirmation that a headless run never gets, so that run is ended after
   ``ASK_WAIT_SECONDS``.

The first payload of each event is written to ``OUT/<Event>.json``, and of each
tool event (BeforeTool, AfterTool) per tool to ``OUT/<Event>.<tool>.json``.
The run's own values are replaced by placeholders so that a new capture only
changes what the CLI changed: ``<CWD>``, ``<HOME>``, ``<TMP>`` (the temporary
directory), ``<SESSION_ID>``, ``<TIMESTAMP>``, ``<CALL_ID>`` for tool call ids
(they hold the time), ``<PGID>`` for the shell's process group, ``<DATE>``
for the day in the session context and in the transcript's name, and
``<STANDIN_URL>``. The summary on stderr lists the events captured, those no
scenario emitted, and the ``GEMINI_*`` / ``CLAUDE_*`` variables each hook saw.

It exits 1 when the CLI cannot be installed (the reason on stderr) or when a
session fails, and writes no fixture then.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.support.e2e.gemini_cli import (  # noqa: E402
    PINNED_VERSION,
    ROOT,
    GeminiTimedOut,
    GeminiUnavailable,
    install_gemini,
    installed_version,
    run_gemini,
)
from tests.support.e2e.gemini_standin import GeminiStandin, function_call, shell, text  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "gemini_cli"
# The events of 0.61.0 (packages/core/src/hooks/types.ts, HookEventName); the
# installed bundle's own list is used when it can be read from it.
KNOWN_EVENTS = ("BeforeTool", "AfterTool", "BeforeAgent", "Notification", "AfterAgent", "SessionStart",
                "SessionEnd", "PreCompress", "BeforeModel", "AfterModel", "BeforeToolSelection")
TOOL_EVENTS = ("BeforeTool", "AfterTool")
ASK_WAIT_SECONDS = 15
SESSION_TIMEOUT_SECONDS = 120

MAIN_SCRIPT = [
    shell("echo hi > out.txt", "write out.txt"),
    function_call("write_file", {"file_path": "notes.txt", "content": "alpha\nbeta\n"}),
    function_call("replace", {"file_path": "notes.txt", "instruction": "rename beta to gamma",
                              "old_string": "beta", "new_string": "gamma"}),
    function_call("read_file", {"file_path": "notes.txt"}),
    function_call("mcp_probe_say", {"words": "hello"}),
    text("All five done."),
]
# A stdio MCP server (newline-delimited JSON-RPC) with one tool, ``say``.
MCP_SERVER = """\
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    ident, method, params = message.get("id"), message.get("method"), message.get("params") or {}
    if ident is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2024-11-05"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "probe", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "say", "description": "Say the words.", "inputSchema": {
            "type": "object", "properties": {"words": {"type": "string"}}, "required": ["words"]}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "said " + params["arguments"].get("words", "")}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)
"""
ASK_SCRIPT = [shell("echo asked > asked.txt", "write asked.txt"), text("asked")]


def declared_events(executable: Path) -> list[str]:
    """The hook events the installed bundle declares (``HookEventName2["X"] = "X"``
    in its JavaScript), else ``KNOWN_EVENTS``."""
    pattern = re.compile(r'HookEventName2\["(\w+)"\] = "\1"')
    found: dict[str, None] = {}
    for path in sorted(executable.resolve().parent.glob("*.js")):
        found.update(dict.fromkeys(pattern.findall(path.read_text(errors="replace"))))
    return list(found) or list(KNOWN_EVENTS)


def recorder_settings(events: list[str], dump: Path, mcp_server: Path, *, ask: bool = False) -> dict:
    """User settings whose hooks write each payload (stdin) and the hook's GEMINI_*
    / CLAUDE_* variables to ``dump``, with the MCP server ``probe``; with ``ask``
    the BeforeTool hook also answers ``{"decision": "ask"}``."""
    record = (f'f={shlex.quote(str(dump))}/$(date +%s%N)-$$; cat > "$f.json"; '
              f'env | grep -E "^(GEMINI|CLAUDE)_" > "$f.env"')
    hooks = {}
    for event in events:
        command = record
        if ask and event == "BeforeTool":
            command += """; echo '{"decision": "ask", "reason": "capture: ask for a confirmation"}'"""
        group: dict = {"hooks": [{"type": "command", "name": f"capture-{event}", "command": command,
                                  "timeout": 10000}]}
        if event in TOOL_EVENTS:
            group = {"matcher": ".*", **group}
        hooks[event] = [group]
    return {"hooks": hooks, "mcpServers": {"probe": {"command": "python3", "args": [str(mcp_server)]}}}


def run_session(executable: Path, base: Path, name: str, script: list, events: list[str], *,
                ask: bool = False) -> tuple[list[tuple[dict, dict]], dict]:
    """One headless session; returns ([(payload, hook env)], roots for placeholders)."""
    home, project, dump = base / "home", base / "project", base / f"dump-{name}"
    for folder in (home / ".gemini", project, dump):
        folder.mkdir(parents=True, exist_ok=True)
    mcp_server = base / "mcp_probe.py"
    mcp_server.write_text(MCP_SERVER)
    settings = recorder_settings(events, dump, mcp_server, ask=ask)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    with GeminiStandin(script) as standin:
        roots = {"cwd": str(project), "home": str(home), "tmp": str(base), "url": standin.url}
        try:
            run = run_gemini(executable, f"capture: {name}", home=home, cwd=project, standin_url=standin.url,
                             timeout=ASK_WAIT_SECONDS if ask else SESSION_TIMEOUT_SECONDS)
        except GeminiTimedOut as exc:
            if not ask:
                raise SystemExit(f"capture: the {name} session timed out: {exc}") from None
            print(f"  {name}: ended after {ASK_WAIT_SECONDS} s waiting for a confirmation", file=sys.stderr)
        else:
            print(f"  {name}: exit {run.returncode}, {len(standin.requests)} requests, "
                  f"{len(standin.tool_results())} tool results", file=sys.stderr)
            if run.returncode != 0 and not ask:
                raise SystemExit(f"capture: the {name} session failed: exit {run.returncode}\n{run.stderr[-2000:]}")
        if standin.stray:
            raise SystemExit(f"capture: the CLI tried to reach other hosts: {standin.stray}")
    payloads = []
    for path in sorted(dump.glob("*.json")):  # named by the time the hook started
        env_file = path.with_suffix(".env")
        env = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line) \
            if env_file.exists() else {}
        payloads.append((json.loads(path.read_text()), env))
    return payloads, roots


# ---------------------------------------------------------------- placeholders
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
CALL_ID = re.compile(r"\b([a-z_]+)_\d{13}_\d+\b")
PGID = re.compile(r"Process Group PGID: \d+")
TODAY = re.compile(r"Today's date is \w+, \w+ \d{1,2}, \d{4}")  # in the session context of llm_request


def placeholders(value: dict, roots: dict, session_id: str) -> dict:
    """``value`` with the run's paths, ids and times replaced by placeholders."""
    raw = json.dumps(value)
    for key, mark in (("cwd", "<CWD>"), ("home", "<HOME>"), ("tmp", "<TMP>"), ("url", "<STANDIN_URL>")):
        raw = raw.replace(roots[key], mark)
    if session_id:
        raw = raw.replace(session_id, "<SESSION_ID>").replace(f"-{session_id[:8]}.json", "-<SESSION_ID_8>.json")
    raw = TIMESTAMP.sub("<TIMESTAMP>", raw)
    raw = TODAY.sub("Today's date is <DATE>", raw)
    raw = re.sub(r"session-\d{4}-\d\d-\d\dT\d\d-\d\d-", "session-<DATE>-", raw)
    raw = CALL_ID.sub(lambda match: f"{match.group(1)}_<CALL_ID>", raw)
    raw = PGID.sub("Process Group PGID: <PGID>", raw)
    return json.loads(raw)


def fixture_name(payload: dict) -> str:
    event = payload.get("hook_event_name", "Unknown")
    if event in TOOL_EVENTS and payload.get("tool_name"):
        return f"{event}.{payload['tool_name']}.json"
    return f"{event}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default=PINNED_VERSION, help="a version number or `latest`")
    parser.add_argument("--out", type=Path, default=OUT)
    options = parser.parse_args(argv)
    try:
        executable = install_gemini(options.version)
    except GeminiUnavailable as exc:
        print(f"capture: {exc}", file=sys.stderr)
        return 1
    version = installed_version(executable)
    events = declared_events(executable)
    print(f"Gemini CLI {version}: {len(events)} hook events: {', '.join(events)}", file=sys.stderr)
    fixtures: dict[str, dict] = {}
    seen_env: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="leash-gemini-capture-") as temporary:
        base = Path(temporary).resolve()
        for name, script, ask in (("five tools", MAIN_SCRIPT, False), ("ask", ASK_SCRIPT, True)):
            payloads, roots = run_session(executable, base, name.replace(" ", "-"), script, events, ask=ask)
            for payload, env in payloads:
                clean = placeholders(payload, roots, payload.get("session_id", ""))
                fixtures.setdefault(fixture_name(payload), clean)
                seen_env.setdefault(payload.get("hook_event_name", "Unknown"), sorted(env))
    options.out.mkdir(parents=True, exist_ok=True)
    for name, payload in sorted(fixtures.items()):
        (options.out / name).write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    emitted = {name.split(".", 1)[0] for name in fixtures}
    print(f"wrote {len(fixtures)} fixtures to {options.out}: {', '.join(sorted(fixtures))}", file=sys.stderr)
    missing = [event for event in events if event not in emitted]
    print(f"events no scenario emitted: {', '.join(missing) or 'none'}", file=sys.stderr)
    for event, names in sorted(seen_env.items()):
        print(f"  {event} hook env: {' '.join(names)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
