"""What the real Claude Code does with an HTTP hook when its listener fails.

    .venv/bin/python tests/support/e2e/capture_http_hooks.py [--versions 2.1.197,2.1.332] [--only NAME] [--json FILE]

Each case runs ``claude -p`` headless against the loopback stand-in, scripted
to call Bash ``echo marker > marker``, in a project whose
``.claude/settings.json`` wires hooks as ``{"type": "http", "url": ..., "timeout": N}``
(with or without ``"onFailure": "block"``) to ``http_probe.py``, which answers
each request as the case says, or to a port nothing listens on (``down``).
For each case it prints: did the tool run (the marker exists), the tool_result
the model was sent next, the run's seconds and the seconds from the hook's
request to the model's next request, what the probe received (paths, header
names, which connections), and Claude Code's own debug lines about the hook
(``--debug``, from its debug log). ``--json`` writes every outcome.

Cases: every probe mode × onFailure absent or ``block``; a hook with no
``timeout``; http hooks on every event leash wires (which of them are sent);
the request body beside a command hook's stdin for the same call; header
interpolation (``allowedEnvVars``); ``allowedHttpHookUrls``; an ``onFailure``
value that is neither ``continue`` nor ``block``; a failing UserPromptSubmit
hook. The cases are data (``CASES``), so ``test_http_hooks_facts.py`` runs the
same ones. A case whose Claude Code overruns is reported as such; nothing is
left behind (the temporary folder is removed, the process group killed).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.support.e2e.harness import ROOT, claude_env, installed, run_claude  # noqa: E402
from tests.support.e2e.http_probe import MODES, ProbeServer, unused_port  # noqa: E402
from tests.support.e2e.standin import StandInServer, bash, result_text, text  # noqa: E402

RECORDER = Path(__file__).resolve().parent / "record_hook.py"
BYPASS = ("--permission-mode", "bypassPermissions")
HOOK_TIMEOUT = 3  # seconds, as the hook's "timeout" says
SLOW_SECONDS = 8  # how long a "slow" probe waits: well past HOOK_TIMEOUT
# A proxy on the discard port (nothing listens there); the stand-in, named localhost, is kept off it.
PROXIED = {"HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9", "NO_PROXY": "localhost",
           "no_proxy": "localhost"}
FAILURE_MODES = ("down", "500", "garbage", "close", "slow")
# The events leash wires; Notification and PermissionRequest need a dialog that -p has not.
LEASH_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "UserPromptSubmit", "Stop",
                "SessionStart", "SessionEnd", "Notification", "PermissionRequest")


@dataclass
class Case:
    """One headless run: how the hooks are wired and how the probe answers."""
    name: str
    mode: str = "allow"  # a probe mode, or "down": the hooks' URL is a port nothing listens on
    on_failure: str | None = None
    timeout: float | None = HOOK_TIMEOUT
    events: tuple[str, ...] = ("PreToolUse",)
    settings: dict = field(default_factory=dict)  # merged into settings.json beside "hooks"
    hook_extra: dict = field(default_factory=dict)  # merged into each http hook
    command_too: bool = False  # a recording command hook beside the http one on PreToolUse
    args: tuple[str, ...] = BYPASS
    slow_seconds: float = SLOW_SECONDS
    env: dict = field(default_factory=dict)
    command: str = "echo marker > marker"  # what the model asks Bash to run
    api_host: str = "127.0.0.1"  # how Claude Code names the stand-in (localhost: kept off a proxy)


@dataclass
class Outcome:
    case: str
    version: str
    ran: bool  # the marker file exists: the tool ran
    code: int
    timed_out: bool
    seconds: float  # the whole claude -p run
    hook_to_next: float | None  # the hook's first request to the model's next request
    tool_results: list[str]
    model_requests: int
    requests: list[dict]  # what the probe received
    connections: int  # distinct client ports the probe saw
    command_stdin: list[dict]  # what a recording command hook read (command_too)
    debug: list[str]  # Claude Code's debug lines about hooks
    stderr: str


def failure_cases() -> list[Case]:
    """Every probe mode and ``down``, with and without ``onFailure: "block"``."""
    return [Case(f"{mode}/{on_failure or 'absent'}", mode=mode, on_failure=on_failure)
            for mode in (*MODES, "down") for on_failure in (None, "block")]


def other_cases() -> list[Case]:
    return [
        Case("slow/no-timeout", mode="slow", timeout=None, slow_seconds=15),
        Case("timeout-2s/slow", mode="slow", timeout=2, on_failure="block"),
        Case("events/empty", mode="empty", events=LEASH_EVENTS),
        Case("events/empty/default-permissions", mode="empty", events=LEASH_EVENTS,
             args=("--permission-mode", "default")),
        Case("events/empty/default-permissions/touch", mode="empty", events=LEASH_EVENTS,
             args=("--permission-mode", "default"), command="touch marker"),
        Case("events/empty/failing-command", mode="empty", events=LEASH_EVENTS,
             command="echo marker > marker; exit 3"),
        Case("body/beside-command", mode="empty", command_too=True),
        Case("headers/allowedEnvVars", mode="empty", env={"LEASH_PROBE_ALLOWED": "yes", "LEASH_PROBE_OTHER": "no"},
             hook_extra={"headers": {"X-Allowed": "${LEASH_PROBE_ALLOWED}", "X-Other": "$LEASH_PROBE_OTHER",
                                     "X-Fixed": "fixed"}, "allowedEnvVars": ["LEASH_PROBE_ALLOWED"]}),
        Case("allowedHttpHookUrls/other/absent", mode="deny", settings={"allowedHttpHookUrls": ["http://192.0.2.1/*"]}),
        Case("allowedHttpHookUrls/other/block", mode="deny", on_failure="block",
             settings={"allowedHttpHookUrls": ["http://192.0.2.1/*"]}),
        Case("allowedHttpHookUrls/empty/block", mode="deny", on_failure="block", settings={"allowedHttpHookUrls": []}),
        Case("allowedHttpHookUrls/matching", mode="deny", settings={"allowedHttpHookUrls": ["http://127.0.0.1:*"]}),
        Case("onFailure-unknown/500", mode="500", on_failure="refuse"),
        Case("onFailure-continue/500", mode="500", on_failure="continue"),
        Case("proxy-env/allow/block", mode="allow", on_failure="block", env=PROXIED, api_host="localhost"),
        Case("proxy-env/no-proxy/allow/block", mode="allow", on_failure="block", api_host="localhost",
             env={**PROXIED, "NO_PROXY": "localhost,127.0.0.1", "no_proxy": "localhost,127.0.0.1"}),
        Case("UserPromptSubmit/500/block", mode="500", on_failure="block", events=("UserPromptSubmit",)),
        Case("UserPromptSubmit/down/block", mode="down", on_failure="block", events=("UserPromptSubmit",)),
        Case("UserPromptSubmit/500/absent", mode="500", events=("UserPromptSubmit",)),
    ]


CASES = {case.name: case for case in failure_cases() + other_cases()}


def settings_for(case: Case, url: str) -> dict:
    hooks: dict[str, list] = {}
    for event in case.events:
        hook: dict = {"type": "http", "url": f"{url}/hook/{event}", **case.hook_extra}
        if case.timeout is not None:
            hook["timeout"] = case.timeout
        if case.on_failure is not None:
            hook["onFailure"] = case.on_failure
        entries = [hook]
        if case.command_too and event == "PreToolUse":
            entries.append({"type": "command", "command": f"{sys.executable} {RECORDER} {event}", "timeout": 20})
        hooks[event] = [{"matcher": "*", "hooks": entries}]
    return {**case.settings, "hooks": hooks}


def transcript_results(base: Path, run) -> list[str]:
    """The tool_result texts Claude Code wrote to its transcript (when the model was not asked again)."""
    try:
        session_id = run.json()["session_id"]
    except AssertionError:
        return []
    texts = []
    for path in (base / "claude-home" / ".claude" / "projects").glob(f"*/{session_id}.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            content = (entry.get("message") or {}).get("content") if entry.get("type") == "user" else None
            texts += [result_text(block) for block in content if isinstance(block, dict)
                      and block.get("type") == "tool_result"] if isinstance(content, list) else []
    return texts


def debug_lines(base: Path) -> list[str]:
    lines = []
    for path in sorted((base / "claude-home" / ".claude" / "debug").glob("*.txt")):
        for line in path.read_text(errors="replace").splitlines():
            if ("ook" in line or "HTTP" in line) and "mTLS" not in line:
                lines.append(line.split(" ", 1)[-1][:600])
    return lines


def run_case(claude: list[str], version: str, base: Path, case: Case) -> Outcome:
    """``case`` once with ``claude``, in ``base`` (a fresh folder)."""
    project = base / "project"
    (project / ".claude").mkdir(parents=True)
    record = base / "command-hook.jsonl"
    script = [[text("Making the marker."), bash(case.command)], [text("done")]]
    with ProbeServer(case.mode if case.mode != "down" else "allow", slow_seconds=case.slow_seconds) as probe, \
            StandInServer(script) as standin:
        url = f"http://127.0.0.1:{unused_port()}" if case.mode == "down" else probe.url("")
        (project / ".claude" / "settings.json").write_text(json.dumps(settings_for(case, url), indent=2))
        asked: list[float] = []
        standin.before.update({0: lambda: asked.append(time.monotonic()), 1: lambda: asked.append(time.monotonic())})
        api_url = standin.url.replace("127.0.0.1", case.api_host)
        env = claude_env(base, api_url, LEASH_E2E_RECORD=str(record), **case.env)
        started = time.monotonic()
        run = run_claude(claude, project, "make the marker", env, args=(*case.args, "--debug"), timeout=120)
        seconds = time.monotonic() - started
        received = list(probe.requests)
        results = standin.tool_result_texts() or transcript_results(base, run)
        model_requests = len(standin.model_requests)
    first = next((request.at for request in received if request.path.endswith("/PreToolUse")), None)
    return Outcome(
        case=case.name, version=version, ran=(project / "marker").exists(), code=run.code, timed_out=run.timed_out,
        seconds=round(seconds, 2),
        hook_to_next=round(asked[1] - first, 2) if first is not None and len(asked) > 1 else None,
        tool_results=results, model_requests=model_requests,
        requests=[{"method": request.method, "path": request.path, "headers": request.headers,
                   "body": request.body.decode("utf-8", "replace"), "client_port": request.client_port}
                  for request in received],
        connections=len({request.client_port for request in received}),
        command_stdin=[json.loads(line)["stdin"] for line in record.read_text().splitlines()]
        if record.exists() else [],
        debug=debug_lines(base), stderr=run.err[-2000:])


def summary(outcome: Outcome) -> str:
    paths = ",".join(request["path"].rsplit("/", 1)[-1] for request in outcome.requests) or "-"
    result = " | ".join(outcome.tool_results)[:160].replace("\n", " ") or "-"
    wait = "-" if outcome.hook_to_next is None else f"{outcome.hook_to_next:.1f}"
    return (f"{outcome.version} {outcome.case:42} ran={'yes' if outcome.ran else 'NO ':3} exit={outcome.code} "
            f"run={outcome.seconds:.1f}s hook->next={wait}s sent=[{paths}] conns={outcome.connections}\n"
            f"    result: {result}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="2.1.197,2.1.332")
    parser.add_argument("--only", help="run only the cases whose name contains this")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    options = parser.parse_args(argv)
    outcomes: list[Outcome] = []
    for version in options.versions.split(","):
        found = installed(version)
        if found is None:
            print(f"Claude Code {version} is not installed in .cache/claude-code (run the e2e suite with "
                  f"LEASH_E2E_CLAUDE_VERSION={version} once)", file=sys.stderr)
            return 1
        for case in CASES.values():
            if options.only and options.only not in case.name:
                continue
            with tempfile.TemporaryDirectory(prefix="http-hooks-", dir=ROOT / ".cache") as base:
                outcome = run_case(found[0], found[1], Path(base), case)
            outcomes.append(outcome)
            print(summary(outcome), flush=True)
    if options.json:
        options.json.write_text(json.dumps([asdict(outcome) for outcome in outcomes], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
