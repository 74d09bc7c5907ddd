"""The detail line: the selected row's whole text, above the footer.

Two lines, wrapped to the screen's width (what does not fit ends in ``…``):
a halt's full description, condition, session and age; a session's state and
every rule that holds it (``core.why``, the gate's own answer, read off the UI
thread by the app); a lock's reason and expiry; a warrant's reason and gate; a
breaker's boots; an ack-log line's whole text. Every value is agent text:
escaped with ``core.text.printable`` and shown as ``Text``, never markup.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from leash.console.widgets.panel import duration
from leash.core.text import printable

DETAIL_LINES = 2
LOG_KEYS = ("timestamp", "event", "source", "session_id", "reason", "seq", "prev", "hash", "key")


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def halt_detail(row: dict, now: float) -> str:
    """The description first: it is what the table cuts."""
    age = duration(now - row["triggered_epoch"]) if row.get("triggered_epoch") else duration(row.get("age"))
    escalated = f", {row['resolution']}" if row.get("resolution") else ""
    condition = row.get("condition_name") or row["halt_type"]
    return f"{row['description']} — {row['severity']} {condition} on {row['session_id']}, {age} ago " \
           f"({row['halt_type']}{escalated})"


def session_detail(row: dict, answer: dict | None) -> str:
    agents = ", ".join(row.get("agents") or [])
    head = _join(f"{row['name']}: {row['state']}", f"tmux {row['tmux_session']}" if row.get("tmux_session") else "",
                 f"agents {agents}" if agents and agents != row["name"] else "")
    if answer is None:
        return f"{head} — {row.get('detail') or '...'}"
    from leash.core.why import summary

    return f"{head} — {summary(answer, lifts=False)} (i: what lifts it)" if answer["held"] else \
        f"{head} — {summary(answer)}"


def lock_detail(row: dict, now: float) -> str:
    left = row["expires_epoch"] - now if row.get("expires_epoch") is not None else row.get("left")
    head = _join(row["entity"], f"until {row.get('expires_at', '?')} ({duration(left)} left)",
                 f"by {row.get('source') or '?'}")
    return f"{head} — {row.get('reason') or 'no reason given'}"


def warrant_detail(row: dict, now: float) -> str:
    gate = ""
    if row.get("deadline_epoch") is not None:
        gate = f"gate closes in {duration(max(0.0, row['deadline_epoch'] - now))}"
    head = _join(f"warrant on {row.get('target', '')}",
                 f"{row.get('state', '')} attempt {row.get('attempt_label', '')}", gate,
                 f"filed by {row.get('requester') or '?'}")
    return f"{head} — {row.get('reason') or ''}"


def loop_detail(row: dict, now: float) -> str:
    verdict = "TRIPPED: the supervisor skips auto-resume" if row.get("tripped") else "not tripped"
    return _join(f"breaker {row['name']}", f"{row.get('in_loop', 0)}/{row.get('max_restarts', 0)} boots in "
                 f"{row.get('window_seconds', 0):g}s", verdict)


def log_detail(row: dict, now: float) -> str:
    extras = "".join(f"  {k}={v}" for k, v in row.items() if k not in LOG_KEYS)
    return (f"#{row.get('seq', '?')} {row.get('timestamp', '?')} {row.get('event', '?')} by "
            f"{row.get('source', '?')} on {row.get('session_id') or '-'} — {row.get('reason') or '-'}{extras}")


DETAILS = {"halts": halt_detail, "locks": lock_detail, "warrants": warrant_detail, "loops": loop_detail,
           "acklog": log_detail}


def detail_text(panel: str, row: dict | None, now: float, answer: dict | None = None) -> str:
    if row is None:
        return "nothing selected"
    if panel == "sessions":
        return session_detail(row, answer)
    return DETAILS[panel](row, now)


class DetailLine(Static):
    """Shows one string, escaped, wrapped into ``DETAIL_LINES`` lines."""

    _plain = ""

    def show(self, text: str) -> None:
        plain = printable(text)
        if plain != self._plain:
            self._plain = plain
            self.refresh()

    @property
    def plain(self) -> str:
        return self._plain

    def render(self) -> Text:
        width = max(8, self.size.width)
        lines = list(Text(self._plain).wrap(self.app.console, width))
        if len(lines) > DETAIL_LINES:
            last = lines[DETAIL_LINES - 1]
            last.truncate(width - 1)
            last.append("…")
            lines = lines[:DETAIL_LINES - 1] + [last]
        return Text("\n").join(lines)
