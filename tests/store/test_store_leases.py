"""The lease contract (core.store.leases) on every backend: one holder at a
time, renewed by its holder, taken over once it expires, released; and every
host's kennel heartbeat for a holder that watches the others."""
from __future__ import annotations

import pytest

from leash.core.store.leases import kennel_beats, leases_of

T0 = 1_900_000_000.0


@pytest.fixture
def two_clients(backend, second_backend):
    """Two clients of one store (two processes of a home, or two hosts)."""
    return backend, second_backend


def test_one_holder_at_a_time(two_clients):
    a, b = (leases_of(client) for client in two_clients)
    assert a.claim("notify", "web1:1", host="web1", seconds=20, now=T0)
    assert not b.claim("notify", "web2:2", host="web2", seconds=20, now=T0 + 1)
    assert b.holder("notify", now=T0 + 1) == {"holder": "web1:1", "host": "web1", "until": T0 + 20}
    assert a.claim("notify", "web1:1", host="web1", seconds=20, now=T0 + 10)  # renewed
    assert not b.claim("notify", "web2:2", host="web2", seconds=20, now=T0 + 25)  # until T0 + 30 now


def test_an_expired_lease_is_taken_over(two_clients):
    a, b = (leases_of(client) for client in two_clients)
    assert a.claim("notify", "web1:1", seconds=20, now=T0)
    assert b.holder("notify", now=T0 + 21) is None
    assert b.claim("notify", "web2:2", host="web2", seconds=20, now=T0 + 21)
    assert not a.claim("notify", "web1:1", seconds=20, now=T0 + 22)  # the old holder is out


def test_a_released_lease_is_free_at_once(two_clients):
    a, b = (leases_of(client) for client in two_clients)
    assert a.claim("notify", "web1:1", seconds=20, now=T0)
    b.release("notify", "web2:2")  # not the holder: nothing happens
    assert not b.claim("notify", "web2:2", seconds=20, now=T0 + 1)
    a.release("notify", "web1:1")
    assert b.holder("notify", now=T0 + 1) is None and b.claim("notify", "web2:2", seconds=20, now=T0 + 1)


def test_leases_of_other_names_are_apart(two_clients):
    a, b = (leases_of(client) for client in two_clients)
    assert a.claim("notify", "web1:1", seconds=20, now=T0)
    assert b.claim("other", "web2:2", seconds=20, now=T0)


def test_kennel_beats_are_every_hosts(two_clients):
    first, second = two_clients
    assert kennel_beats(first) == []
    first.kennels.beat(pid=11, host="web1", started_at="2030-01-01T00:00:00Z", dogs=5, now=T0)
    if first.name == "postgres":
        second.kennels.host = "web2"
    second.kennels.beat(pid=22, host="web2", started_at="2030-01-01T00:00:00Z", dogs=5, stopped=True, now=T0)
    beats = {beat.host: beat for beat in kennel_beats(first)}
    if first.name == "postgres":
        assert set(beats) == {"web1", "web2"} and beats["web2"].stopped_at
    else:  # a home has one kennel.json: the last beat written
        assert set(beats) == {"web2"}
