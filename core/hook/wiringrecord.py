"""The install record, ``<home>/wiring.json``: what ``leash install`` wrote.

It holds the home it was written in (``home``) and, per settings file install
wrote, the runner (interpreter and hook entry), the ``timeout`` program, the
pinned home (``home``: the state home its hook commands name with ``--home``),
the pinned socket and daemon uid,
``onFailure`` and the approvals' wait (``[approvals] timeout_s``, which sets
the deadlines of the events an approval may hold; ``--check`` fails when the
config now says another); fingerprints (resolved path and SHA-256) of every interpreter,
hook entry and ``timeout`` it named; and the SHA-256 of every file of leash's
``core`` package (the code every hook runs). ``--check`` compares them with
the files as they are now: a venv interpreter relinked to ``/bin/true`` or an
edited hook entry is a failure. A file the record does not name may be wired
as any recorded file is; without a record, as this leash's own
``install.hook_runner()`` would wire it (and ``--check`` warns).

Failure: a record that cannot be read or is of another version reads as
none (``read_record``: None); writing one is atomic, and ``restore_record``
puts it back as it was when the settings could not be written after it. In
the single-user profile the record is as writable by the agent as the files
it vouches for: it makes a change after install evident, not impossible.
"""
from __future__ import annotations

import json
import os

from leash.core.hook import install

RECORD_NAME = "wiring.json"
RECORD_VERSION = 1
HASH_CHUNK_BYTES = 1 << 20


def record_path(home: str) -> str:
    return os.path.join(home, RECORD_NAME)


def read_record(home: str) -> dict | None:
    """The install record, or None when there is none or it cannot be read."""
    try:
        with open(record_path(home), "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == RECORD_VERSION else None


def write_record(home: str, settings: str, runner: list[str], *, socket: str | None, daemon_uid: int | None,
                 on_failure: bool, uninstall: bool = False, wait: float | None = None,
                 pinned_home: str | None = None, http_port: int | None = None,
                 sandbox: dict | None = None) -> bytes | None:
    """Record what ``install`` writes into ``settings`` (or, ``uninstall``,
    that it writes nothing there any more), with fresh fingerprints;
    ``sandbox``: the entries ``leash install --sandbox`` writes there
    (``core.hook.sandboxwiring``). Returns
    the record as it was (None: there was none), for ``restore_record``."""
    from leash.core.base.home import ensure_home
    from leash.core.base.statefile import write_bytes_atomic

    home = ensure_home(home)
    try:
        with open(record_path(home), "rb") as handle:
            before: bytes | None = handle.read()
    except OSError:
        before = None
    previous = read_record(home) or {}
    files = dict(previous.get("files") or {})
    if uninstall:
        files.pop(os.path.abspath(settings), None)
    else:
        files[os.path.abspath(settings)] = {"runner": list(runner), "timeout": "", "socket": socket or "",
                                            "daemon_uid": daemon_uid, "on_failure": bool(on_failure),
                                            "approval_wait": install.approval_wait(None) if wait is None else wait,
                                            "home": pinned_home or "", "status_line": status_line_wired(settings),
                                            "http_port": int(http_port or 0)}
        if sandbox:
            files[os.path.abspath(settings)]["sandbox"] = sandbox
    # Programs other installs recorded keep the fingerprints they had then:
    # installing here must not bless a file that changed there since.
    before_prints = previous.get("fingerprints")
    kept: dict = before_prints if isinstance(before_prints, dict) else {}
    programs = [runner[0]] + [word for word in runner[1:] if word.endswith(".py")]
    record = {"version": RECORD_VERSION, "home": os.path.abspath(home), "files": files,
              "fingerprints": {**kept, **fingerprints(*programs)},
              "code_root": code_root(), "code": code_hashes()}
    write_bytes_atomic(record_path(home), (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return before


def status_line_wired(settings: str) -> bool:
    """Whether ``install`` wires leash's status line into the file ``settings`` as it is."""
    from leash.core.hook.statuswiring import wired

    try:
        return wired(install.read_settings(settings))
    except install.SettingsError:
        return False


def restore_record(home: str, before: bytes | None) -> None:
    """Put the record back as ``write_record`` found it (the settings could not be written)."""
    from leash.core.base.statefile import write_bytes_atomic

    if before is not None:
        write_bytes_atomic(record_path(home), before)
        return
    try:
        os.unlink(record_path(home))
    except FileNotFoundError:
        pass


def sha256_of(path: str) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprints(*programs: str) -> dict[str, dict[str, str]]:
    """path -> its resolved path and the SHA-256 of what that is ("" when unreadable)."""
    found = {}
    for program in programs:
        real = os.path.realpath(program)
        try:
            digest = sha256_of(real)
        except OSError:
            digest = ""
        found[program] = {"real": real, "sha256": digest}
    return found


def code_root() -> str:
    """leash's ``core`` package folder (this file is ``core/hook/wiringrecord.py``)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_hashes() -> dict[str, str]:
    """core/...py (relative to the package) -> SHA-256, for every file of it."""
    root = code_root()
    hashes = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                try:
                    hashes[os.path.relpath(path, os.path.dirname(root))] = sha256_of(path)
                except OSError:
                    continue
    return hashes
