"""``leash serve``'s ``/approvals``: the waiting calls on a page made for a
phone, answered with a tap.

Server-rendered HTML, no script: each waiting call with its session, tool,
what it would do (the command or the diff, secrets masked when it was
stored), its age and the time it has left; **Allow**, and **Deny** with an
optional message. The page refreshes itself every ``REFRESH_SECONDS``.

An answer is a POST of a form to ``/approvals/ID``. Besides the server's own
rules (``console.serve.server``: Host, the token's cookie), a POST must come from
this server's own page: an ``Origin`` of this server, and the form's CSRF
field, HMAC-SHA256 of the path under the server's token (a page elsewhere
knows neither). It is applied through leashd's operator socket when leashd
runs (so leashd applied it: ``core.daemon.approvaldesk`` obeys it), else on
the home's stores; ``via`` is "serve". ``--read-only`` shows no buttons and
refuses every POST.

Failure: a store that cannot be read is said on the page, never a traceback;
an answer that cannot be applied (answered meanwhile, unknown) is said on
the page that follows (``?said=``), in one line.
"""
from __future__ import annotations

import hashlib
import hmac
import html
import time
import urllib.parse

TYPE_CHECKING = False  # for the type checker only
if TYPE_CHECKING:
    from typing import Callable

    from leash.core.store.protocols import Backend
    from leash.core.store.records import ApprovalRecord

REFRESH_SECONDS = 10
MESSAGE_LIMIT = 500
DETAIL_SHOWN = 4000  # characters of a call's detail on the page (the rest: leash approvals show)
SAID_LIMIT = 300

STYLE = """
body{font:16px/1.4 system-ui,sans-serif;margin:0;padding:12px;background:#111;color:#eee}
h1{font-size:20px;margin:0 0 12px}
article{border:1px solid #444;border-radius:8px;padding:12px;margin:0 0 12px;background:#1b1b1b}
pre{white-space:pre-wrap;word-break:break-word;background:#000;padding:8px;border-radius:4px;max-height:40vh;
overflow:auto;font-size:14px}
.meta{color:#aaa;font-size:14px}
form{display:inline-block;margin:8px 8px 0 0}
button{font-size:18px;padding:10px 18px;border-radius:6px;border:0;min-width:44px;min-height:44px}
button.allow{background:#2e7d32;color:#fff}button.deny{background:#c62828;color:#fff}
button:focus,textarea:focus{outline:3px solid #ffca28}
textarea{width:100%;box-sizing:border-box;font-size:16px;min-height:3em;background:#000;color:#eee;
border:1px solid #666;border-radius:4px}
.said{background:#333;padding:8px;border-radius:4px}
"""


def csrf_for(token: str, path: str) -> str:
    """The form field a POST to ``path`` must carry: only this server's pages know it."""
    return hmac.new(token.encode(), f"csrf {path}".encode(), hashlib.sha256).hexdigest()


def age_text(seconds: float) -> str:
    from leash.core.base.clock import human_duration

    return human_duration(max(0.0, seconds))


class ApprovalsPages:
    def __init__(self, home: str, token: str, *, read_only: bool, clock: Callable[[], float] = time.time):
        self.home, self.token, self.read_only, self.clock = home, token, read_only, clock

    # ------------------------------------------------------------ the store
    def backend(self) -> Backend:
        """leashd's stores when it runs (it applies the answer), else the home's."""
        from leash.core.wire.operator import answers, operator_socket

        path, _ = operator_socket(self.home)
        if path is not None and answers(path):
            from leash.core.store.remote import RemoteBackend

            return RemoteBackend(path)
        from leash.core.store.select import backend_for

        return backend_for(self.home)

    # ------------------------------------------------------------ pages
    def page_html(self, said: str = "") -> str:
        try:
            waiting = self.backend().approvals.pending()
            problem = ""
        except Exception as exc:  # said on the page; a phone shows no traceback
            waiting, problem = [], f"the approvals cannot be read: {exc.__class__.__name__}: {exc}"
        now = self.clock()
        parts = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
                 '<meta name=viewport content="width=device-width, initial-scale=1">',
                 f"<meta http-equiv=refresh content={REFRESH_SECONDS}>",
                 f"<title>leash: {len(waiting)} waiting</title><style>{STYLE}</style></head><body>",
                 f"<h1>{len(waiting)} call{'s' if len(waiting) != 1 else ''} waiting</h1>"]
        for note in (said, problem):
            if note:
                parts.append(f'<p class=said role=status>{html.escape(note[:SAID_LIMIT])}</p>')
        for approval in waiting:
            parts.append(self._article(approval, now))
        if not waiting and not problem:
            parts.append("<p>Nothing waits for an answer.</p>")
        parts.append("</body></html>")
        return "".join(parts)

    def _article(self, approval: ApprovalRecord, now: float) -> str:
        from leash.core.base.clock import parse_iso

        def when(value: object) -> float:
            try:
                return parse_iso(str(value))
            except ValueError:
                return now

        esc = html.escape
        age, left = age_text(now - when(approval.requested_at)), age_text(when(approval.deadline) - now)
        detail = str(approval.detail or approval.summary or "")[:DETAIL_SHOWN]
        path = f"/approvals/{approval.id}"
        out = [f'<article aria-label="{esc(approval.session_id)}: {esc(approval.tool)}">',
               f"<div><b>{esc(approval.session_id)}</b> · {esc(approval.tool)}"
               f" <span class=meta>({esc(approval.host or '')})</span></div>",
               f"<div class=meta>waiting {esc(age)} · {esc(left)} left · {esc(approval.id[:8])}</div>",
               f"<pre>{esc(detail)}</pre>"]
        if not self.read_only:
            token = esc(csrf_for(self.token, path))
            out.append(f'<form method=post action="{path}"><input type=hidden name=csrf value="{token}">'
                       '<input type=hidden name=decision value=allow>'
                       f'<button class=allow type=submit aria-label="Allow {esc(approval.tool)} for '
                       f'{esc(approval.session_id)}">Allow</button></form>')
            out.append(f'<form method=post action="{path}"><input type=hidden name=csrf value="{token}">'
                       '<input type=hidden name=decision value=deny>'
                       f'<label>Message (optional)<textarea name=message maxlength={MESSAGE_LIMIT}></textarea>'
                       f'</label><button class=deny type=submit aria-label="Deny {esc(approval.tool)} for '
                       f'{esc(approval.session_id)}">Deny</button></form>')
        out.append("</article>")
        return "".join(out)

    # ------------------------------------------------------------ answers
    def refusal(self, path: str, form: dict) -> str | None:
        """Why a POST to ``path`` is refused (None: it may be applied)."""
        if self.read_only:
            return "this server is read-only"
        given = form.get("csrf", "")
        if not given or not hmac.compare_digest(given, csrf_for(self.token, path)):
            return "missing or wrong CSRF token (answer from this server's own page)"
        if form.get("decision") not in ("allow", "deny"):
            return "a decision is allow or deny"
        return None

    def answer(self, approval_id: str, form: dict) -> str:
        """Apply the answer; the one line the next page says."""
        from leash.core.base.source import default_source

        allow = form.get("decision") == "allow"
        message = str(form.get("message") or "")[:MESSAGE_LIMIT]
        try:
            record = self.backend().approvals.answer(approval_id, allow=allow, by=default_source(), via="serve",
                                                     message="" if allow else message)
        except Exception as exc:  # answered meanwhile, unknown: said on the page
            return f"not answered: {exc}"
        return f"{'allowed' if allow else 'denied'}: {record.session_id} · {record.summary}"


def said_query(text: str) -> str:
    return "?said=" + urllib.parse.quote(text[:SAID_LIMIT])
