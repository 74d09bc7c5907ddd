"""Running the real Claude Code CLI headless against the loopback stand-in.

``ensure_claude()`` installs the npm package ``@anthropic-ai/claude-code`` (the
pinned version; ``LEASH_E2E_CLAUDE_VERSION`` names another, or ``latest``,
which ``npm view`` resolves to a number) into ``.cache/claude-code/<version>``
inside the repository once, each version in a folder of its own, and says in
one line why it cannot when npm or its registry is out of reach.
``run_claude()`` starts ``claude -p`` in a process group of its own with a
private HOME, config and temp directory, and kills the whole group when it
overruns or when it is done (a hook or tool may have left a child behind).
``wire()`` writes leash's hooks into a project's ``.claude/settings.json``:
through ``leash install --project`` when that exists, else the same wiring
written here.

The package's postinstall copies the platform's native binary to
``bin/claude.exe``; where npm does not run install scripts that copy is a stub,
so ``_candidates`` looks first for the native binary itself, in the platform
package (``node_modules/@anthropic-ai/claude-code-linux-x64/claude``).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Iterator

from tests.support.e2e.npm import NPM_TIMEOUT_SECONDS, npm_error, npm_install
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache" / "claude-code"  # one folder per version below it
PACKAGE = "@anthropic-ai/claude-code"
PINNED_VERSION = "2.1.197"
VERSION_ENV = "LEASH_E2E_CLAUDE_VERSION"
LEASH = str(Path(sys.executable).with_name("leash"))
RUN_TIMEOUT_SECONDS = 90
MARK = "# leash-hook"
# Today's hook verbs, as ``leash install`` wires them (the fallback below).
FALLBACK_HOOKS = (("PreToolUse", "pre-tool-use", True, True),
                  ("PostToolUse", "post-tool-use", False, True),
                  ("PostToolUseFailure", "post-tool-use", False, True),
                  ("Stop", "stop", False, False))
HOOK_TIMEOUT_SECONDS = 30
OWN_DEADLINE_SECONDS = 25
SOCKETS = ("agent.sock", "operator.sock")  # leashd's, in its home's run/


class ClaudeUnavailable(Exception):
    """Claude Code cannot be installed or run here; ``str()`` is one line."""


def wanted_version() -> str:
    """The version asked for, as given: a number or ``latest``."""
    return os.environ.get(VERSION_ENV, PINNED_VERSION).strip() or PINNED_VERSION


@cache
def resolved_version(wanted: str) -> str:
    """``wanted`` as a version number: ``latest`` (any dist-tag) is asked of the
    npm registry, once a process."""
    if wanted[:1].isdigit():
        return wanted
    npm = shutil.which("npm")
    if npm is None:
        raise ClaudeUnavailable(f"npm is not installed, so {PACKAGE}@{wanted} cannot be resolved")
    try:
        done = subprocess.run([npm, "view", f"{PACKAGE}@{wanted}", "version", "--fetch-retries=1",
                               "--fetch-timeout=30000"], capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise ClaudeUnavailable(f"npm view {PACKAGE}@{wanted} took over {NPM_TIMEOUT_SECONDS} s "
                                "(is the npm registry reachable?)") from None
    words = done.stdout.split()
    if done.returncode != 0 or not words:
        raise ClaudeUnavailable(f"npm view {PACKAGE}@{wanted} failed (is the npm registry reachable?): "
                                f"{npm_error(done.stderr)}")
    return words[-1].strip("'\"")  # several versions match a range: the newest is last


def cache_dir(version: str) -> Path:
    """Where ``version`` (a number) is installed: an npm prefix of its own."""
    return CACHE / version


def _candidates(folder: Path) -> list[list[str]]:
    """The ways to run the installed Claude Code, best first. The platform's
    native binary comes first: it is there whether or not the postinstall ran,
    and it is named ``claude``, as tmux shows an operator's agent
    (``pane_current_command``); the postinstall's copy is ``claude.exe``."""
    package = folder / "node_modules" / "@anthropic-ai"
    native = sorted(package.glob("claude-code-*/claude"))
    return ([[str(path)] for path in native] + [[str(package / "claude-code" / "bin" / "claude.exe")]]
            + [["node", str(package / "claude-code" / "cli-wrapper.cjs")]])


def _version_of(argv: list[str], folder: Path) -> str | None:
    try:
        done = subprocess.run(argv + ["--version"], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, DISABLE_AUTOUPDATER="1"), cwd=folder)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return words[0] if done.returncode == 0 and words else None


def installed(version: str | None = None) -> tuple[list[str], str] | None:
    """(argv, version) of the Claude Code installed for ``version`` (default:
    the one wanted, resolved), or None."""
    folder = cache_dir(version or resolved_version(wanted_version()))
    if not folder.is_dir():
        return None
    for argv in _candidates(folder):
        found = _version_of(argv, folder) if Path(argv[-1]).exists() else None
        if found:
            return argv, found
    return None


def ensure_claude() -> tuple[list[str], str]:
    """(argv that runs ``claude``, its version), installing it first if needed;
    one process installs at a time (parallel test workers wait for it)."""
    import fcntl

    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_claude()


def _ensure_claude() -> tuple[list[str], str]:
    version = resolved_version(wanted_version())
    found = installed(version)
    if found and found[1] == version:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise ClaudeUnavailable("npm is not installed, so Claude Code cannot be installed")
    folder = cache_dir(version)
    spec = f"{PACKAGE}@{version}"
    failure = npm_install(npm, spec, folder)
    if failure is not None:
        raise ClaudeUnavailable(failure)
    found = installed(version)
    if found is None:
        raise ClaudeUnavailable(f"{spec} installed into {folder} but no claude binary runs")
    return found


@dataclass
class Run:
    code: int
    out: str
    err: str
    timed_out: bool

    def json(self) -> dict:
        """The ``--output-format json`` result (the last JSON line of stdout)."""
        for line in reversed(self.out.strip().splitlines()):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
        raise AssertionError(f"no JSON result from claude: {self!r}")

    def __repr__(self) -> str:
        return f"Run(code={self.code}, timed_out={self.timed_out}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"


def claude_env(base: Path, api_url: str, **extra: str) -> dict[str, str]:
    """A closed environment: a private home and temp, the stand-in as the API."""
    home, tmp = base / "claude-home", base / "claude-tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "USER": os.environ.get("USER", "root"),
           "LANG": "C.UTF-8", "SHELL": "/bin/bash", "TERM": "dumb",
           "CLAUDE_CONFIG_DIR": str(home / ".claude"), "TMPDIR": str(tmp), "CLAUDE_CODE_TMPDIR": str(tmp),
           "ANTHROPIC_BASE_URL": api_url, "ANTHROPIC_API_KEY": "test",
           "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
           # bypassPermissions is refused to root outside a sandbox; this run is one
           "IS_SANDBOX": "1"}
    env.update(extra)
    return env


def run_claude(claude: list[str], project: Path, prompt: str, env: dict[str, str], *,
               args: tuple[str, ...] = ("--permission-mode", "bypassPermissions"),
               timeout: float = RUN_TIMEOUT_SECONDS) -> Run:
    """``claude -p PROMPT --output-format json`` in ``project``; the process group
    is killed afterwards whatever happened."""
    argv = claude + ["-p", prompt, "--output-format", "json", *args]
    proc = subprocess.Popen(argv, cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    finally:
        _kill_group(proc.pid)
    return Run(proc.returncode, out, err, timed_out)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ----------------------------------------------------------------- wiring
def has_install() -> bool:
    try:
        done = subprocess.run([LEASH, "install", "--help"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def fallback_command(leash: str, verb: str, fail_closed: bool) -> str:
    run = f"{shlex.quote(leash)} hook {verb}"
    if fail_closed:
        run = f"{shlex.quote(leash)} --deadline {OWN_DEADLINE_SECONDS} hook {verb} || exit 2"
    return f"{run} {MARK}"


def fallback_settings(leash: str) -> dict:
    hooks: dict[str, list] = {}
    for event, verb, fail_closed, matcher in FALLBACK_HOOKS:
        group: dict = {"hooks": [{"type": "command", "command": fallback_command(leash, verb, fail_closed),
                                  "timeout": HOOK_TIMEOUT_SECONDS}]}
        if matcher:
            group = {"matcher": "*", **group}
        hooks.setdefault(event, []).append(group)
    return {"hooks": hooks}


def settings_file(project: Path) -> Path:
    return project / ".claude" / "settings.json"


def wire(project: Path, *, env: dict[str, str] | None = None) -> dict:
    """leash's hooks in ``project/.claude/settings.json``; returns the settings.
    ``LEASH_E2E_WIRING=fallback`` writes only the three first hooks, as before
    ``leash install`` existed."""
    path = settings_file(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.environ.get("LEASH_E2E_WIRING") != "fallback" and has_install():
        # The Claude Code under test decides what leash install writes (onFailure from 2.1.295 on).
        found = installed()
        environment = dict(env if env is not None else os.environ)
        if found is not None and len(found[0]) == 1:
            environment["LEASH_CLAUDE"] = found[0][0]
        done = subprocess.run([LEASH, "install", "--project", str(project)], capture_output=True, text=True,
                              timeout=60, env=environment)
        if done.returncode != 0:
            raise AssertionError(f"leash install --project failed: {done.stderr.strip()}")
    else:
        path.write_text(json.dumps(fallback_settings(LEASH), indent=2) + "\n")
    return json.loads(path.read_text())


def retarget(project: Path, leash: str) -> None:
    """Point every leash hook of the project at another program: the ``leash``
    or the interpreter on the hook entry that ``leash install`` wired."""
    path = settings_file(project)
    text = path.read_text()
    settings = json.loads(text)
    for groups in settings.get("hooks", {}).values():
        for group in groups:
            for hook in group.get("hooks", []):
                if hook.get("command", "").rstrip().endswith(MARK):
                    for wired in (LEASH, sys.executable):
                        hook["command"] = hook["command"].replace(shlex.quote(wired), shlex.quote(leash))
    path.write_text(json.dumps(settings, indent=2) + "\n")


@dataclass
class Leashd:
    """A running ``leash daemon``: its process and what it wrote on stderr."""
    proc: subprocess.Popen
    stderr: IO[bytes]

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")


@contextmanager
def leashd(home: Path, env: dict[str, str] | None = None) -> Iterator[Leashd]:
    """``leash daemon --no-kennel`` on ``home`` (run with ``env``, else this
    process's), from when both its sockets are there to the end of the block;
    then SIGTERM (SIGKILL if it is not gone in 20 s). Its stderr goes to a
    temporary file, which no long run can fill as it could a pipe."""
    run = home / "run"
    stderr = tempfile.TemporaryFile()
    proc = subprocess.Popen([LEASH, "--home", str(home), "daemon", "--no-kennel"], env=env,
                            stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    daemon = Leashd(proc, stderr)
    try:
        wait_for(lambda: proc.poll() is not None or all((run / name).exists() for name in SOCKETS), 20,
                 interval=0.05, what="leash daemon's sockets")
        assert proc.poll() is None, f"leash daemon did not start: {daemon.log()[-2000:]}"
        yield daemon
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
