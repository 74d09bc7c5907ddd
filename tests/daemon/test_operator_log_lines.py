"""leashd's log says what operators did, not what the console read: a
console refresh over the operator socket (dozens of store reads) adds no
``operator`` line, and every request that may change state adds one naming
its store and method."""
from __future__ import annotations

from leash.core.daemon.storeverb import READS
from leash.core.store.remote import RemoteBackend, callable_methods, protocols
from leash.core.views.fleet import view

from ..support.daemon import sockets

NOW = 1_900_000_000.0


def operator_lines(daemon) -> list[str]:
    return [line for line in daemon.log_stream.lines if " operator " in line]


def test_a_console_refresh_logs_no_operator_line(daemon, home):
    remote = RemoteBackend(sockets(home)[1])
    remote.stops.stop("s1", source="ops", reason="hold", now=NOW)  # something to show
    before = len(operator_lines(daemon))
    for _ in range(3):
        shown = view(backend=remote, tmux_sessions=[], now=NOW + 1)
        assert shown  # the refresh read the fleet
    assert operator_lines(daemon)[before:] == []


def test_every_state_changing_request_has_its_line(daemon, home):
    remote = RemoteBackend(sockets(home)[1])
    remote.stops.stop("s1", source="ops", reason="hold", now=NOW)
    remote.locks.lock("billing", hours=1, reason="audit", source="ops", now=NOW)
    remote.locks.release("billing", source="ops")
    with remote.transaction(now=NOW) as step:
        step.stop("s2", source="ops", reason="full stop")
    said = [line.split(" operator ", 1)[1] for line in operator_lines(daemon)]
    assert [s for s in said if "verb=store" in s] == [
        f"verb=store user={daemon_user()} store=stops method=stop",
        f"verb=store user={daemon_user()} store=locks method=lock",
        f"verb=store user={daemon_user()} store=locks method=release",
        f"verb=store user={daemon_user()} store=transaction method=$apply",
    ]


def daemon_user() -> str:
    import os
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def test_the_reads_are_methods_the_stores_offer():
    """A read named here that a store lost would silence nothing; a store's
    new method is a write (logged) until it is named here."""
    offered = {store: callable_methods(protocol) for store, protocol in protocols().items()}
    for store, reads in READS.items():
        assert reads <= offered[store], (store, reads - offered[store])
    assert "transaction" not in READS
