"""``leash setup separated``: the separated profile on one host in one command.

In the separated profile leashd runs as a dedicated user that alone owns the
state home (0700); agents run as other users and reach leash only through the
agent socket, which answers hook verbs and nothing else; operators use the
operator socket. ``setup`` makes it so, each step idempotent:

1. the leash user (a system user, no login shell), made when missing;
2. its home (0700, owned by it) with a ``config.toml`` naming the sockets in
   the run directory, the agent socket's mode and the operators (written only
   when there is none: an existing one is the operator's and is reported);
3. the run directory (0755, owned by the leash user);
4. a systemd unit running ``leash daemon`` as that user (started when systemd
   runs this machine; otherwise the command to start it is printed);
5. Claude Code's managed settings: leash's hooks pinned to the agent socket
   (``leash install --managed --socket``) and ``allowManagedHooksOnly``, so no
   project or user setting can add or replace hooks;
6. a check that each agent user can run the hook entry: the interpreter and
   the entry file are opened as that user, and the first directory on their
   way it cannot enter is named in one line.

The managed hooks pin leashd's uid (``LEASH_DAEMON_UID``, whose socket the
hook then trusts) and the home (``--home``). Setup ends with a self-test
(``core.hook.separatedcheck``): the managed hook run as each agent user
against leashd, a free call allowed and a stopped session's denied.

What it made is recorded (``RECORD_PATH``) so ``undo`` removes exactly that:
the managed hooks, ``allowManagedHooksOnly`` if it set it, the managed
settings file and its folder when they were made here and hold nothing else,
the run folder, the unit, the record's folder, the user if it made it. The
home is kept: its ack log is the audit trail.

System paths can be moved for tests and unusual hosts: ``LEASH_CLAUDE_MANAGED_SETTINGS``
(managed settings), ``LEASH_SYSTEMD_DIR`` (units), ``LEASH_SETUP_RECORD`` (the record).

Failure: anything but root is refused (``SetupError``, one line). A step that
fails stops the run with one line naming it; steps done before it stay done
and recorded, so ``undo`` still undoes them. An agent user who cannot run the
hook entry is reported (the setup is otherwise complete) and the command
exits 1.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

DEFAULT_USER = "leash"
DEFAULT_HOME = "/var/lib/leash"
DEFAULT_RUN_DIR = "/run/leash"
SYSTEMD_DIR_ENV = "LEASH_SYSTEMD_DIR"
DEFAULT_SYSTEMD_DIR = "/etc/systemd/system"
RECORD_ENV = "LEASH_SETUP_RECORD"
DEFAULT_RECORD = "/etc/leash/separated.json"
UNIT_NAME = "leashd.service"
UNIT_MARK = "# written by leash setup separated"
NOLOGIN_SHELLS = ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false")
CHECK_TIMEOUT_SECONDS = 30
# Run as each agent user: the first directory on the way to each path that it
# cannot enter, or the file it cannot open, else nothing.
# Run as each agent user (by a system interpreter it may run): the first
# directory on the way to each path that it cannot enter, or the file it cannot
# run ("x:" paths) or read, else nothing.
ACCESS_PROBE = """
import os, sys
for given in sys.argv[1:]:
    run = given.startswith("x:")
    path = given[2:] if run else given
    current = os.sep
    for part in os.path.abspath(path).split(os.sep)[1:-1]:
        current = os.path.join(current, part)
        if not os.access(current, os.X_OK):
            print("cannot enter " + current); sys.exit(1)
    if not os.access(path, os.X_OK if run else os.R_OK):
        print(("cannot run " if run else "cannot read ") + path); sys.exit(1)
"""
PROBE_INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")


class SetupError(Exception):
    """One line saying what could not be done."""


@dataclass
class Plan:
    """Where the separated profile goes, and who takes part."""
    user: str = DEFAULT_USER
    home: str = DEFAULT_HOME
    run_dir: str = DEFAULT_RUN_DIR
    operators: list[str] = field(default_factory=list)
    agent_users: list[str] = field(default_factory=list)

    @property
    def agent_socket(self) -> str:
        return os.path.join(self.run_dir, "agent.sock")

    @property
    def operator_socket(self) -> str:
        return os.path.join(self.run_dir, "operator.sock")


def record_path() -> str:
    return os.environ.get(RECORD_ENV) or DEFAULT_RECORD


def unit_path() -> str:
    return os.path.join(os.environ.get(SYSTEMD_DIR_ENV) or DEFAULT_SYSTEMD_DIR, UNIT_NAME)


def _require_root() -> None:
    if os.geteuid() != 0:
        raise SetupError("leash setup separated needs root (it makes a user and writes system files); "
                         "run it with sudo")


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SetupError(f"{what} failed: {(done.stderr or done.stdout).strip()[-300:]}")


def _shell() -> str:
    return next((shell for shell in NOLOGIN_SHELLS if os.path.exists(shell)), "/bin/false")


def ensure_user(plan: Plan, record: dict) -> list[str]:
    try:
        pwd.getpwnam(plan.user)
        return [f"user {plan.user}: there already"]
    except KeyError:
        pass
    _run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", plan.home, "--shell", _shell(),
          plan.user], f"useradd {plan.user}")
    record["created_user"] = plan.user
    return [f"user {plan.user}: made (a system user, no login shell)"]


def _config_text(plan: Plan) -> str:
    operators = ", ".join(json.dumps(name) for name in plan.operators)
    return ("# written by leash setup separated: the separated profile's sockets\n"
            "[daemon]\n"
            f"agent_socket = {json.dumps(plan.agent_socket)}\n"
            f"operator_socket = {json.dumps(plan.operator_socket)}\n"
            'agent_socket_mode = "0666"   # agents are other users; what they may send is the hook verb alone\n'
            f"operators = [{operators}]\n")


def ensure_home(plan: Plan, record: dict) -> list[str]:
    entry = pwd.getpwnam(plan.user)
    said = []
    os.makedirs(plan.home, mode=0o700, exist_ok=True)
    os.chown(plan.home, entry.pw_uid, entry.pw_gid)
    os.chmod(plan.home, 0o700)
    config = os.path.join(plan.home, "config.toml")
    if os.path.exists(config):
        said.append(f"{config}: there already (left as it is; it must name {plan.agent_socket} and "
                    f"{plan.operator_socket})")
    else:
        with open(config, "w") as handle:
            handle.write(_config_text(plan))
        os.chown(config, entry.pw_uid, entry.pw_gid)
        os.chmod(config, 0o600)
        said.append(f"{config}: written (sockets in {plan.run_dir}, operators {plan.operators or 'none'})")
    if not os.path.isdir(plan.run_dir):
        record.setdefault("created_dirs", []).append(plan.run_dir)
    os.makedirs(plan.run_dir, mode=0o755, exist_ok=True)
    os.chown(plan.run_dir, entry.pw_uid, entry.pw_gid)
    os.chmod(plan.run_dir, 0o755)
    return [f"{plan.home}: 0700, owned by {plan.user}", *said, f"{plan.run_dir}: 0755, owned by {plan.user}"]


def leash_program() -> list[str]:
    """How the unit starts leash: the ``leash`` beside this interpreter, else this interpreter with ``-m``."""
    beside = os.path.join(os.path.dirname(sys.executable), "leash")
    return [beside] if os.access(beside, os.X_OK) else [sys.executable, "-m", "leash.console.cli"]


def unit_text(plan: Plan) -> str:
    program = " ".join(leash_program())
    return (f"{UNIT_MARK}\n[Unit]\nDescription=leash control daemon (leashd), the separated profile\n\n"
            f"[Service]\nType=simple\nUser={plan.user}\nGroup={plan.user}\nEnvironment=LEASH_HOME={plan.home}\n"
            f"ExecStart={program} daemon\nRestart=on-failure\nRestartSec=1\nKillSignal=SIGTERM\nTimeoutStopSec=30\n"
            f"NoNewPrivileges=yes\nProtectSystem=strict\nProtectHome=read-only\n"
            f"ReadWritePaths={plan.home} {plan.run_dir}\nPrivateTmp=yes\n\n[Install]\nWantedBy=multi-user.target\n")


def systemd_runs() -> bool:
    return os.path.isdir("/run/systemd/system") and shutil.which("systemctl") is not None


def ensure_unit(plan: Plan, record: dict) -> list[str]:
    path = unit_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(unit_text(plan))
    record["unit"] = path
    if systemd_runs():
        _run(["systemctl", "daemon-reload"], "systemctl daemon-reload")
        _run(["systemctl", "enable", "--now", UNIT_NAME], f"systemctl enable --now {UNIT_NAME}")
        return [f"{path}: written; leashd enabled and started"]
    start = f"sudo -u {plan.user} LEASH_HOME={plan.home} {' '.join(leash_program())} daemon"
    return [f"{path}: written (systemd does not run here: start leashd with `{start}`)"]


def ensure_managed_settings(plan: Plan, record: dict) -> list[str]:
    from leash.core.base import claudeversion
    from leash.core.hook import install
    path = install.settings_path(managed=True)
    if not os.path.isdir(os.path.dirname(path)):
        record["created_settings_dir"] = True
    os.makedirs(os.path.dirname(path), exist_ok=True)
    on_failure = claudeversion.supports_on_failure(claudeversion.installed_version())
    # The hook trusts leashd's socket by its owner (LEASH_DAEMON_UID) and names the
    # home (--home): without them every agent's hook refused leashd's own socket.
    leashd_uid = pwd.getpwnam(plan.user).pw_uid
    existed = os.path.exists(path)
    install.install(path, socket=plan.agent_socket, on_failure=on_failure, wait=install.approval_wait(plan.home),
                    daemon_uid=leashd_uid, home=plan.home)
    if not existed:
        record.setdefault("created_files", []).append(path)
    settings = install.read_settings(path)
    if settings.get("allowManagedHooksOnly") is not True:
        settings["allowManagedHooksOnly"] = True
        record["set_managed_only"] = True
        _write_json(path, settings)
    os.chmod(path, 0o644)
    record["managed_settings"] = path
    return [f"{path}: leash's hooks pinned to {plan.agent_socket}, allowManagedHooksOnly"]


def _write_json(path: str, value: dict) -> None:
    from leash.core.base.statefile import write_bytes_atomic

    write_bytes_atomic(path, (json.dumps(value, indent=2) + "\n").encode())


def hook_paths() -> list[str]:
    """The files an agent's hook runs: the interpreter and leash's hook entry."""
    from leash.core.hook.install import hook_runner

    return [word for word in hook_runner() if word.startswith(os.sep)]


def agent_problem(user: str, paths: list[str]) -> str | None:
    """Why ``user`` cannot run the hook (one line naming the directory or file
    in its way), or None when it can. ``paths``: the interpreter, then the files
    it reads; an interpreter that is a link is checked where it leads too."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return f"agent user {user}: no such user"
    python, files = paths[0], paths[1:]
    wanted = ([f"x:{os.path.realpath(python)}"] if os.path.islink(python) else []) + [f"x:{python}"] + files
    prober = next((p for p in PROBE_INTERPRETERS if os.access(p, os.X_OK)), python)
    try:
        done = subprocess.run([prober, "-I", "-c", ACCESS_PROBE, *wanted], capture_output=True, text=True,
                              user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd="/",
                              timeout=CHECK_TIMEOUT_SECONDS, env={"PATH": "/usr/bin:/bin"})
    except PermissionError:
        return f"agent user {user} cannot run {prober}, so the check could not look further"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"agent user {user}: the check could not run ({exc})"
    if done.returncode != 0:
        said = done.stdout.strip() or done.stderr.strip()[-200:] or f"exit {done.returncode}"
        return f"agent user {user} cannot run leash's hook: {said} (install leash where agents can read it)"
    return None


def setup(plan: Plan) -> tuple[list[str], list[str]]:
    """Make the separated profile; (what was done, agent users' problems)."""
    _require_root()
    record = _load_record()
    said: list[str] = []
    try:
        said += ensure_user(plan, record)
        said += ensure_home(plan, record)
        said += ensure_managed_settings(plan, record)
        said += ensure_unit(plan, record)
    finally:
        record.update(user=plan.user, home=plan.home, run_dir=plan.run_dir)
        _save_record(record)
    paths = hook_paths()
    problems = [problem for user in plan.agent_users if (problem := agent_problem(user, paths))]
    able = [user for user in plan.agent_users if not any(p.startswith(f"agent user {user} ") for p in problems)]
    said += [f"agent user {user}: can run leash's hook" for user in able]
    from leash.core.hook.install import settings_path
    from leash.core.hook.separatedcheck import self_test

    passed, failed = self_test(Plan(plan.user, plan.home, plan.run_dir, plan.operators, able),
                               settings_path(managed=True), leash=leash_program())
    return said + passed, problems + failed


def undo() -> list[str]:
    """Remove what ``setup`` made (recorded), keeping the home."""
    _require_root()
    record = _load_record()
    if not record:
        raise SetupError(f"nothing to undo: {record_path()} records no separated profile")
    said = _undo_settings(record) + _undo_unit(record) + _undo_user(record) + _undo_made(record)
    if record.get("home"):
        said.append(f"{record['home']}: kept (its ack log is the audit trail; remove it yourself if you mean to)")
    os.unlink(record_path())
    folder = os.path.dirname(record_path())
    if record.get("created_record_dir") and os.path.isdir(folder) and not os.listdir(folder):
        os.rmdir(folder)
        said.append(f"{folder}: removed")
    return said


def _undo_made(record: dict) -> list[str]:
    """The files and folders setup made that hold nothing of anyone else's now."""
    said = []
    for path in record.get("created_files") or []:
        try:
            with open(path) as handle:
                left = json.load(handle)
        except (OSError, ValueError):
            continue
        if left == {}:  # only leash's were there: nothing of the operator's is lost
            os.unlink(path)
            said.append(f"{path}: removed")
            folder = os.path.dirname(path)
            if record.get("created_settings_dir") and os.path.isdir(folder) and not os.listdir(folder):
                os.rmdir(folder)
                said.append(f"{folder}: removed")
    for path in record.get("created_dirs") or []:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)  # the run folder: sockets and a lock, nothing kept
            said.append(f"{path}: removed")
    return said


def _undo_settings(record: dict) -> list[str]:
    from leash.core.hook import install

    path = record.get("managed_settings")
    if not path or not os.path.exists(path):
        return []
    install.install(path, uninstall=True)
    if record.get("set_managed_only"):
        settings = install.read_settings(path)
        settings.pop("allowManagedHooksOnly", None)
        _write_json(path, settings)
    return [f"{path}: leash's hooks removed" + (", allowManagedHooksOnly removed" if record.get("set_managed_only")
                                                 else "")]


def _undo_unit(record: dict) -> list[str]:
    path = record.get("unit")
    if not path or not os.path.exists(path):
        return []
    with open(path) as handle:
        if not handle.readline().startswith(UNIT_MARK):
            return [f"{path}: not written by leash setup; left as it is"]
    if systemd_runs():
        subprocess.run(["systemctl", "disable", "--now", UNIT_NAME], capture_output=True)
    os.unlink(path)
    return [f"{path}: removed"]


def _undo_user(record: dict) -> list[str]:
    user = record.get("created_user")
    if not user:
        return []
    _run(["userdel", user], f"userdel {user}")
    subprocess.run(["groupdel", user], capture_output=True)  # gone with the user on most systems
    return [f"user {user}: removed"]


def _load_record() -> dict:
    try:
        with open(record_path()) as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _save_record(record: dict) -> None:
    if not os.path.isdir(os.path.dirname(record_path())):
        record["created_record_dir"] = True
    os.makedirs(os.path.dirname(record_path()), exist_ok=True)
    _write_json(record_path(), record)
    os.chmod(record_path(), 0o644)
