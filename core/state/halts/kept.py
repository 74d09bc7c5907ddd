"""Answers read over a kept halts.db connection, reused while the database
provably has not changed.

A long-lived process (leashd, the console) keeps one connection open
(``core.halts.access.reading``) and asks it the same questions on every hook
call: the halts store's recorded head (is it in step with the ack log?), the
earliest pending escalation (is a timeout sweep due?), a session's state, its
attempts at a task, the files it has read. Their answers change only when the
database does, so ``View`` keeps them under a key that every write changes:

* the file's identity and contents as ``stat`` shows them (device, inode,
  size, mtime): deleted, replaced or written in place behind SQLite's back;
* ``PRAGMA data_version``: a commit by any other connection, of this process
  or another (SQLite's own guarantee);
* the connection's ``total_changes``: a write through the kept connection
  itself (which ``data_version`` does not count).

What does not live in the database is never kept: the ack log's head is read
on every entry, and the sweep compares the caller's clock with the kept
earliest escalation, so an injected ``now=`` or the clock moving past a
deadline sweeps at once.

One ``View`` per kept connection, used only by the thread that holds that
connection's lock. Failure: a key that cannot be read raises (the caller then
reads nothing from the view and fails closed as before); answers are bounded
(``MAX_ANSWERS``) and forgotten together.
"""
from __future__ import annotations

MAX_ANSWERS = 4096


def identity_of(stat_result) -> tuple[int, int, int, int]:
    """What ``stat`` says about the database file's identity and contents."""
    return stat_result.st_dev, stat_result.st_ino, stat_result.st_size, stat_result.st_mtime_ns


class View:
    """The kept answers of one connection and the key they hold for."""

    __slots__ = ("connection", "file", "data_version", "changes", "answers")

    def __init__(self, connection):
        self.connection = connection
        self.file: tuple | None = None
        self.data_version: int | None = None
        self.changes = -1
        self.answers: dict = {}

    def revalidate(self, file_identity: tuple) -> None:
        """On entering a unit: forget every answer unless nothing has written
        to the database since they were read."""
        version = self.connection.execute("PRAGMA data_version").fetchone()[0]
        if (file_identity, version) != (self.file, self.data_version):
            self.answers.clear()
            self.file, self.data_version = file_identity, version

    def answer(self, key: tuple, read):
        """``read()``'s result, from the view while the database is unchanged."""
        changes = self.connection.total_changes
        if changes != self.changes:  # this connection wrote: nothing read before can be trusted
            self.answers.clear()
            self.changes = changes
        try:
            return self.answers[key]
        except KeyError:
            pass
        value = read()
        if len(self.answers) >= MAX_ANSWERS:
            self.answers.clear()
        self.answers[key] = value
        return value

    def forget(self) -> None:
        self.answers.clear()
        self.file = self.data_version = None


_views: dict[int, View] = {}  # id(connection) -> its view, for kept connections only


def register(connection) -> View:
    view = _views[id(connection)] = View(connection)
    return view


def unregister(connection) -> None:
    _views.pop(id(connection), None)


def answer(connection, key: tuple, read):
    """``read()`` through the connection's view when it is a kept one (whose
    lock the caller holds), else ``read()`` itself."""
    view = _views.get(id(connection)) if connection is not None else None
    if view is None or view.connection is not connection:
        return read()
    return view.answer(key, read)
