"""The operation that raises a cap from the Budget panel (``+`` on a cap's row).

An ``Operation`` (``console.operations``) of the console's own, as it
reads the panel's figures (``widgets.budget``) and may ask leashd; the app
hands it to ``Operations`` as ``more``. Its dialog is the one every state
change goes through (``screens.confirm``): it opens with the cursor in the new limit's field,
then the reason (Enter moves on; ctrl+y confirms, escape cancels). Its body
says the cap's figure and whether it holds sessions now. Confirmed, it calls
the core's ``raise_cap`` (``core.views.metering``) with the operator as the
source, for the row's bucket only: the raise is logged, the holds it covers
are lifted and their ``budget`` halts acknowledged, all by the core. Against
a leashd (the separated profile, or a console that goes through a running
daemon) the raise is ``leash budget raise`` run by the daemon's ``cli`` verb,
as the peer the kernel says the operator is, on the daemon's own home.

Failure: a limit that is not a number is refused in the dialog (it stays
open and says so on its notice line). What the core refuses (an unknown cap,
a limit not above what is used) is a ``Refused``: the footer says it, one
line, as any refusal.
"""
from __future__ import annotations

import json
import math
import os
import socket
import time
from typing import TYPE_CHECKING, Callable

from leash.console.errors import Refused
from leash.console.operations import FOCUS_FIELD, Confirmed, Field, Operation, shown
from leash.console.tui.widgets.budget import figure

if TYPE_CHECKING:
    from leash.core.store.protocols import Backend

LIMIT_FIELD = "limit"
DAEMON_TIMEOUT_SECONDS = 30.0
REFUSAL_LIMIT = 300  # characters of a refusal shown


def parse_limit(text: str) -> float:
    """The limit typed (``15``, ``$15.50``, ``1,200``, ``90%``) as a number;
    ValueError naming what was typed when it is not one. Whether the number
    is a limit the cap can take is the core's to say."""
    cleaned = text.strip().removeprefix("$").removesuffix("%").replace(",", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"new limit: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"new limit: {text.strip()!r} is not a number")
    return value


def limit_problem(confirmed: Confirmed) -> str | None:
    try:
        parse_limit(confirmed.value(LIMIT_FIELD))
    except ValueError as exc:
        return str(exc)
    return None


def run_in_daemon(path: str, argv: list[str], *, timeout: float = DAEMON_TIMEOUT_SECONDS) -> tuple[int, str, str]:
    """``leash ARGV`` run by the daemon's ``cli`` verb on the operator socket
    at ``path``: its exit code, output and errors. A daemon that cannot be
    reached, or that stops answering, is a ``Refused`` saying so."""
    from leash.core.wire.thinhook import connect

    out: list[str] = []
    err: list[str] = []
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            connect(conn, path)
            conn.sendall(json.dumps({"verb": "cli", "argv": argv, "tty": False}).encode() + b"\n")
            with conn.makefile("rb") as replies:
                for line in replies:
                    reply = json.loads(line)
                    if "exit" in reply:
                        return int(reply["exit"]), "".join(out), "".join(err)
                    if "error" in reply:
                        raise Refused(f"leash daemon: {shown(reply['error'], REFUSAL_LIMIT)}")
                    (out if "out" in reply else err).append(str(reply.get("out", reply.get("err", ""))))
    except (OSError, ValueError) as exc:
        raise Refused(f"leash daemon not reachable at {shown(path)} ({exc})") from None
    raise Refused("leash daemon closed the connection before the raise was done")


def raise_argv(cap: str, bucket: str, to: float, reason: str) -> list[str]:
    argv = ["budget", "raise", cap, "--to", repr(to), "--reason", reason]
    return [*argv, "--bucket", bucket] if bucket else argv


def raise_operation(backend: Backend, row: dict, *, source: str, home: str | os.PathLike[str],
                    clock: Callable[[], float] = time.time) -> Operation:
    """The dialog raising the cap of ``row`` (a Budget panel's row) for its bucket."""
    cap, bucket = str(row.get("cap") or ""), str(row.get("bucket") or "")
    unit = row.get("unit") or "usd"
    used = figure(row.get("used"), unit, bool(row.get("estimated")))
    limit = figure(row.get("limit"), unit)
    held = "It holds its sessions now: their tool calls are refused until it is raised above what is used." \
        if row.get("held") else "It holds nothing now; raised, it holds later (at the new limit)."
    scope = row.get("scope") or ""
    where = shown(scope if bucket in ("", scope) else f"{scope}/{bucket}")
    body = (f"{shown(cap)} ({where}, {shown(row.get('period'))}): {used} used of {limit}.\n{held}\n"
            "The new limit lasts until the period resets; the raise is logged with the reason.")
    field = Field("New limit" + (" (%)" if unit == "percent" else " (USD)"), "", LIMIT_FIELD,
                  f"above {used} (required)")

    def run(confirmed: Confirmed) -> str:
        to = parse_limit(confirmed.value(LIMIT_FIELD))
        from leash.core.store.remote import RemoteBackend

        if isinstance(backend, RemoteBackend):
            code, out, err = run_in_daemon(backend.path, raise_argv(cap, bucket, to, confirmed.text))
            if code != 0:
                said = (err or out).strip().splitlines()
                raise Refused(shown(said[-1] if said else f"leash budget raise exited {code}", REFUSAL_LIMIT))
            return f"raised {shown(cap)} to {figure(to, unit)}"
        from leash.core.base.config import load_config
        from leash.core.views.metering import raise_cap

        try:
            raise_cap(backend, cap, to=to, reason=confirmed.text, source=source, config=load_config(home),
                      now=clock(), bucket=bucket or None)
        except ValueError as exc:
            raise Refused(shown(exc, REFUSAL_LIMIT)) from None
        return f"raised {shown(cap)} ({where}) to {figure(to, unit)}"
    return Operation(f"Raise cap {shown(cap)}?", body, run, text_label="Reason", fields=(field,),
                     confirm_label="Raise", focus=FOCUS_FIELD, check=limit_problem)
