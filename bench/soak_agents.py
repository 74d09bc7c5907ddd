"""The soak's simulated agents: threads that speak the hook protocol exactly
as leash's thin hook does, with Claude Code's payloads and pacing.

Each ``SimulatedAgent`` is one Claude Code session on one host: its hooks go
through ``leash.core.wire.thinhook.run`` (the thin client itself: it connects
to the host's agent socket, vouches for leashd, sends the request and reads
the acknowledgements and the answer), with ``LEASH_SOCKET`` set, so a leashd
it cannot reach refuses the call rather than judging it in this process.
A turn is UserPromptSubmit, one to six tool calls (PreToolUse; after an
allowed one, an assistant line with ``message.usage`` appended to its
transcript and PostToolUse; now and then a PermissionRequest, which leashd
holds as an approval), then Stop; a call every 2-10 s (seeded), in bursts at
times. Every call is recorded (``Call``): when it was sent and answered, what
the answer was; a call that raises is recorded as ``error``, never lost.

Failure: none raised; what went wrong is in the records, which the
invariants read.
"""
from __future__ import annotations

import io
import json
import random
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

MODEL = "claude-sonnet-4-5"
# Tokens of one simulated model reply: about $0.006 at the model's price.
USAGE = {"input_tokens": 900, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 200}
PUSH = "git push origin main"  # the [approvals] ask rule's command: held for an operator


@dataclass
class Call:
    host: str
    session: str
    event: str
    tool: str
    subject: str       # the file a Read or Edit names, the Bash command; "" otherwise
    sent: float        # monotonic
    returned: float
    outcome: str       # allow | deny | block | pass | error
    detail: str
    limit: float       # seconds the thin client may take (its deadline) for this event


class Recorder:
    def __init__(self):
        self.calls: list[Call] = []
        self.mutex = threading.Lock()

    def add(self, call: Call) -> None:
        with self.mutex:
            self.calls.append(call)

    def snapshot(self) -> list[Call]:
        with self.mutex:
            return list(self.calls)


def outcome_of(event: str, out: str, err: str, code: int) -> tuple[str, str]:
    """(allow | deny | block | pass, the reason) of a hook's answer."""
    if code == 2:
        return ("deny" if event in ("pre-tool-use", "permission-request") else "block"), err.strip()
    try:
        answer = json.loads(out) if out.strip() else {}
    except ValueError:
        return "error", f"not JSON: {out[:200]}"
    specific = answer.get("hookSpecificOutput") or {}
    if event == "pre-tool-use":
        decision = specific.get("permissionDecision", "allow")
        return ("deny" if decision == "deny" else "allow"), specific.get("permissionDecisionReason", "")
    if event == "permission-request":
        behavior = (specific.get("decision") or {}).get("behavior", "")
        return ("allow" if behavior == "allow" else "deny" if behavior == "deny" else "pass"), \
            (specific.get("decision") or {}).get("message", "")
    if answer.get("decision") == "block" or answer.get("continue") is False:
        return "block", str(answer.get("reason") or answer.get("stopReason") or "")
    return "pass", ""


def hook(event: str, payload: dict, *, home: str, env: dict[str, str]) -> tuple[str, str, int]:
    from leash.core.wire import thinhook

    stdout, stderr = io.StringIO(), io.StringIO()
    code = thinhook.run(event, home=home, stdin=io.BytesIO(json.dumps(payload).encode()), stdout=stdout,
                        stderr=stderr, env=env)
    return stdout.getvalue(), stderr.getvalue(), code


class SimulatedAgent:
    def __init__(self, index: int, host, project: Path, transcripts: Path, recorder: Recorder, *, seed: int,
                 approval_wait: float, pace: tuple[float, float]):
        self.index, self.host, self.recorder = index, host, recorder
        self.rng = random.Random(seed * 1000 + index)
        self.session = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        self.project = project / f"agent-{index:02d}"
        self.project.mkdir(parents=True, exist_ok=True)
        self.transcript = transcripts / f"{self.session}.jsonl"
        self.transcript.touch()
        self.pace = pace
        self.messages = 0
        self.calls = 0  # made so far: a session leash has seen can be stopped by its id
        from leash.core.wire.thinhook import deadline_seconds

        self.env = {"LEASH_SOCKET": host.agent_socket, "HOME": str(self.project), "USER": "root",
                    "PWD": str(self.project), "CLAUDE_PROJECT_DIR": str(self.project),
                    "LEASH_APPROVAL_WAIT": f"{approval_wait:g}"}
        self.limits = {event: deadline_seconds(self.env, event) for event in
                       ("pre-tool-use", "post-tool-use", "stop", "user-prompt-submit", "permission-request")}

    # -- one call ------------------------------------------------------------
    def call(self, event: str, name: str, **fields) -> Call:
        payload = {"session_id": self.session, "transcript_path": str(self.transcript), "cwd": str(self.project),
                   "permission_mode": "bypassPermissions", "hook_event_name": name, **fields}
        tool = fields.get("tool_name", "")
        tool_input = fields.get("tool_input") or {}
        subject = tool_input.get("file_path") or tool_input.get("command") or ""
        sent = time.monotonic()
        try:
            out, err, code = hook(event, payload, home=str(self.host.home), env=self.env)
            outcome, detail = outcome_of(event, out, err, code)
        except Exception as exc:  # noqa: BLE001 - a call that raises is a record, not the run's end
            outcome, detail = "error", f"{type(exc).__name__}: {exc}"
        record = Call(self.host.name, self.session, event, tool, subject, sent, time.monotonic(), outcome,
                      detail[:300], self.limits[event])
        self.recorder.add(record)
        self.calls += 1
        return record

    def tool_call(self) -> tuple[str, dict]:
        roll = self.rng.random()
        if roll < 0.04:
            return "Bash", {"command": PUSH, "description": "push the branch"}
        if roll < 0.5:
            return "Bash", {"command": self.rng.choice(["ls", "git status", "pytest -q tests/unit", "make lint",
                                                         "grep -rn TODO src"]), "description": "run a command"}
        if roll < 0.8:
            return "Read", {"file_path": str(self.project / "src" / f"m{self.rng.randint(0, 9)}.py")}
        where = "locked" if self.rng.random() < 0.3 else "src"
        return "Edit", {"file_path": str(self.project / where / f"m{self.rng.randint(0, 9)}.py"),
                        "old_string": "a", "new_string": "b"}

    def spend(self, usage: dict = USAGE) -> None:
        """One assistant line with usage, as Claude Code writes it after a model reply."""
        self.messages += 1
        line = {"type": "assistant", "sessionId": self.session, "requestId": f"req_soak_{self.session[:8]}_"
                f"{self.messages}", "uuid": str(uuid.uuid4()), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z",
                                                                                          time.gmtime()),
                "message": {"id": f"msg_soak_{self.session[:8]}_{self.messages}", "type": "message",
                            "role": "assistant", "model": MODEL, "content": [{"type": "text", "text": "working"}],
                            "stop_reason": "tool_use", "usage": dict(usage)}}
        with open(self.transcript, "a") as handle:
            handle.write(json.dumps(line) + "\n")

    # -- the loop ------------------------------------------------------------
    def pause(self, done: threading.Event) -> None:
        if self.rng.random() < 0.2:  # a burst: the model asks for calls back to back
            done.wait(self.rng.uniform(0.1, 0.5))
        else:
            done.wait(self.rng.uniform(*self.pace))

    def run(self, done: threading.Event) -> None:
        done.wait(self.rng.uniform(0, self.pace[1]))  # the fleet does not start in step
        while not done.is_set():
            self.call("user-prompt-submit", "UserPromptSubmit", prompt="go on with the task")
            for _ in range(self.rng.randint(1, 6)):
                if done.is_set():
                    break
                tool, tool_input = self.tool_call()
                use_id = f"toolu_{uuid.uuid4().hex[:20]}"
                pre = self.call("pre-tool-use", "PreToolUse", tool_name=tool, tool_input=tool_input,
                                tool_use_id=use_id)
                if pre.outcome == "allow" and self.rng.random() < 0.05:
                    self.call("permission-request", "PermissionRequest", tool_name=tool, tool_input=tool_input,
                              permission_suggestions=[])
                if pre.outcome == "allow":
                    self.spend()
                    self.call("post-tool-use", "PostToolUse", tool_name=tool, tool_input=tool_input,
                              tool_response={"stdout": "ok", "stderr": "", "interrupted": False},
                              tool_use_id=use_id)
                self.pause(done)
            self.call("stop", "Stop", stop_hook_active=False, last_assistant_message="done for now")
            self.pause(done)


def start_agents(agents: list[SimulatedAgent], done: threading.Event) -> list[threading.Thread]:
    threads = [threading.Thread(target=agent.run, args=(done,), name=f"agent-{agent.index}", daemon=True)
               for agent in agents]
    for thread in threads:
        thread.start()
    return threads
