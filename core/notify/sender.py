"""Delivering one message through one route.

* ``webhook``: a POST of the event's JSON object (``Event.payload``: event,
  title, body, session, host, severity, id, time);
* ``ntfy``: a POST of the body as text, with ``Title``, ``Priority`` (1–5 from
  the severity) and ``Tags`` headers (non-ASCII as RFC 2047 words, which ntfy
  decodes), and for an approval on a route with a ``reply_topic`` an
  ``Actions`` header: Allow and Deny ``http`` buttons that POST their signed
  token to that topic (``core.notify.answers``);
* ``slack``: a POST of ``{"text": ..., "mrkdwn": false}`` (Slack's ``&``,
  ``<``, ``>`` escaped, so agent text can neither mention a channel nor forge
  a link, and no markdown: ``*bold*`` in agent text stays as typed);
* ``command``: the route's argv with ``{title}``, ``{body}``, ``{event}``,
  ``{session}``, ``{severity}``, ``{host}``, ``{id}`` replaced in each word (a
  word is one argument: no shell ever reads it), the event's JSON on stdin,
  ended after the route's timeout;
* ``desktop``: ``notify-send`` when this host has it.

HTTP redirects are not followed (a POST is never sent on to another place),
and a loopback url never goes through a proxy. Text is already clean (see
``core.notify.events``).

Failure: anything short of a 2xx answer or a zero exit raises
``DeliveryFailed`` with one line (the url is never in it); a host without
``notify-send`` raises ``Unavailable``, a ``DeliveryFailed``.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from leash.core.notify.events import Event
from leash.core.notify.routes import Route

NTFY_PRIORITY = {"low": "2", "medium": "3", "high": "4", "critical": "5"}
DESKTOP_URGENCY = {"low": "low", "medium": "normal", "high": "critical", "critical": "critical"}
ANSWER_READ_LIMIT = 65536  # bytes of an answer read (and thrown away) before the connection closes
PROBLEM_LIMIT = 300
STDERR_KEPT = 4096  # bytes of a failed command's stderr looked at for its last line
PLACEHOLDERS = ("title", "body", "event", "session", "severity", "host", "id")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
USER_AGENT = "leash-notify"


class DeliveryFailed(Exception):
    """The route did not take the message; ``str()`` is one line."""


class Unavailable(DeliveryFailed):
    """The route cannot work on this host (``notify-send`` missing)."""


def deliver(route: Route, event: Event, *, actions: tuple = ()) -> None:
    """Send ``event`` through ``route``; raises ``DeliveryFailed``.
    ``actions``: (label, url, body) buttons, an ntfy route's ``http`` actions
    (an approval's Allow and Deny: ``core.notify.answers``), or a ``view``
    link where ``body`` is empty."""
    if route.kind == "webhook":
        _post(route, json.dumps(event.payload(), ensure_ascii=True).encode(), {"Content-Type": "application/json"})
    elif route.kind == "ntfy":
        headers = _ntfy_headers(event)
        if actions:
            headers["Actions"] = "; ".join(
                f"view, {label}, {url}" if not body else f"http, {label}, {url}, method=POST, body={body}, clear=true"
                for label, url, body in actions)
        _post(route, event.body.encode() or event.title.encode(), headers)
    elif route.kind == "slack":
        # mrkdwn off: agent text (a session name, a command) is shown as typed,
        # never as *bold*, _italics_, ~strikes~ or `code` it asked for.
        text = f"{_slack_escape(event.title)}\n{_slack_escape(event.body)}".rstrip()
        _post(route, json.dumps({"text": text, "mrkdwn": False}, ensure_ascii=True).encode(),
              {"Content-Type": "application/json"})
    elif route.kind == "command":
        _run([_substitute(word, event) for word in route.argv], event, route.timeout_s)
    elif route.kind == "desktop":
        program = shutil.which("notify-send")
        if program is None:
            raise Unavailable("notify-send is not installed on this host")
        _run([program, "--app-name=leash", f"--urgency={DESKTOP_URGENCY.get(event.severity, 'normal')}", "--",
              event.title, event.body], event, route.timeout_s)
    else:
        raise DeliveryFailed(f"unknown route kind {route.kind!r}")


def _ntfy_headers(event: Event) -> dict[str, str]:
    return {"Content-Type": "text/plain; charset=utf-8", "Title": _header_word(event.title),
            "Priority": NTFY_PRIORITY.get(event.severity, "3"),
            "Tags": _header_word(",".join(t for t in (event.kind, event.severity) if t))}


def _header_word(text: str) -> str:
    """An HTTP header value: ASCII as it is, anything else as one RFC 2047 word."""
    if text.isascii():
        return text
    import base64

    return f"=?utf-8?b?{base64.b64encode(text.encode()).decode()}?="


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _substitute(word: str, event: Event) -> str:
    values = {"title": event.title, "body": event.body, "event": event.kind, "session": event.session,
              "severity": event.severity, "host": event.host, "id": event.id}
    for name in PLACEHOLDERS:
        word = word.replace("{" + name + "}", values[name])
    return word


def _run(argv: list[str], event: Event, timeout: float) -> None:
    """Run ``argv`` in a session of its own, the event's JSON on stdin; past
    ``timeout`` its whole process group is killed (a shell script's children too)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        raise DeliveryFailed(f"{argv[0]}: {exc.strerror or exc}") from None
    try:
        _, err = proc.communicate(json.dumps(event.payload()).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise DeliveryFailed(f"{argv[0]} did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        said = err[-STDERR_KEPT:].decode("utf-8", "replace").strip().splitlines()
        raise DeliveryFailed(f"{argv[0]} exited {proc.returncode}" + (f": {said[-1]}" if said else ""))


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects refused: a 3xx is a failure, never a new address to post to."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _post(route: Route, data: bytes, headers: dict[str, str]) -> None:
    handlers: list = [_NoRedirects()]
    if (urlsplit(route.url).hostname or "") in LOOPBACK_HOSTS:
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(route.url, data=data, method="POST",
                                     headers={"User-Agent": USER_AGENT, **headers})
    try:
        with opener.open(request, timeout=route.timeout_s) as answer:
            answer.read(ANSWER_READ_LIMIT)
            status = answer.status
    except urllib.error.HTTPError as exc:
        raise DeliveryFailed(f"HTTP {exc.code} {exc.reason}"[:PROBLEM_LIMIT]) from None
    except urllib.error.URLError as exc:
        raise DeliveryFailed(f"cannot reach {route.place}: {exc.reason}"[:PROBLEM_LIMIT]) from None
    except (OSError, ValueError) as exc:  # a timeout mid-answer, a connection reset, a bad answer
        raise DeliveryFailed(f"{route.place}: {exc.__class__.__name__}: {exc}"[:PROBLEM_LIMIT]) from None
    if not 200 <= status < 300:
        raise DeliveryFailed(f"HTTP {status}")
