"""What every agent CLI's hook commands and settings files share
(``leash install --agent gemini|codex``).

A gating hook's command ends so that any failure of leash's own — a crash,
its own deadline, an unreachable leashd — is a refusal in the CLI's form,
because Gemini CLI and Codex CLI both let the call run on exit 1, on exit 2
with nothing on stderr, and on their own timeout::

    PYTHON -S -P hookentry.py --deadline 25 --home H hook codex-pre-tool-use \\
        || { s=$?; [ $s -eq 2 ] || echo "leash: …" >&2; exit 2; } # leash-hook

Every write is atomic and keeps the file's mode.
"""
from __future__ import annotations

import json
import os
import shlex

from leash.core.base.statefile import write_bytes_atomic
from leash.core.hook.hooktimes import deadlines, pinned_wait
from leash.core.hook.install import MARK
from leash.core.wire.hookio import DEADLINE_FLAG


def agent_command(runner: list[str], spec, *, wait: float | None = None,
                  socket: str | None = None, home: str | None = None) -> str:
    """The shell command of ``spec``'s hook; a gating one refuses on any failure.
    ``home`` pins the state home in the command: Gemini CLI hands a hook only
    an allowlist of the environment when ``GITHUB_SHA`` is set, and an agent's
    environment is the agent's to change. A gating hook's own deadline is
    the entry's ``--deadline``."""
    gating = spec.refusal is not None
    words = list(runner) + ([DEADLINE_FLAG, deadlines(spec.verb, wait)[0]] if gating else [])
    if home:
        words += ["--home", home]
    run = f"{shlex.join(words)} hook {spec.verb}"
    run = f"{pinned_wait(spec.verb, wait)}{run}"
    if socket:
        from leash.core.base.wellknown import AGENT_SOCKET_ENV

        run = f"{AGENT_SOCKET_ENV}={shlex.quote(socket)} {run}"
    if gating:
        refused = f"leash: hook {spec.verb} could not run (exit $s): the call is refused"
        run = f'{run} || {{ s=$?; [ $s -eq 2 ] || echo "{refused}" >&2; exit 2; }}'
    return f"{run} {MARK}"


def hook_seconds(spec, wait: float | None) -> int:
    return deadlines(spec.verb, wait)[1]


def program_findings(subject: str, hooks: list[dict]) -> list[tuple[str, str, str]]:
    """A hook whose interpreter or entry file is gone can only fail (which refuses, but every call)."""
    found = []
    for hook in hooks:
        words = shlex.split(hook.get("command", "").split(" || ")[0], comments=True)
        for word in words:
            if word.endswith(("hookentry.py", "/python", "/python3")) and os.path.isabs(word) \
                    and not os.path.exists(word):
                found.append(("fail", subject, f"runs {word}, which is missing: run `leash install` again"))
    return found


def table(value: object) -> dict:
    """``value`` when it is a JSON object or TOML table, else an empty one."""
    return value if isinstance(value, dict) else {}


def write_json(path: str, data: dict) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n")


def write_text(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    write_bytes_atomic(path, text.encode())
    os.chmod(path, mode)
