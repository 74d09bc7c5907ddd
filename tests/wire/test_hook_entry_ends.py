"""The hook entry `leash install` wires (``PYTHON -S -P hookentry.py hook EVENT``)
ends its process as soon as the hook's answer is flushed, without the
interpreter's teardown: through leashd and in process alike. An ``atexit``
handler someone registered is still run. And a call traced with
``LEASH_HOOK_TRACE`` stamps both sides, in order.

The teardown is seen through a ``sitecustomize`` of the test's own holding an
object whose ``__del__`` writes a marker file: the interpreter's teardown
collects it, ``os._exit`` does not.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

from leash.core.views.protocol import StopProtocol

from ..support.thin_hook import BASH, decision

SITECUSTOMIZE = """import atexit, os


class _Teardown:
    def __init__(self, path, create=os.open, close=os.close, flags=os.O_WRONLY | os.O_CREAT):
        self.path, self.create, self.close, self.flags = path, create, close, flags

    def __del__(self):
        if self.path:
            self.close(self.create(self.path, self.flags, 0o600))


_teardown = _Teardown(os.environ.get("EXIT_MARKER", ""))
if os.environ.get("ATEXIT_MARKER"):
    atexit.register(lambda: open(os.environ["ATEXIT_MARKER"], "w").close())
"""


def entry(event: str, payload: dict, env: dict[str, str]) -> subprocess.CompletedProcess:
    from leash.core.hook.install import hook_runner

    return subprocess.run(hook_runner() + ["hook", event], input=json.dumps(payload).encode(), capture_output=True,
                          env=dict(os.environ, **env), timeout=60)


def with_marker(tmp_path) -> tuple[dict[str, str], str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    marker = str(tmp_path / "exited-through-teardown")
    return {"PYTHONPATH": str(site), "EXIT_MARKER": marker}, marker


def test_the_thin_hook_ends_once_its_answer_is_out(daemon, home, tmp_path):
    env, marker = with_marker(tmp_path)
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    denied = entry("pre-tool-use", BASH, env)
    assert denied.returncode == 0 and decision(denied) == "deny" and b"hold on" in denied.stdout
    assert not os.path.exists(marker)
    allowed = entry("pre-tool-use", dict(BASH, session_id="s2"), env)
    assert (allowed.returncode, allowed.stdout) == (0, b"")
    assert not os.path.exists(marker)
    assert sum(" hook " in line for line in daemon.log_stream.lines) == 2  # leashd answered both


def test_the_in_process_hook_ends_once_its_answer_is_out_too(home, tmp_path):
    env, marker = with_marker(tmp_path)
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold on")
    denied = entry("pre-tool-use", BASH, env)
    assert decision(denied) == "deny" and b"hold on" in denied.stdout
    assert not os.path.exists(marker)
    allowed = entry("pre-tool-use", dict(BASH, session_id="s2"), env)
    assert (allowed.returncode, allowed.stdout) == (0, b"")
    assert not os.path.exists(marker)
    from leash.core.store.files import FileBackend

    assert FileBackend(home).sessions.get("s2") is not None  # what it recorded is there


def test_an_atexit_handler_is_still_run(daemon, home, tmp_path):
    env, marker = with_marker(tmp_path)
    ran = str(tmp_path / "atexit-ran")
    done = entry("pre-tool-use", BASH, dict(env, ATEXIT_MARKER=ran))
    assert done.returncode == 0
    assert os.path.exists(ran) and os.path.exists(marker)  # the interpreter's own exit


def test_a_non_hook_call_of_the_entry_is_refused_as_before(tmp_path):
    from leash.core.hook.install import hook_runner

    done = subprocess.run(hook_runner() + ["status"], capture_output=True, timeout=60)
    assert done.returncode == 2 and b"expected `hook EVENT`" in done.stderr


def test_a_traced_call_stamps_the_client_in_order(daemon, home, tmp_path):
    trace = tmp_path / "trace.txt"
    done = entry("pre-tool-use", BASH, {"LEASH_HOOK_TRACE": str(trace)})
    assert done.returncode == 0
    [line] = trace.read_text().splitlines()
    words = line.split()
    assert words[0] == "client" and words[1].isdigit()
    names, stamps = words[2::2], [int(w) for w in words[3::2]]
    assert names == ["entered", "imported", "read", "connected", "vouched", "sent", "replied", "written"]
    assert stamps == sorted(stamps)


def test_the_trace_file_is_never_forwarded_to_leashd():
    from leash.core.wire.thinhook import forwarded_env

    assert forwarded_env({"LEASH_HOOK_TRACE": "/tmp/t", "LEASH_ENTITY": "billing"}) == {"LEASH_ENTITY": "billing"}


def test_leashd_stamps_its_side_when_started_traced(home, tmp_path, monkeypatch):
    from ..support.daemon import start_daemon

    trace = tmp_path / "daemon-trace.txt"
    monkeypatch.setenv("LEASH_HOOK_TRACE", str(trace))
    running = start_daemon(home, line_deadline=0.5)
    try:
        monkeypatch.delenv("LEASH_HOOK_TRACE")
        done = entry("pre-tool-use", BASH, {})
        assert done.returncode == 0
        give_up = time.monotonic() + 10
        while not trace.exists() and time.monotonic() < give_up:  # written after the reply is sent
            time.sleep(0.01)
    finally:
        running.close()
    [line] = trace.read_text().splitlines()
    words = line.split()
    assert words[0] == "daemon" and words[1].isdigit()
    names, stamps = words[2::2], [int(w) for w in words[3::2]]
    assert names == ["accepted", "peer", "request", "learned", "judged"]
    assert stamps == sorted(stamps)
