"""Installing and running the real Gemini CLI (npm ``@google/gemini-cli``)
headless against the loopback stand-in in ``gemini_standin``.

``install_gemini(version)`` installs one version (``latest`` is first resolved
to a number with ``npm view``) into ``.cache/gemini-cli/<version>`` inside the
repository, once; parallel callers wait on a lock. When npm or its registry is
out of reach it raises ``GeminiUnavailable`` with one line saying why, which a
test turns into a skip.

``run_gemini(...)`` writes what the CLI needs into the private ``home`` it is
given (never the user's own ``~/.gemini``): the API-key auth type, no sandbox,
no usage statistics or update checks, and ``cwd`` trusted in
``trustedFolders.json``. Settings already in ``home/.gemini/settings.json``
(a test's hooks, say) are kept. It runs ``gemini -p PROMPT --output-format
stream-json --approval-mode yolo`` with stdin from ``/dev/null`` in a closed
environment whose only way out is the stand-in: the API base URL points at it
and so does ``HTTPS_PROXY``, so a stray request is refused there and recorded
(``GeminiStandin.stray``) instead of leaving the machine. The CLI's process
group is killed when it is done or overruns; an overrun raises
``GeminiTimedOut`` carrying what it had printed. (The shell tool starts each
command in a process group of its own, which that kill does not reach: a
scripted command should end by itself.)
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

from tests.support.e2e.jsonlines import json_objects
from tests.support.e2e.npm import npm_error, npm_install

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / ".cache" / "gemini-cli"  # one npm prefix per version below it
PACKAGE = "@google/gemini-cli"
PINNED_VERSION = "0.61.0"
VERSION_ENV = "LEASH_E2E_GEMINI_VERSION"
RUN_TIMEOUT_SECONDS = 120
API_KEY = "standin-key"
# What every run needs in the user settings; merged over what the home already has.
REQUIRED_SETTINGS: dict = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": True}},
    "tools": {"sandbox": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}
HEADLESS_ARGS = ("--output-format", "stream-json", "--approval-mode", "yolo")
# How the CLI words a call a hook refused, and a turn a hook ended, before the hook's reason.
BLOCKED = "Tool execution blocked: "
STOPPED = "Agent execution stopped by hook: "


class GeminiUnavailable(Exception):
    """The Gemini CLI cannot be installed or run here; ``str()`` is one line."""


class GeminiTimedOut(Exception):
    """The CLI overran its time; ``stdout`` and ``stderr`` are what it printed by then."""

    def __init__(self, seconds: float, stdout: str, stderr: str):
        super().__init__(f"gemini ran over {seconds} s; stderr tail: {stderr[-1000:]!r}")
        self.stdout, self.stderr = stdout, stderr


class GeminiRun(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    session_id: str | None

    def events(self) -> list[dict]:
        """The ``stream-json`` events of stdout (lines that are not JSON objects are skipped)."""
        return json_objects(self.stdout)


# ------------------------------------------------------------------ installing
def wanted_version() -> str:
    """The version asked for through ``LEASH_E2E_GEMINI_VERSION``, else the pinned one."""
    return os.environ.get(VERSION_ENV, "").strip() or PINNED_VERSION


def resolve_version(version: str) -> str:
    """``version`` as a number: ``latest`` (or any dist-tag) is asked of ``npm view``."""
    if version and version[0].isdigit():
        return version
    npm = _npm()
    try:
        done = subprocess.run([npm, "view", f"{PACKAGE}@{version}", "version", "--fetch-retries=1",
                               "--fetch-timeout=30000"], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise GeminiUnavailable(f"npm view {PACKAGE}@{version} took over 120 s "
                                "(is the npm registry reachable?)") from None
    words = done.stdout.split()
    if done.returncode != 0 or not words:
        raise GeminiUnavailable(f"npm view {PACKAGE}@{version} failed (is the npm registry reachable?): "
                                f"{npm_error(done.stderr)}")
    return words[-1].strip("'\"")


def install_gemini(version: str = PINNED_VERSION) -> Path:
    """The ``gemini`` executable of ``version``, installed first if it is not yet."""
    number = resolve_version(version)
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        executable = _executable(number)
        if executable.exists() and _package_version(number) == number:
            return executable
        return _install(number)


def _executable(number: str) -> Path:
    return CACHE / number / "node_modules" / ".bin" / "gemini"


def _package_version(number: str) -> str | None:
    """The version in the installed package's package.json (cheaper than running it)."""
    try:
        manifest = json.loads((CACHE / number / "node_modules" / "@google" / "gemini-cli" / "package.json").read_text())
    except (OSError, ValueError):
        return None
    return manifest.get("version") if isinstance(manifest, dict) else None


def installed_version(executable: Path) -> str | None:
    """What ``gemini --version`` says, or None when it does not run."""
    if not executable.exists():
        return None
    # Even --version writes into ~/.gemini (projects.json), so it gets a home of its own.
    with tempfile.TemporaryDirectory(prefix="leash-gemini-version-", ignore_cleanup_errors=True) as home:
        try:
            done = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=60,
                                  stdin=subprocess.DEVNULL, env=_base_env(Path(home)))
        except (OSError, subprocess.TimeoutExpired):
            return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


def _install(number: str) -> Path:
    npm = _npm()
    folder = CACHE / number
    spec = f"{PACKAGE}@{number}"
    failure = npm_install(npm, spec, folder)
    if failure is not None:
        raise GeminiUnavailable(failure)
    executable = _executable(number)
    found = installed_version(executable)
    if found != number:
        raise GeminiUnavailable(f"{spec} installed into {folder} but `gemini --version` says {found!r}")
    return executable


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise GeminiUnavailable("npm is not installed, so the Gemini CLI cannot be installed")
    if shutil.which("node") is None:
        raise GeminiUnavailable("node is not installed, so the Gemini CLI cannot run")
    return npm


# ------------------------------------------------------------------ the home
def _merge(into: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


def _read_json(path: Path) -> dict:
    if not path.exists():
        return {}
    value = json.loads(path.read_text() or "{}")
    if not isinstance(value, dict):
        raise ValueError(f"{path} holds no JSON object")
    return value


def prepare_home(home: Path, cwd: Path) -> None:
    """The user settings and folder trust a headless run against the stand-in needs,
    merged into what ``home/.gemini`` already holds."""
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    settings_path = folder / "settings.json"
    settings = _merge(_read_json(settings_path), json.loads(json.dumps(REQUIRED_SETTINGS)))
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")
    trust_path = folder / "trustedFolders.json"  # {"<absolute path>": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}
    trust = _read_json(trust_path)
    trust[str(Path(cwd).resolve())] = "TRUST_FOLDER"
    trust_path.write_text(json.dumps(trust, indent=2) + "\n")


def _base_env(home: Path) -> dict[str, str]:
    """The environment every CLI process gets: a private home and temp directory."""
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8", "SHELL": "/bin/bash", "TERM": "dumb", "NO_COLOR": "1", "NO_BROWSER": "1",
            "HOME": str(home), "TMPDIR": str(tmp)}


def gemini_env(home: Path, standin_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A closed environment: the private home, the stand-in as API and as proxy."""
    env = _base_env(home)
    env.update(GOOGLE_GEMINI_BASE_URL=standin_url, GEMINI_API_KEY=API_KEY,
               HTTPS_PROXY=standin_url, HTTP_PROXY=standin_url, NO_PROXY="127.0.0.1,localhost")
    env.update(extra or {})
    return env


# ------------------------------------------------------------------ running
def run_gemini(executable: Path | str, prompt: str, *, home: Path, cwd: Path, env: dict[str, str] | None = None,
               standin_url: str, timeout: float = RUN_TIMEOUT_SECONDS,
               args: tuple[str, ...] = HEADLESS_ARGS) -> GeminiRun:
    """One headless ``gemini -p PROMPT`` in ``cwd``; ``env`` is added to the closed
    environment. Returns (returncode, stdout, stderr, session id from the
    ``init`` event or the JSON result, None when there is none)."""
    home, cwd = Path(home), Path(cwd)
    prepare_home(home, cwd)
    argv = [str(executable), "-p", prompt, *args]
    proc = subprocess.Popen(argv, cwd=cwd, env=gemini_env(home, standin_url, env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        raise GeminiTimedOut(timeout, out, err) from None
    finally:
        _kill_group(proc.pid)  # a tool or hook may have left a child behind
    return GeminiRun(proc.returncode, out, err, session_id_of(out))


def session_id_of(stdout: str) -> str | None:
    """The session id in ``stream-json`` (the ``init`` event) or ``json`` output."""
    try:
        whole = json.loads(stdout)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("session_id"), str):
        return whole["session_id"]
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("session_id"), str):
            return event["session_id"]
    return None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
