"""Three hosts on one PostgreSQL store, as a fleet runs it: three `leash
daemon` processes with LEASH_HOST a, b and c, each with its own home and its
own real tmux server, on one database started for this test (it is stopped
and started again here, so it is not the shared test server).

A stop filed through host a's operator socket denies a hook on host c; a
warrant for `c/agent-1` is worked by c's kennel alone; c's leashd SIGKILLed
mid-interrogation and started again resumes the dog at its recorded deadline;
the database stopped, c's hooks deny once the grace has passed and allow again
when it is back; `leash log verify` holds over every host's lines."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from leash.core.base.clock import parse_iso
from leash.core.base.tmux import Tmux

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, exchange, hook_request, sockets, stop
from ..support.kennel import health_checks, start_agent
from ..support.postgres import Cluster, binaries
from ..support.waiting import wait_for

HOSTS = ("a", "b", "c")
GRACE_SECONDS = 1
FIRST_GATE = 3


@pytest.fixture
def fleet(tmp_path):
    """{host: (home, tmux, env)} and the cluster; daemons are started by the test."""
    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl); .ci/run installs it")
    cluster = Cluster()
    made: dict[str, tuple] = {}
    try:
        for host in HOSTS:
            home = tmp_path / f"home-{host}"
            home.mkdir(mode=0o700)
            (home / "config.toml").write_text(
                f"[warrants]\ntimeouts = [{FIRST_GATE}, 0.5, 0.5]\npoll_seconds = 0.05\n"
                f"[store]\noffline_grace_s = {GRACE_SECONDS}\n")
            socket_path = tmp_path / f"tmux-{host}.sock"
            env = {"LEASH_STORE_URL": cluster.url(), "LEASH_HOST": host, "LEASH_TMUX_SOCKET": str(socket_path)}
            made[host] = (home, Tmux(str(socket_path)), env)
        yield cluster, made
    finally:
        for _, tmux, _ in made.values():
            tmux.kill_server()
        cluster.stop()


def cli(home, env: dict, *args: str) -> subprocess.CompletedProcess:
    merged = dict(os.environ, LEASH_HOME=str(home), **env)
    merged.pop("LEASH_OPERATOR_SOCKET", None)
    return subprocess.run(leash_argv() + list(args), env=merged, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def hook(home, tmux: Tmux, pane: str, session_id: str) -> str:
    """c's hook as the thin client asks: its agent socket; the deny reason or ""."""
    agent, _ = sockets(home)
    payload = {"session_id": session_id, "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "cwd": "/"}
    (reply,) = exchange(agent, hook_request("pre-tool-use", payload,
                                            {"TMUX": f"{tmux.socket},0,0", "TMUX_PANE": pane}))
    out = reply.get("stdout", "")
    return json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if out else ""


def pane_of(tmux: Tmux, name: str) -> str:
    done = subprocess.run(["tmux", "-S", tmux.socket, "display-message", "-p", "-t", f"={name}:", "#{pane_id}"],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.heavy("three leashd processes and their kennels on one PostgreSQL for ~9 s; make test keeps the "
                   "shared store's warrants with one kennel (tests/store/test_postgres_warrants.py)")
def test_three_hosts_on_one_store(fleet, tmp_path):
    cluster, hosts = fleet
    daemons = {host: daemon_process(home, env=env, stderr=subprocess.DEVNULL)
               for host, (home, _, env) in hosts.items()}
    try:
        (home_a, _, env_a), (home_c, tmux_c, env_c) = hosts["a"], hosts["c"]
        start_agent(tmux_c, tmp_path, "agent-1", "silent")
        pane = pane_of(tmux_c, "agent-1")
        assert hook(home_c, tmux_c, pane, "claude-c1") == ""  # registered as c/agent-1

        # A stop filed through host a denies the hook on host c.
        assert cli(home_a, env_a, "stop", "c/agent-1", "--reason", "from a").returncode == 0
        assert wait_for(lambda: "is stopped" in hook(home_c, tmux_c, pane, "claude-c1"), what="c denies")
        assert cli(home_a, env_a, "resume", "c/agent-1").returncode == 0
        assert wait_for(lambda: hook(home_c, tmux_c, pane, "claude-c1") == "", what="c allows again")

        # A warrant for c/agent-1, filed on a, is worked by c's kennel only.
        filed = cli(home_a, env_a, "warrant", "file", "c/agent-1", "--reason", "wedged")
        assert filed.returncode == 0, filed.stderr
        from leash.core.store.postgres import PostgresBackend

        reader = PostgresBackend(cluster.url(), home=tmp_path / "reader", host="c")
        try:
            (warrant,) = reader.warrants.listing().pending or reader.warrants.listing().active

            def dog(condition):
                found = reader.warrants.find(warrant.id)
                return found[1].as_dict() if found and found[0] == "active" and condition(found[1].as_dict()) else None

            before = wait_for(lambda: dog(lambda s: s.get("state") == "interrogating"), what="attempt 1")
            assert before["kennel"]["pid"] == daemons["c"].pid and before["attempt"] == 1

            # c's leashd dies mid-interrogation; the next one resumes the dog at its deadline.
            daemons["c"].send_signal(signal.SIGKILL)
            daemons["c"].wait(timeout=20)
            deadline = parse_iso(before["next_timeout"])
            # restarted well into the first gate, so that a fresh gate would close visibly later
            time.sleep(max(0.0, parse_iso(before["last_message_at"]) + 1.5 - time.time()))
            daemons["c"] = daemon_process(home_c, env=env_c, stderr=subprocess.DEVNULL)
            resumed = wait_for(lambda: dog(lambda s: s.get("attempt") == 2), timeout=20, interval=0.01,
                               what="attempt 2")
            assert resumed["kennel"]["pid"] == daemons["c"].pid and resumed["started_at"] == before["started_at"]
            # the recorded gate, closed before a fresh gate of the next kennel could have closed
            kennel = reader.kennels.alive()
            assert kennel is not None and kennel.pid == daemons["c"].pid
            assert deadline <= parse_iso(resumed["last_message_at"]) < parse_iso(kennel.started_at) + FIRST_GATE
            done = wait_for(lambda: (lambda f: f[1].as_dict() if f and f[0] == "completed" else None)(
                reader.warrants.find(warrant.id)), timeout=30, what="the verdict")
            assert (done["outcome"], done["attempt"]) == ("executed", 3)
            assert health_checks(done["final_screen"]) == 3
            assert not tmux_c.has_session("agent-1")
            log = reader.acklog.read()
            assert {line.source.rpartition("@")[2] for line in log if line.event == "stop_ack"} == {"a"}
        finally:
            reader.close()

        # The database goes away: after the grace, c's hooks deny; back, they allow.
        start_agent(tmux_c, tmp_path, "agent-2", "silent")
        pane_2 = pane_of(tmux_c, "agent-2")
        assert hook(home_c, tmux_c, pane_2, "claude-c2") == ""
        cluster.pause()
        assert wait_for(lambda: "unreachable" in hook(home_c, tmux_c, pane_2, "claude-c2"), timeout=30,
                        interval=0.2, what="c denies while the database is away")
        cluster.resume()
        assert wait_for(lambda: hook(home_c, tmux_c, pane_2, "claude-c2") == "", timeout=30, interval=0.2,
                        what="c allows once the database is back")

        # One chain over every host's lines.
        verified = cli(home_c, env_c, "log", "verify")
        assert verified.returncode == 0 and verified.stdout.startswith("ok:"), verified.stdout + verified.stderr
    finally:
        for proc in daemons.values():
            stop(proc)
