"""``leash install``, ``leash store``, ``leash setup`` and ``leash notify``:
wiring the agents' hooks, copying a home into the shared store, setting up a
separated deployment, and testing the notification routes.

None of them acts on the state the other commands change, so none opens the
backend; each reads the home (``Context.home``) and calls the core. A step
the core refuses is a ``Refused`` (exit 1).
"""
from __future__ import annotations

import os
import sys
from argparse import Namespace
from typing import NamedTuple

from leash.console.cli.context import Context
from leash.console.cli.output import out
from leash.console.errors import Refused, UsageError
from leash.core.base.text import printable


def cmd_install(context: Context, args: Namespace) -> int:
    agent = getattr(args, "agent", "claude")
    if getattr(args, "sandbox", False) and agent != "claude":
        raise UsageError(f"--sandbox wires Claude Code's sandbox only; leash does not wire {agent}'s "
                         "(docs/leashd-and-profiles.md)")
    if agent != "claude":
        return _install_agent(context, args)
    if getattr(args, "sandbox", False) and (args.check or args.uninstall):
        raise UsageError("--sandbox goes with an install (--check and --uninstall follow what install recorded)")
    if args.check:
        return _check_claude(context, args)
    return _install_claude(context, args)


def _said(findings: list[tuple[str, str, str]]) -> int:
    """Each finding on a line; exit 3 when one fails."""
    for level, subject, message in findings:
        out(f"{level:<5} {subject}: {message}")
    return 3 if any(level == "fail" for level, _, _ in findings) else 0


def _check_claude(context: Context, args: Namespace) -> int:
    """``leash install --check``: the settings, the record, onFailure and the home."""
    from leash.core.hook import installcheck, wiring

    findings = (installcheck.check(project=args.project)
                + wiring.check_findings(project=args.project, home=context.home) + _on_failure_findings(args.project)
                + wiring.home_findings(context.home, project=args.project))
    if any(level == "fail" for level, _, _ in findings):  # "wired with timeouts" is not all right then
        findings = [finding for finding in findings if finding[0] != "ok"]
    return _said(findings)


class _ClaudeWiring(NamedTuple):
    """What one ``leash install`` writes for Claude Code, worked out before anything is written."""
    path: str
    version: tuple[int, ...] | None
    on_failure: bool
    http_port: int | None
    daemon_uid: int | None
    runner: list[str]
    wait: float
    pinned: str | None
    sandbox: dict | None


def _claude_wiring(context: Context, args: Namespace) -> _ClaudeWiring:
    from leash.core.base import claudeversion
    from leash.core.hook import install

    path = install.settings_path(project=args.project, user=args.user, managed=args.managed)
    version = claudeversion.installed_version() if not args.uninstall else None
    on_failure = claudeversion.supports_on_failure(version)
    return _ClaudeWiring(
        path, version, on_failure, _http_port(context, args, on_failure),
        install.daemon_uid_of(args.socket) if args.socket else None, install.hook_runner(),
        install.approval_wait(context.home),  # the approvals' timeout the deadlines must outlast
        # The hooks use this home whatever the agents' environment says (the operator and they meet in it).
        None if args.uninstall else os.path.abspath(context.home),
        _sandbox_entries(context, args, path, version))


def _install_claude(context: Context, args: Namespace) -> int:
    from leash.core.hook import install, wiringrecord

    plan = _claude_wiring(context, args)
    # The record first: a ConfigChange that sees the new settings compares them with it.
    try:
        previous = wiringrecord.write_record(context.home, plan.path, plan.runner, socket=args.socket,
                                       daemon_uid=plan.daemon_uid, on_failure=plan.on_failure,
                                       uninstall=args.uninstall, wait=plan.wait, pinned_home=plan.pinned,
                                       http_port=plan.http_port, sandbox=None if args.uninstall else plan.sandbox)
    except OSError as exc:
        raise Refused(f"cannot record the wiring in {wiringrecord.record_path(context.home)}: {exc.strerror}; "
                      "nothing changed") from None
    try:
        changed = install.install(plan.path, plan.runner, uninstall=args.uninstall, socket=args.socket,
                                  on_failure=plan.on_failure, daemon_uid=plan.daemon_uid, wait=plan.wait,
                                  home=plan.pinned, http_port=plan.http_port)
        if plan.sandbox:
            from leash.core.hook.sandboxwiring import install_sandbox

            changed = install_sandbox(plan.path, plan.sandbox, uninstall=args.uninstall) or changed
    except (install.SettingsError, PermissionError) as exc:
        wiringrecord.restore_record(context.home, previous)
        if isinstance(exc, PermissionError):
            raise Refused(f"{plan.path}: {exc.strerror} (managed settings need root)") from None
        raise Refused(str(exc)) from None
    verb = "removed leash's hooks from" if args.uninstall else "wired leash's hooks into"
    out(f"{verb} {plan.path}" if changed else f"{plan.path} already as wanted; nothing changed")
    if not args.uninstall:
        _say_installed(context, args, plan)
    return 0


def _say_installed(context: Context, args: Namespace, plan: _ClaudeWiring) -> None:
    """How a call is refused when its hook cannot run, whom the hooks trust, and where it is recorded."""
    from leash.core.base import claudeversion
    from leash.core.hook import wiringrecord

    how = ('onFailure "block" and `|| exit 2`' if plan.on_failure else
           "`|| exit 2` (onFailure needs Claude Code 2.1.295 or later)")
    if plan.http_port:
        how = f'onFailure "block" (HTTP hooks to leashd on 127.0.0.1:{plan.http_port}, no process per call)'
    out(f"Claude Code {claudeversion.shown(plan.version)}: a gating hook that cannot run blocks through {how}")
    if args.socket:
        out(f"leashd's user pinned: uid {plan.daemon_uid} (the owner of {args.socket})"
            if plan.daemon_uid is not None
            else "leashd runs as this user: each hook checks that the home's daemon holds its lock")
    out(f"the hooks use the home {plan.pinned} (pinned in each command, whatever the agents' LEASH_HOME)")
    if plan.sandbox:
        _say_sandbox(plan.sandbox, plan.version)
    out(f"recorded in {wiringrecord.record_path(context.home)}: `leash install --check` compares with it")


def _sandbox_entries(context: Context, args: Namespace, path: str, version: tuple[int, ...] | None) -> dict | None:
    """What ``--sandbox`` writes into ``path`` (an install without it keeps
    the sandbox an earlier ``--sandbox`` wrote there); on ``--uninstall``,
    what an earlier ``--sandbox`` wrote (taken out again); None: nothing."""
    from leash.core.hook import sandboxwiring, wiringrecord

    earlier = sandboxwiring.recorded(wiringrecord.read_record(context.home)).get(os.path.abspath(path))
    if args.uninstall:
        return earlier
    if not args.sandbox and earlier is None:
        return None
    from leash.core.base.config import ConfigError, load_config

    try:
        daemon = load_config(context.home)["daemon"]
    except (ConfigError, OSError):
        daemon = {}
    sockets = (args.socket, daemon.get("agent_socket"), daemon.get("operator_socket"))
    project = None if (args.user or args.managed) else (args.project or ".")
    return sandboxwiring.wanted(context.home, project=project, sockets=sockets, version=version)


def _say_sandbox(sandbox: dict, version: tuple[int, ...] | None) -> None:
    from leash.core.base import claudeversion
    from leash.core.hook import sandboxwiring

    out("sandbox: the agent's Bash commands run in Claude Code's sandbox: they cannot read or write the home, its "
        "sockets, tmux's sockets or the CLIs' settings, and no command may ask to leave it "
        "(allowUnsandboxedCommands false)")
    if "failIfUnavailable" not in sandbox:
        out(f"Claude Code {claudeversion.shown(version)} has no sandbox.failIfUnavailable (2.1.83 and later): "
            "where the sandbox cannot start it runs commands unsandboxed")
    missing = sandboxwiring.missing_programs()
    if missing:
        out(f"warning: {' and '.join(missing)} not found: Claude Code's sandbox cannot start here "
            "(Debian: apt-get install bubblewrap socat)")


def _http_port(context: Context, args: Namespace, on_failure: bool) -> int | None:
    """The port of leashd's HTTP listener to wire, for ``--transport http``
    (None: command hooks). A Claude Code without ``onFailure`` keeps command
    hooks: its failed HTTP hook would let the call through."""
    if getattr(args, "transport", "command") != "http" or args.uninstall:
        return None
    if not on_failure:
        out("Claude Code without onFailure (before 2.1.295) would let a call through when leashd's listener "
            "fails: wiring command hooks instead")
        return None
    from leash.core.base.config import load_config

    port = load_config(context.home)["daemon"]["http_port"]
    if not port:
        raise Refused(f"--transport http needs [daemon] http_port in {os.path.join(context.home, 'config.toml')} "
                      "(a free loopback port, such as 7431), and `leash daemon` restarted to listen on it")
    return int(port)


def _install_agent(context: Context, args: Namespace) -> int:
    """``leash install --agent gemini|codex``: that CLI's wiring written, or checked (exit 3 on a failure)."""
    from leash.core.hook import codexwiring, geminiwiring, install

    gemini = args.agent == "gemini"
    user = args.user or (not gemini and not args.project and not args.managed)  # Codex's hooks are the user's
    if args.check:
        return _said(geminiwiring.check_gemini(project=args.project or ".") if gemini
                     else codexwiring.check_codex(project=args.project))
    wait = install.approval_wait(context.home)
    try:
        if gemini:
            path = geminiwiring.gemini_settings_path(project=args.project, user=args.user, managed=args.managed)
            changed = geminiwiring.install_gemini(path, project=None if (user or args.managed) else args.project or ".",
                                                  uninstall=args.uninstall, wait=wait, socket=args.socket,
                                                  home=context.home)
        else:
            path = codexwiring.codex_config_path(project=args.project, user=user, managed=args.managed)
            changed = codexwiring.install_codex(path, managed=args.managed, uninstall=args.uninstall, wait=wait,
                                                socket=args.socket, home=context.home)
    except PermissionError as exc:
        raise Refused(f"{exc.filename}: {exc.strerror} (system settings need root)") from None
    except (install.SettingsError, OSError) as exc:
        raise Refused(str(exc)) from None
    verb = "removed leash's hooks from" if args.uninstall else "wired leash's hooks into"
    for name in changed:
        out(f"{verb} {name}" if name == path else f"updated {name}")
    if not changed:
        out(f"{path} already as wanted; nothing changed")
    if not args.uninstall:
        out(f"`leash install --agent {args.agent} --check` verifies it")
    return 0


def _on_failure_findings(project: str | None) -> list[tuple[str, str, str]]:
    """A warning when the installed Claude Code knows ``onFailure`` and a
    gating leash hook does not use it (``leash install`` adds it)."""
    from leash.core.base import claudeversion
    from leash.core.hook import install, installcheck

    version = claudeversion.installed_version()
    if not claudeversion.supports_on_failure(version):
        return []
    lacking = sorted({event for event, hook in installcheck.wired_hooks(project=project)
                      if install.VERBS_BY_EVENT[event].fail_closed
                      and hook.get("onFailure") != install.ON_FAILURE_BLOCK})
    if not lacking:
        return []
    return [("warn", "onFailure", f"Claude Code {claudeversion.shown(version)} supports onFailure \"block\" but "
                                  f"{', '.join(lacking)} lack it (run leash install again)")]


def cmd_store(context: Context, args: Namespace) -> int:
    from leash.core.base.config import store_url_problem
    from leash.core.base.home import resolve_home
    from leash.core.store.copy import CopyRefused, copy_home
    from leash.core.store.select import host_name, password

    problem = store_url_problem(args.target)
    if problem is not None and not problem.startswith("holds a password"):  # given on a command line: allowed
        raise UsageError(f"--to {problem}")
    source = resolve_home(args.source)
    try:
        report = copy_home(source, args.target, password=password(source), host=host_name(source))
    except CopyRefused as exc:
        raise Refused(str(exc)) from None
    for line in report.said():
        out(line)
    out(f"copied {source} into the shared store: set [store] url (or LEASH_STORE_URL) to use it")
    return 0


def cmd_setup(context: Context, args: Namespace) -> int:
    """``leash setup separated``: each step a line; exit 1 when an agent user cannot run the hook."""
    from leash.core.hook import separated

    try:
        if args.undo:
            for line in separated.undo():
                out(line)
            return 0
        operators = args.operators if args.operators is not None else \
            [name for name in (os.environ.get("SUDO_USER", ""),) if name and name != "root"]
        plan = separated.Plan(user=args.user, home=args.state_home, run_dir=args.run_dir, operators=operators,
                              agent_users=args.agent_users)
        done, problems = separated.setup(plan)
    except separated.SetupError as exc:
        raise Refused(str(exc)) from None
    for line in done:
        out(line)
    for line in problems:
        sys.stderr.write(f"leash: {printable(line)}\n")
    return 1 if problems else 0


def cmd_notify(context: Context, args: Namespace) -> int:
    """``leash notify test``: each route's answer to a test message; exit 1 when any failed."""
    from leash.core.notify.runner import probe
    from leash.core.store.select import host_name

    results = probe(context.home, number=args.route, host=host_name(context.home))
    if not results:
        raise Refused("config.toml has no [[notify.route]] table: nothing to test")
    for route, problem in results:
        out(f"route {route.number} ({route.label}): {'ok' if problem is None else f'failed: {problem}'}")
    return 1 if any(problem is not None for _, problem in results) else 0
