"""Is leash's wiring what ``leash install`` wrote? For ConfigChange (a
settings file changed: block any difference) and ``leash install --check``
(report every difference, and files changed under the wiring).

What is compared, per settings file:
* every leash hook (``# leash-hook``): its event is one leash wires, once; its
  matcher group, ``command``, ``timeout`` and ``onFailure`` are exactly what
  ``install`` writes (a hook with more keys, such as ``async``, differs), for
  the interpreter, hook entry and ``timeout`` program install recorded, and
  the socket and ``onFailure`` that file was installed with; a file that holds
  some of leash's hooks holds all of them; a file install wired that holds
  none lost them;
* its ``statusLine``: leash's (``# leash-statusline``) runs the recorded
  interpreter and hook entry with the pinned home and socket, as ``install``
  writes it around the user's command it holds; a file install wrote it into
  (``status_line`` in the record) still has it;
* its ``sandbox``, where ``leash install --sandbox`` wrote one for a file
  Claude Code reads with it: nothing leash wrote gone, nothing that switches
  it off or reopens it (``core.hook.sandboxwiring``);
* its ``env``: Claude Code hands a settings file's ``env`` to hook processes,
  so a name the hook command's resolution or leash's hook reads may not be set
  there at all (``ENV_NAMES``, ``ENV_PREFIXES``): ``PATH``, the shells'
  start-up and function variables, the loader's ``LD_*``, the interpreter's
  ``PYTHON*``, leash's ``LEASH_*``, and what the hook forwards to leashd
  (``HOME``, ``USER``, ``TMUX``...). Other names (``ANTHROPIC_*``, proxies)
  are the user's.

The install record (``<home>/wiring.json``: ``core.hook.wiringrecord``) says
what ``install`` wrote per settings file and fingerprints the programs and
code its hooks run; ``--check`` compares them with the files as they are now.
A file the record does not name may be wired as any recorded file is; without
a record, as this leash's own ``install.hook_runner()`` would wire it (and
``--check`` warns).

Failure: an unreadable settings file or record is a finding, never an
exception; ``differences`` never raises. In the single-user profile the record
is as writable by the agent as the files it vouches for (the gate refuses tool
calls that write into the home; ``leash install`` run again records whatever
is there then): it makes a change after install evident, not impossible.
"""
from __future__ import annotations

import json
import os
import shlex

from leash.core.hook import install, wiringrecord

# Settings ``env`` names the hook command's resolution or leash's hook reads.
ENV_NAMES = frozenset({
    "PATH", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "IFS", "CDPATH", "GLOBIGNORE", "PS4", "SHELL",
    "GCONV_PATH", "HOME", "USER", "LOGNAME", "PWD", "TMUX", "TMUX_PANE", "TMUX_TMPDIR",
})
ENV_PREFIXES = ("LEASH_", "PYTHON", "LD_", "BASH_FUNC_", "CLAUDE_CODE_SHELL")
SHOWN_FILES = 3  # changed files named in one finding


# ------------------------------------------------------------------ expected wiring
class Option:
    """One way ``install`` wires a file: the runner, the ``timeout`` program
    (empty: none, the entry's own ``--deadline``; a path for files installed
    so before), the pinned home, socket and daemon uid, ``onFailure``, the
    approvals' wait and whether it wrote leash's status line."""

    __slots__ = ("runner", "timeout", "socket", "daemon_uid", "on_failure", "wait", "home", "status_line", "http_port")

    def __init__(self, runner: list[str], timeout: str, socket: str = "", daemon_uid: int | None = None,
                 on_failure: bool = False, wait: float | None = None, home: str = "", status_line: bool = False,
                 http_port: int = 0):
        self.runner, self.timeout, self.socket, self.home = runner, timeout, socket, home
        self.http_port = http_port
        self.status_line = status_line
        self.daemon_uid, self.on_failure = daemon_uid, on_failure
        self.wait = install.approval_wait(None) if wait is None else wait

    @classmethod
    def recorded(cls, entry: object) -> Option | None:
        if not isinstance(entry, dict) or not isinstance(entry.get("runner"), list) or not entry["runner"]:
            return None
        uid = entry.get("daemon_uid")
        wait = entry.get("approval_wait")
        port = entry.get("http_port")
        # No "timeout" at all: a record from before it named one, whose commands ran under the system's.
        timeout = entry.get("timeout")
        return cls([str(word) for word in entry["runner"]],
                   install.timeout_program() if timeout is None else str(timeout),
                   str(entry.get("socket") or ""), uid if isinstance(uid, int) else None,
                   bool(entry.get("on_failure")), wait if isinstance(wait, (int, float)) else None,
                   str(entry.get("home") or ""), entry.get("status_line") is True,
                   port if isinstance(port, int) and not isinstance(port, bool) else 0)


class Expectation:
    """The ways each settings file may be wired: as ``install`` recorded it."""

    def __init__(self, record: dict | None, *, wait: float | None = None):
        """``wait``: the approvals' wait a file install never recorded is wired for (default 300)."""
        from leash.core.hook.sandboxwiring import recorded

        self.wait = wait
        self.sandboxes = recorded(record)  # settings file -> the sandbox entries install wrote there
        files = record.get("files") if record else None
        self.files = {path: option for path, option in
                      ((path, Option.recorded(entry)) for path, entry in (files.items() if isinstance(files, dict)
                                                                         else ()))
                      if option is not None}

    def options_for(self, path: str) -> list[Option]:
        """The options ``path`` may be wired with: its own as installed; for a
        file install never wrote, any installed file's (none recorded: this
        leash's runner, with or without onFailure)."""
        own = self.files.get(os.path.abspath(path))
        if own is not None:
            return [own]
        if self.files:
            return list(self.files.values())
        runner = install.hook_runner()
        return [Option(runner, "", wait=self.wait), Option(runner, "", on_failure=True, wait=self.wait)]

    def installed(self, path: str) -> bool:
        return os.path.abspath(path) in self.files

    @staticmethod
    def group(spec, option: Option) -> dict:
        entry = install.hook_entry(option.runner, spec, socket=option.socket or None, daemon_uid=option.daemon_uid,
                                   on_failure=option.on_failure, timeout=option.timeout or None, wait=option.wait,
                                   home=option.home or None, http_port=option.http_port or None)
        return install.hook_group(spec, entry)


def leash_groups(data: dict) -> list[tuple[str, dict, dict]]:
    """(event, group, hook) for every leash hook of a settings object."""
    found = []
    hooks = data.get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for hook in entries if isinstance(entries, list) else []:
                if install.is_leash_hook(hook):
                    found.append((event, group, hook))
    return found


def differences(path: str, data: dict, expect: Expectation) -> list[str]:
    """What in the settings object ``data`` (of the file ``path``) is not as
    ``leash install`` writes it; [] when nothing is."""
    from leash.core.hook.sandboxwiring import differences as sandbox_differences

    problems = (env_problems(data) + status_line_differences(path, data, expect)
                + sandbox_differences(path, data, expect.sandboxes))
    found = leash_groups(data)
    if not found:
        if expect.installed(path):
            problems.append("leash's hooks, which leash install wrote here, are gone")
        return problems
    candidates = expect.options_for(path)
    best: list[str] | None = None
    for options in candidates:  # the file matches one way of installing, or it is told against the closest
        told = _hook_differences(found, expect, options)
        if best is None or len(told) < len(best):
            best = told
    return problems + (best or [])


def status_line_differences(path: str, data: dict, expect: Expectation) -> list[str]:
    """What in the file's ``statusLine`` is not as ``leash install`` writes it:
    leash's gone from a file install wrote it into, or its command not one
    install writes (``core.hook.statuswiring``)."""
    from leash.core.hook import statuswiring

    entry = data.get(statuswiring.KEY)
    if not isinstance(entry, dict) or not statuswiring.is_leash_status(entry):
        own = expect.files.get(os.path.abspath(path))
        return ["statusLine: leash's status line, which leash install wrote here, is gone"] \
            if own is not None and own.status_line else []
    command = entry["command"]
    held = statuswiring.chained_of(command)
    if held is None:
        return ["statusLine: leash's command no longer names the user's command as leash install writes it"]
    wanted = [statuswiring.status_command(option.runner, home=option.home or None, socket=option.socket or None,
                                          daemon_uid=option.daemon_uid, user_command=held[0], inherited=held[1])
              for option in expect.options_for(path)]
    if command in wanted:
        return []
    return [f"statusLine: {_command_difference(command, wanted[0])}"]


def _hook_differences(found: list[tuple[str, dict, dict]], expect: Expectation, options: Option) -> list[str]:
    problems = []
    seen: dict[str, int] = {}
    for event, group, hook in found:
        spec = install.VERBS_BY_EVENT.get(event)
        if spec is None:
            problems.append(f"{event}: a leash hook under an event leash does not wire")
            continue
        seen[event] = seen.get(event, 0) + 1
        wanted = expect.group(spec, options)
        problems.extend(f"{event}: {problem}" for problem in _entry_differences(hook, wanted["hooks"][0]))
        meta = {key: value for key, value in group.items() if key != "hooks"}
        wanted_meta = {key: value for key, value in wanted.items() if key != "hooks"}
        if meta != wanted_meta:
            problems.append(f"{event}: matcher {json.dumps(meta.get('matcher'))}, where leash install writes "
                            f"{json.dumps(wanted_meta.get('matcher'))}")
    for spec in install.HOOKS:
        count = seen.get(spec.event, 0)
        if count != 1:
            problems.append(f"{spec.event}: {count} leash hooks, where leash install writes one")
    return problems


def _entry_differences(hook: dict, wanted: dict) -> list[str]:
    problems = []
    command, expected = hook.get("command"), wanted.get("command")
    if command != expected and isinstance(expected, str):
        problems.append(_command_difference(str(command), expected))
    for key in sorted((set(hook) | set(wanted)) - ({"command"} if isinstance(expected, str) else set())):
        if hook.get(key) != wanted.get(key):
            problems.append(f"{key} is {json.dumps(hook.get(key))}, where leash install writes "
                            f"{json.dumps(wanted.get(key))}")
    return problems


def _command_difference(command: str, expected: str) -> str:
    """One line: the first word where the command departs from install's."""
    try:
        words, wanted = shlex.split(command), shlex.split(expected)
    except ValueError:
        return "the command is not one shell command line leash install writes"
    program = next((word for word in words if "=" not in word.split("/")[0]), "")
    if program and not os.path.isabs(program):
        return f"stale hook: runs `{program}` found through PATH (leash install writes absolute paths; run it again)"
    for index, word in enumerate(wanted):
        got = words[index] if index < len(words) else "(nothing)"
        if got != word:
            return f"the command has `{got}` where leash install writes `{word}`"
    return "the command has more than leash install writes: " + shlex.join(words[len(wanted):])[:200]


def env_problems(data: dict) -> list[str]:
    """The ``env`` names leash's hook must not be handed."""
    env = data.get("env")
    if not isinstance(env, dict):
        return []
    named = sorted(name for name in env if isinstance(name, str) and
                   (name in ENV_NAMES or name.startswith(ENV_PREFIXES)))
    return [f'env sets {name}, which the hook command or leash\'s hook reads (a settings "env" reaches every '
            "hook process)" for name in named]


def changed_file_problem(path: str, *, home: str) -> str:
    """Why the settings file ``path``, as it is now, differs from leash's
    wiring ("" when it does not, or cannot be read: Claude Code cannot either)."""
    try:
        data = install.read_settings(path)
    except install.SettingsError:
        return ""
    found = differences(path, data, Expectation(wiringrecord.read_record(home), wait=install.approval_wait(home)))
    if not found:
        return ""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return found[0] + more


# ------------------------------------------------------------------ leash install --check
def check_findings(*, project: str | None, home: str) -> list[tuple[str, str, str]]:
    """(level, subject, message): every settings layer's differences from
    leash's wiring, and every file the wiring runs that changed since install."""
    record = wiringrecord.read_record(home)
    findings: list[tuple[str, str, str]] = []
    if record is None:
        findings.append(("warn", "install record", f"none in {wiringrecord.record_path(home)}: compared with this "
                                                   "leash's own interpreter and hook entry; run leash install to "
                                                   "record them"))
    wait = install.approval_wait(home)
    expect = Expectation(record, wait=wait)
    findings.extend(wait_findings(record, wait))
    for path in install.settings_layers(project=project):
        try:
            data = install.read_settings(path)
        except install.SettingsError:
            continue  # installcheck.check reports it
        findings.extend(("fail", path, problem) for problem in differences(path, data, expect))
    if record is not None:
        findings.extend(fingerprint_findings(record))
    return findings


def wait_findings(record: dict | None, wait: float) -> list[tuple[str, str, str]]:
    """A settings file installed for another ``[approvals] timeout_s`` than
    the config's now: its hooks would end an approval before its timeout."""
    files = record.get("files") if record else None
    findings = []
    for path, entry in (files.items() if isinstance(files, dict) else ()):
        recorded = entry.get("approval_wait") if isinstance(entry, dict) else None
        if isinstance(recorded, (int, float)) and recorded != wait:
            findings.append(("fail", path, f"installed for [approvals] timeout_s = {recorded:g}, the config now says "
                                           f"{wait:g}: run leash install again (the hooks' deadlines follow it)"))
    return findings


def fingerprint_findings(record: dict) -> list[tuple[str, str, str]]:
    """The interpreter (and the ``timeout`` an older install ran under) and leash's code as they are now, against
    the install record."""
    findings: list[tuple[str, str, str]] = []
    recorded = record.get("fingerprints")
    for program, then in (recorded.items() if isinstance(recorded, dict) else ()):
        now = wiringrecord.fingerprints(program)[program]
        if not isinstance(then, dict):
            continue
        if now["real"] != then.get("real"):
            findings.append(("fail", program, f"now resolves to {now['real']}, not to {then.get('real')} as "
                                              "leash install found it (replaced or relinked)"))
        elif now["sha256"] != then.get("sha256"):
            findings.append(("fail", program, f"{now['real']} changed since leash install (its SHA-256 differs)"))
    recorded_code = record.get("code")
    then_code: dict = recorded_code if isinstance(recorded_code, dict) else {}
    if record.get("code_root") != wiringrecord.code_root():
        findings.append(("warn", "leash's code", f"installed from {record.get('code_root')}, checked by the leash in "
                                                 f"{wiringrecord.code_root()}: its files are not compared"))
        return findings
    now_code = wiringrecord.code_hashes()
    changed = sorted(name for name in set(then_code) | set(now_code) if then_code.get(name) != now_code.get(name))
    if changed:
        shown = ", ".join(changed[:SHOWN_FILES]) + (f" and {len(changed) - SHOWN_FILES} more"
                                                    if len(changed) > SHOWN_FILES else "")
        findings.append(("fail", "leash's code", f"changed since leash install: {shown} (added, removed or edited; "
                                                 "run leash install again once they are leash's own)"))
    return findings


def home_findings(home: str, *, project: str | None = None) -> list[tuple[str, str, str]]:
    """(level, subject, message): the home the wired hooks use against
    ``home``, the one this leash uses. A hook that pins another home is a
    failure (the operator's stops and the agents' hooks would never meet); one
    that pins none uses the agent's ``$LEASH_HOME`` or ``~/.leash``: a warning
    when that default is not ``home`` (``leash install`` pins it). The install
    record (``wiring.json``) names the home it was written for: a record found
    in another home (copied, moved) is a warning."""
    from leash.core.base.home import DEFAULT_HOME

    here = os.path.realpath(home)
    findings: list[tuple[str, str, str]] = []
    for path in install.settings_layers(project=project):
        try:
            data = install.read_settings(path)
        except install.SettingsError:
            continue
        commands = [hook.get("command", "") for groups in (data.get("hooks") or {}).values()
                    for group in (groups if isinstance(groups, list) else [])
                    for hook in ((group.get("hooks") if isinstance(group, dict) else None) or [])
                    if install.is_leash_hook(hook)]
        if not commands:
            continue
        homes = sorted({pinned for pinned in map(install.pinned_home, commands) if pinned})
        others = [pinned for pinned in homes if os.path.realpath(pinned) != here]
        if others:
            findings.append(("fail", install.HOME_MISMATCH,
                             f"{path}: the hooks use the home {others[0]}, this leash uses {home}: the agents never "
                             f"see its stops (use --home {others[0]} or LEASH_HOME={others[0]}, or run leash "
                             "install from this home)"))
        elif any(install.pinned_home(command) is None and not install.pinned_socket(command) for command in commands):
            default = os.path.abspath(os.path.expanduser(DEFAULT_HOME))
            if os.path.realpath(default) != here:
                findings.append(("warn", install.HOME_UNPINNED,
                                 f"{path}: the hooks pin no home, so agents use their $LEASH_HOME or {default}; this "
                                 f"leash uses {home} (leash install pins it)"))
        elif homes:
            findings.append(("ok", "hooks' home", f"{path}: the hooks use {home}, as this leash does"))
    record = wiringrecord.read_record(home)
    recorded = record.get("home") if record else None
    if isinstance(recorded, str) and recorded and os.path.realpath(recorded) != here:
        findings.append(("warn", install.HOME_MISMATCH, f"the install record in {home} was written for the home "
                                                        f"{recorded} (copied or moved?): run leash install again"))
    return findings
