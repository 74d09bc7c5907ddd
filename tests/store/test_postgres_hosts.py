"""Many hosts on one PostgreSQL store: each host's tmux sessions are
``HOST/NAME``; a bare name given to a stop or a lock means that name on every
host, a qualified one that host's only; a rename on any host escapes nothing.
Each host is a backend with its own ``LEASH_HOST`` name and its own real tmux
server (a private socket), as two machines would be."""
from __future__ import annotations

import json
import subprocess

import pytest

from leash.core.hook.hooks import pre_tool_use
from leash.core.store.postgres import PostgresBackend

from ..support.tmux_sessions import rename_session, start_session


@pytest.fixture
def hosts(postgres_cluster, tmp_path, home):
    """Hosts a and c: (backend, tmux socket) each, on one database."""
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    made = {}
    for name in ("a", "c"):
        folder = tmp_path / f"host-{name}"
        folder.mkdir()
        made[name] = (PostgresBackend(url, home=folder / "home", host=name), folder / "tmux.sock")
    yield made
    for backend, socket in made.values():
        backend.close()
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)


def hook(backend, socket, pane: str, session_id: str) -> str:
    payload = json.dumps({"session_id": session_id, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": "/"}).encode()
    out, _, code = pre_tool_use(payload, home=backend.home, backend=backend,
                                env={"TMUX": f"{socket},0,0", "TMUX_PANE": pane})
    assert code == 0
    return json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if out else ""


def test_sessions_are_registered_as_host_slash_name(hosts):
    backend, socket = hosts["a"]
    pane = start_session(socket, "agent-1")
    assert hook(backend, socket, pane, "claude-a1") == ""
    record = hosts["c"][0].sessions.get("claude-a1")  # seen from the other host
    assert (record.tmux_session, record.tmux_pane, record.host) == ("a/agent-1", f"a/{pane}", "a")
    assert record.tmux_session_id.startswith("a/$")
    assert hook(backend, socket, "", "claude-a2") == ""  # no tmux pane at all: still a's
    assert hosts["c"][0].sessions.get("claude-a2").host == "a"


def test_a_bare_name_stops_that_name_on_every_host_a_qualified_one_on_its_host(hosts):
    (a, socket_a), (c, socket_c) = hosts["a"], hosts["c"]
    pane_a, pane_c = start_session(socket_a, "agent-1"), start_session(socket_c, "agent-1")
    assert hook(a, socket_a, pane_a, "s-a") == "" and hook(c, socket_c, pane_c, "s-c") == ""
    a.stops.stop("c/agent-1", source="ops", reason="only c's")
    assert hook(a, socket_a, pane_a, "s-a") == ""
    assert "is stopped" in hook(c, socket_c, pane_c, "s-c")
    a.stops.resume("c/agent-1", source="ops")
    c.stops.stop("agent-1", source="ops", reason="every host's")
    assert "is stopped" in hook(a, socket_a, pane_a, "s-a") and "is stopped" in hook(c, socket_c, pane_c, "s-c")


def test_a_bare_name_stop_holds_after_a_rename_on_any_host(hosts):
    (a, socket_a), (c, socket_c) = hosts["a"], hosts["c"]
    pane_a, pane_c = start_session(socket_a, "agent-2"), start_session(socket_c, "agent-2")
    assert hook(a, socket_a, pane_a, "s-a") == "" and hook(c, socket_c, pane_c, "s-c") == ""
    record = a.stops.stop("agent-2", source="ops", reason="hold")  # filed on a: c's session is bound too
    assert len(record.as_dict().get("tmux_session_ids", [])) == 2
    rename_session(socket_c, "agent-2", "free")
    rename_session(socket_a, "agent-2", "loose")
    assert "is stopped" in hook(c, socket_c, pane_c, "s-c")
    assert "is stopped" in hook(c, socket_c, pane_c, "s-c-new")  # a new agent in the renamed session
    assert "is stopped" in hook(a, socket_a, pane_a, "s-a")


def test_a_bare_name_lock_covers_every_host(hosts):
    a, (c, socket_c) = hosts["a"][0], hosts["c"]
    pane_c = start_session(socket_c, "agent-3")
    assert hook(c, socket_c, pane_c, "s-c") == ""
    a.locks.lock("agent-3", hours=1, source="ops", reason="hands off")
    rename_session(socket_c, "agent-3", "other")
    assert "hands-off" in hook(c, socket_c, pane_c, "s-c")


def test_a_bare_name_resume_lifts_that_name_on_every_host(hosts):
    a = hosts["a"][0]
    for name in ("a/agent-4", "c/agent-4", "agent-4", "c/agent-44"):
        a.stops.stop(name, source="ops", reason="hold")
    assert a.stops.resume("agent-4", source="ops").key == "agent-4"
    assert list(a.stops.stopped()) == ["c/agent-44"]
    resumed = [line.session_id for line in a.acklog.read(event="resume")]
    assert sorted(resumed) == ["a/agent-4", "agent-4", "c/agent-4"]
    a.stops.stop("c/agent-5", source="ops")
    a.stops.resume("agent-5", source="ops")  # only a qualified stop by that name: lifted too
    assert "c/agent-5" not in a.stops.stopped()
