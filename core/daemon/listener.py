"""One listening Unix socket of leashd: accept, a thread per connection, and
the two caps that keep one client from holding up the others.

* ``open_cap`` connections may be open at once on the socket (waiting for a
  request line or being served). Beyond it new clients wait in the listen
  backlog, and a connect that finds the backlog full gets EAGAIN.
* ``serve_cap`` requests are served at once (``serving``, taken around each
  request by the caller). A connection that waits for its request line holds
  its own thread and its own read deadline (``core.daemon.wire``), never one
  of these: 300 clients that send half a line and stall cost 300 idle threads
  until their deadlines, and every other client's request is served at once.

Each socket has its own caps, so agents filling theirs never keep an
operator out.

Failure: an accept that fails for want of descriptors or memory (EMFILE,
ENFILE, ENOBUFS, ENOMEM) or because the client gave up (ECONNABORTED) waits
``ACCEPT_RETRY_SECONDS`` and goes on: the socket keeps listening. Closing the
listener ends the accept thread; a connection's ``OSError`` ends that
connection only.
"""
from __future__ import annotations

import errno
import os
import socket
import threading
import time

LISTEN_BACKLOG = 128
# When this thread's connection was accepted (``time.perf_counter_ns``): a
# traced hook call's first stamp on leashd's side (``core.daemon.hookverb``).
CONNECTION = threading.local()
ACCEPT_RETRY_SECONDS = 0.05
# Accept errors that pass: the socket itself is fine.
PASSING_ACCEPT_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED,
                                   errno.EINTR})


class Listener:
    def __init__(self, path: str, mode: int, handle, *, open_cap: int, serve_cap: int, stopping: threading.Event):
        self.path, self.mode, self.handle = path, mode, handle  # handle(conn, serving) runs in the connection's thread
        self.open = threading.BoundedSemaphore(open_cap)
        self.serving = threading.BoundedSemaphore(serve_cap)
        self.stopping = stopping
        self.sock: socket.socket | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind and listen (``serve`` then accepts)."""
        from leash.core.wire.thinhook import unix_address

        try:
            os.unlink(self.path)  # stale: the daemon's lock says no daemon holds it
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, directory_fd = unix_address(self.path)
        old_umask = os.umask(0o777 & ~self.mode)
        try:
            sock.bind(address)
        finally:
            os.umask(old_umask)
            if directory_fd is not None:
                os.close(directory_fd)
        os.chmod(self.path, self.mode)
        sock.listen(LISTEN_BACKLOG)  # clients may connect from now on; they wait in the backlog until ``serve``
        self.sock = sock

    def serve(self) -> None:
        """Accept connections (in a thread of its own) from now on."""
        self.thread = threading.Thread(target=self._accept, name=f"accept {self.path}", daemon=True)
        self.thread.start()

    def close(self) -> None:
        sock = self.sock
        if sock is None:
            return
        for step in (lambda: sock.shutdown(socket.SHUT_RDWR), sock.close):
            try:
                step()  # shutdown wakes the thread blocked in accept()
            except OSError:
                pass

    def _accept(self) -> None:
        sock = self.sock
        assert sock is not None
        while not self.stopping.is_set():
            self.open.acquire()
            try:
                conn, _ = sock.accept()
            except OSError as exc:
                self.open.release()
                if self.stopping.is_set() or exc.errno not in PASSING_ACCEPT_ERRORS:
                    return  # the listener was closed
                time.sleep(ACCEPT_RETRY_SECONDS)
                continue
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        CONNECTION.accepted_ns = time.perf_counter_ns()
        try:
            with conn:
                self.handle(conn, self.serving)
        except OSError:
            pass  # the client went away
        finally:
            self.open.release()
