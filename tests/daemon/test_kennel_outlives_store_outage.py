"""leashd's kennel outlives a database that goes away: PostgreSQL stopped and
started again under a running ``leash daemon`` (its own throwaway server, so
stopping it touches no other test), and a warrant filed afterwards is still
worked to its verdict by that daemon's kennel."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from leash.core.base.tmux import Tmux

from ..support.checkout import ROOT, leash_argv
from ..support.daemon import daemon_process, stop
from ..support.kennel import start_agent
from ..support.postgres import Cluster, binaries
from ..support.waiting import wait_for

OUTAGE_SECONDS = 2.5  # longer than the kennel's idle poll (0.5 s) and heartbeat (1 s): it meets the outage


@pytest.fixture
def cluster():
    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl); .ci/run installs it")
    server = Cluster()
    yield server
    server.stop()


@pytest.mark.heavy("a PostgreSQL restart under a running leashd, ~8 s of waiting on real reconnects; make test keeps "
                   "the store's outage policy (tests/store/test_postgres_mirror.py)")
def test_a_database_restart_leaves_leashds_kennel_working_warrants(cluster, home, tmp_path):
    from leash.core.store.postgres import PostgresBackend

    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "config.toml").write_text("[warrants]\ntimeouts = [0.5, 0.5, 0.5]\npoll_seconds = 0.05\n")
    socket_path = tmp_path / "tmux.sock"
    tmux = Tmux(str(socket_path))
    env = {"LEASH_STORE_URL": cluster.url(), "LEASH_HOST": "a", "LEASH_TMUX_SOCKET": str(socket_path)}
    daemon = daemon_process(home, env=env, stderr=subprocess.DEVNULL)
    reader = PostgresBackend(cluster.url(), home=tmp_path / "reader", host="a")
    try:
        wait_for(lambda: (lambda k: k is not None and k.pid == daemon.pid)(reader.kennels.alive()),
                 what="the kennel's first heartbeat")
        reader.close()
        cluster.pause()
        time.sleep(OUTAGE_SECONDS)
        cluster.resume()
        reader = PostgresBackend(cluster.url(), home=tmp_path / "reader", host="a")
        start_agent(tmux, tmp_path, "agent-1", "silent")
        merged = dict(os.environ, LEASH_HOME=str(home), **env)
        merged.pop("LEASH_OPERATOR_SOCKET", None)
        filed = subprocess.run(leash_argv() + ["warrant", "file", "agent-1", "--reason", "silent since the outage"],
                               env=merged, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert filed.returncode == 0, filed.stderr
        assert "no kennel is running" not in filed.stdout, filed.stdout
        (warrant,) = reader.warrants.listing().pending or reader.warrants.listing().active
        done = wait_for(lambda: (lambda f: f[1].as_dict() if f and f[0] == "completed" else None)(
            reader.warrants.find(warrant.id)), timeout=30, what="the verdict of the kennel after the outage")
        assert done["outcome"] == "executed"
        assert daemon.poll() is None
    finally:
        reader.close()
        tmux.kill_server()
        stop(daemon)
