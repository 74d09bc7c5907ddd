"""leashd's two sockets, newline-delimited JSON: each verb, refusals by socket
and by uid, malformed, oversized and unfinished lines, ``subscribe``.

The daemon runs in-process on the test's home (real Unix sockets, real
threads); clients are raw sockets, or real processes for another uid."""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest

from leash.core.state.acklog import AckLog
from leash.core.views.protocol import StopProtocol
from leash.core.wire.lines import OPERATOR_LINE_LIMIT_BYTES

from ..support.daemon import connect, exchange, hook_request, read_replies, sockets, start_daemon, still_waiting

BASH_LS = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": "ls"}, "cwd": "/"}


def closed(conn: socket.socket) -> bool:
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:  # closed with our bytes unread: the kernel resets
        return True


def refusals(home) -> list[dict]:
    return AckLog(home).read(event="daemon_refused").entries


# ---------------------------------------------------------------- verbs
def test_ping_names_the_peer_as_the_kernel_sees_it(daemon, home):
    (reply,) = exchange(sockets(home)[1], {"verb": "ping", "user": "someone-else"})
    assert reply["ok"] is True and reply["pid"] == os.getpid() and reply["home"] == str(home)
    assert reply["you"] == f"{pwd.getpwuid(os.getuid()).pw_name}@{daemon.host}"


def test_hook_allows_and_denies_as_the_in_process_hook(daemon, home):
    agent = sockets(home)[0]
    (allowed,) = exchange(agent, hook_request("pre-tool-use", BASH_LS))
    assert allowed == {"stdout": "", "stderr": "", "code": 0}
    StopProtocol(home).acknowledge_stop("ops", "s1", "hold")
    (denied,) = exchange(agent, hook_request("pre-tool-use", BASH_LS))
    decision = json.loads(denied["stdout"])["hookSpecificOutput"]
    assert denied["code"] == 0 and decision["permissionDecision"] == "deny" and "hold" in decision[
        "permissionDecisionReason"]


def test_hook_judges_the_fleet_stop_for_every_session(daemon, home):
    StopProtocol(home).stop_fleet("maintenance", "ops")
    (denied,) = exchange(sockets(home)[0], hook_request("pre-tool-use", dict(BASH_LS, session_id="never-seen")))
    assert "maintenance" in json.loads(denied["stdout"])["hookSpecificOutput"]["permissionDecisionReason"]


def test_one_connection_may_ask_several_times(daemon, home):
    request = json.dumps(hook_request("pre-tool-use", BASH_LS)).encode() + b"\n"
    with connect(sockets(home)[0]) as conn:
        conn.sendall(request * 3)
        assert [r["code"] for r in read_replies(conn, 3)] == [0, 0, 0]


def test_an_unknown_hook_event_exits_1_as_in_process(daemon, home):
    (reply,) = exchange(sockets(home)[0], hook_request("no-such-event", BASH_LS))
    assert reply["code"] == 1 and "unknown hook" in reply["stderr"]


def test_bytes_that_are_not_utf8_reach_the_hook_as_they_were(daemon, home):
    from leash.core.wire.thinhook import hook_request as thin_request

    raw = json.dumps(BASH_LS).encode().replace(b'"ls"', b'"ls \xff"')
    line = thin_request("pre-tool-use", raw, None, env={})
    (reply,) = exchange(sockets(home)[0], line)
    assert reply["code"] == 1 and "not JSON" in reply["stderr"]  # what the in-process hook says of it


# ---------------------------------------------------------------- refusals
def test_an_operator_verb_on_the_agent_socket_is_refused_and_logged(daemon, home):
    agent = sockets(home)[0]
    (reply,) = exchange(agent, {"verb": "cli", "argv": ["resume", "--all"]})
    assert reply["error"].startswith("refused: the agent socket answers only hook")
    (line,) = refusals(home)
    assert line["socket"] == "agent" and line["verb"] == "cli" and line["source"].endswith(f"@{daemon.host}")
    # a refusal repeated at once is answered again but not logged again
    assert "refused" in exchange(agent, {"verb": "ping"})[0]["error"]
    assert "refused" in exchange(agent, {"verb": "cli", "argv": ["status"]})[0]["error"]
    assert len(refusals(home)) == 2  # ping is another verb: one line; cli again: none


# An interpreter another user may run (the project's may sit in root's home).
OTHERS_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.geteuid() != 0 or not os.access(OTHERS_PYTHON, os.X_OK),
                    reason="needs root (to act as another uid) and /usr/bin/python3")
def test_an_agent_uid_on_the_operator_socket_is_refused(home):
    # sockets where another user can reach them, as /run/leash would be
    directory = tempfile.mkdtemp(prefix="leash-run-")
    try:
        os.chmod(directory, 0o711)
        agent, operator = os.path.join(directory, "agent.sock"), os.path.join(directory, "operator.sock")
        running = start_daemon(home, agent_socket=agent, operator_socket=operator)
        try:
            os.chmod(operator, 0o666)  # a mode too open: the peer check still holds
            script = ("import json, socket, sys; c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); "
                      "c.sendall(json.dumps({'verb': 'cli', 'argv': ['resume', '--all']}).encode() + b'\\n'); "
                      "print(c.makefile().readline(), end='')")
            done = subprocess.run([OTHERS_PYTHON, "-c", script, operator], user="nobody", capture_output=True,
                                  text=True, timeout=20, cwd="/")
        finally:
            running.close()
    finally:
        shutil.rmtree(directory)
    assert "refused: user nobody" in json.loads(done.stdout)["error"], done.stderr
    (line,) = refusals(home)
    assert line["socket"] == "operator" and line["source"].startswith("nobody@") and line["peer_uid"] == \
        pwd.getpwnam("nobody").pw_uid
    # its request was read before the refusal: the line says what it asked, and
    # a client that writes then reads is never cut off mid-write (EPIPE)
    assert line["verb"] == "cli"


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("line, problem", [
    (b"not json\n", "one JSON object"), (b"[1, 2]\n", "one JSON object"), (b'{"verb": 7}\n', "string \"verb\""),
    (b'{"verb": "nope"}\n', "unknown verb"), (b'{"verb": "cli", "argv": "status"}\n', "argv"),
])
def test_a_malformed_request_gets_an_error_and_the_daemon_goes_on(daemon, home, line, problem):
    operator = sockets(home)[1]
    (reply,) = exchange(operator, line)
    assert problem in reply["error"]
    assert exchange(operator, {"verb": "ping"})[0]["ok"]


def test_a_malformed_hook_request_is_an_error_reply(daemon, home):
    (reply,) = exchange(sockets(home)[0], {"verb": "hook", "event": 3})
    assert "event" in reply["error"]


def test_an_oversized_line_is_cut_off_without_harm_to_others(daemon, home):
    operator = sockets(home)[1]
    with connect(operator) as flood:
        sent = 0
        try:
            while sent <= OPERATOR_LINE_LIMIT_BYTES + 65536:
                flood.sendall(b"x" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert exchange(operator, {"verb": "ping"})[0]["ok"]  # served while the flood is refused
        reply = read_replies(flood, 1)
        assert reply and "over" in reply[0]["error"]
        assert closed(flood)  # and its connection is closed


def test_a_hundred_megabytes_on_the_agent_socket_are_refused(daemon, home):
    agent = sockets(home)[0]
    chunk = b"y" * (1 << 20)
    with connect(agent, timeout=30) as flood:
        try:
            for _ in range(100):
                flood.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert exchange(agent, hook_request("pre-tool-use", BASH_LS))[0]["code"] == 0
    assert exchange(sockets(home)[1], {"verb": "ping"})[0]["ok"]


def test_a_client_that_never_finishes_its_line_is_cut_off(daemon, home):
    operator = sockets(home)[1]
    # The daemon fixture's line deadline is 0.5 s; the reply's own read gives up (socket.timeout) long after it.
    with connect(operator, timeout=10) as slow:
        slow.sendall(b'{"verb": "pi')
        assert exchange(operator, {"verb": "ping"})[0]["ok"]  # others are answered meanwhile
        (reply,) = read_replies(slow, 1)
        assert "not finished within 0.5 s" in reply["error"]
        assert closed(slow)


def test_many_concurrent_hooks_each_get_their_answer(daemon, home):
    StopProtocol(home).acknowledge_stop("ops", "s7", "hold")
    agent = sockets(home)[0]
    answers: dict[int, dict] = {}

    def ask(n):
        payload = dict(BASH_LS, session_id=f"s{n}")
        answers[n] = exchange(agent, hook_request("pre-tool-use", payload))[0]

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(answers) == list(range(16))
    assert [n for n, reply in answers.items() if reply["stdout"]] == [7]


# ---------------------------------------------------------------- subscribe
def test_subscribe_streams_the_changes_of_the_stores(daemon, home):
    protocol = StopProtocol(home)
    with connect(sockets(home)[1]) as stream:
        stream.sendall(b'{"verb": "subscribe"}\n')
        assert read_replies(stream, 1) == [{"subscribed": True}]
        seen: set = set()
        stream.settimeout(1.0)
        wanted = {"stops", "acklog"}
        for attempt in range(20):  # the watcher starts with the first subscriber: write until it sees
            protocol.acknowledge_stop("ops", f"s{attempt}", "hold")
            try:
                while not wanted <= seen:
                    seen.add(read_replies(stream, 1)[0]["change"]["store"])
                break
            except TimeoutError:
                continue
        assert "stops" in seen and "acklog" in seen


def test_a_second_daemon_on_the_home_refuses(daemon, home):
    from leash.core.daemon.service import Daemon, DaemonRunning

    with pytest.raises(DaemonRunning, match="already runs"):
        Daemon(home, kennel=False).start()


def test_closing_removes_the_sockets(home):
    running = start_daemon(home)
    agent, operator = sockets(home)
    assert os.path.exists(agent) and os.path.exists(operator)
    running.close()
    assert not os.path.exists(agent) and not os.path.exists(operator)
    with pytest.raises(OSError):
        connect(operator).close()


def test_a_stale_socket_is_replaced(home):
    from leash.core.base.home import ensure_home, private_dir

    private_dir(os.path.join(ensure_home(home), "run"))
    for path in sockets(home):  # files left by a killed daemon: nothing listens on them
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(path)
        stale.close()
    running = start_daemon(home)
    try:
        assert exchange(sockets(home)[1], {"verb": "ping"})[0]["ok"]
    finally:
        running.close()


@pytest.mark.parametrize("tamper", ["delete", "replace"])
def test_a_halt_holds_when_halts_db_changes_under_the_daemons_kept_connection(daemon, home, tamper):
    """The daemon keeps its halts.db connection open between calls; a file
    deleted or replaced under it is opened again and rebuilt from the log."""
    import sqlite3

    from leash.core.state.halts import api

    api.record_halt({"session_token": "s9", "halt_type": "security", "severity": "critical",
                     "description": "credentials in a commit"}, home=home)
    request = hook_request("pre-tool-use", dict(BASH_LS, session_id="s9", tool_input={"command": "rm -rf build"}))
    agent = sockets(home)[0]

    def decision() -> str:
        (reply,) = exchange(agent, request)
        return json.loads(reply["stdout"])["hookSpecificOutput"]["permissionDecision"] if reply["stdout"] else "allow"

    assert decision() == "deny"
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(home / f"halts.db{suffix}")
    if tamper == "replace":
        sqlite3.connect(home / "halts.db").close()  # an empty database where the real one was
    assert decision() == "deny"


def test_agents_filling_their_socket_never_keep_an_operator_out(home):
    """Every agent connection slot taken by clients that say nothing: the
    operator socket still answers at once (each socket counts its own)."""
    running = start_daemon(home, max_connections=4, line_deadline=30)
    held = [connect(sockets(home)[0]) for _ in range(6)]  # 4 served and silent, 2 waiting in the backlog
    try:
        # answered while every agent connection is still held (a ping queued behind them: socket.timeout)
        assert exchange(sockets(home)[1], {"verb": "ping"}, timeout=5)[0]["ok"]
        assert all(still_waiting(conn) for conn in held)
    finally:
        for conn in held:
            conn.close()
        running.close()
