"""The detail line: the selected row's whole text, above the footer.

Two lines, wrapped to the screen's width (what does not fit ends in ``…``):
a halt's full description, condition, session (as the Sessions panel names
it; its agent's id last) and age; a session's state and
every rule that holds it (``core.why``, the gate's own answer, read off the UI
thread by the feed); a lock's reason and expiry; a warrant's reason and gate; a
breaker's boots; an ack-log line's whole text. Toasts show just above the
line, never over it. An approval takes more lines
(up to ``APPROVAL_LINES``, and at most a quarter of the screen, so the panels
keep their rows): who asks, for what and how long is left, then the command,
or the Edit's or Write's diff with its added lines green and its removed ones
red; what does not fit ends in a line saying how many more lines there are
(the Allow and Deny dialogs show the whole call). Each panel's entry
in ``console.tui.panels`` names its function here. Every value is agent
text: escaped with ``core.text.printable`` (line by line, tabs expanded) and
shown as ``Text``, never markup.
"""
from __future__ import annotations

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static

from leash.console.tui.widgets.panel import duration
from leash.core.base.text import printable

DETAIL_LINES = 2
APPROVAL_LINES = 12  # the most lines an approval's detail takes (who asks, then its command or diff)
SCREEN_SHARE = 4  # ... and never more than a quarter of the screen's height
TAB_SIZE = 4
DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))
DIFF_TOOLS = frozenset({"Edit", "MultiEdit", "Write"})
TOAST_RACK = "#textual-toastrack"  # where Textual puts a screen's toasts
LOG_KEYS = ("timestamp", "event", "source", "session_id", "reason", "seq", "prev", "hash", "key")


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def halt_detail(row: dict, now: float) -> str:
    """The description first: it is what the table cuts."""
    age = duration(now - row["triggered_epoch"]) if row.get("triggered_epoch") else duration(row.get("age"))
    escalated = f", {row['resolution']}" if row.get("resolution") else ""
    condition = row.get("condition_name") or row["halt_type"]
    session = row.get("session") or row["session_id"]
    agent = f"; agent {row['session_id']}" if session != row["session_id"] else ""
    return f"{row['description']} — {row['severity']} {condition} on {session}, {age} ago " \
           f"({row['halt_type']}{escalated}{agent})"


def session_detail(row: dict, answer: dict | None) -> str:
    agents = ", ".join(row.get("agents") or [])
    head = _join(f"{row['name']}: {row['state']}", f"tmux {row['tmux_session']}" if row.get("tmux_session") else "",
                 "" if row.get("in_tmux") else "no tmux pane on this host (·)",
                 f"agents {agents}" if agents and agents != row["name"] else "")
    if answer is None:
        return f"{head} — {row.get('detail') or '...'}"
    from leash.core.views.why import summary

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


def _diff_line(line: str) -> Text:
    style = next((style for mark, style in DIFF_STYLES if line.startswith(mark)), "")
    return Text(printable(line.expandtabs(TAB_SIZE)), style=style)


def approval_detail(row: dict, now: float) -> Text:
    """Who asks for what, then the whole command or diff: each line escaped on its own."""
    requested, deadline = row.get("requested_epoch"), row.get("deadline_epoch")
    waited = duration(now - requested) if requested is not None else duration(row.get("age"))
    left = duration(max(0.0, deadline - now)) if deadline is not None else duration(row.get("left"))
    why = f"ask rule {row['rule']}" if row.get("kind") == "ask" and row.get("rule") else "permission prompt"
    head = _join(f"{row.get('session') or row.get('session_id') or '?'} asks to run {row.get('tool') or '?'}", why,
                 f"waiting {waited}, {left} left")
    text = Text()
    text.append(printable(head), style="bold")
    body = str(row.get("detail") or row.get("summary") or "").rstrip("\n")
    diff = row.get("tool") in DIFF_TOOLS
    for line in body.split("\n"):  # the whole of it (the store keeps it short): DetailLine says what it cuts
        text.append("\n")
        text.append_text(_diff_line(line) if diff else Text(printable(line.expandtabs(TAB_SIZE))))
    return text


class DetailLine(Static):
    """Shows one string, escaped, wrapped into ``DETAIL_LINES`` lines (the
    last cut with ``…``); or a ``Text`` of many lines, escaped line by line by
    its maker (an approval's), in up to ``APPROVAL_LINES`` (its height
    follows), the last saying how many more there are."""

    _text = Text("")

    def __init__(self, *, lines: int = DETAIL_LINES, id: str) -> None:  # noqa: A002 (Textual's name)
        """``lines``: the most a string takes (wrapped)."""
        super().__init__(id=id)
        self.string_lines = self._lines = lines

    def show(self, text: str | Text) -> None:
        shown = text if isinstance(text, Text) else Text(printable(text))
        lines = APPROVAL_LINES if isinstance(text, Text) else self.string_lines
        if shown != self._text or lines != self._lines:
            relayout = lines != self._lines or lines != DETAIL_LINES  # its height may change: lay the screen out
            self._text, self._lines = shown, lines
            self.refresh(layout=relayout)

    def on_mount(self) -> None:
        self.screen.screen_layout_refresh_signal.subscribe(self, self._keep_toasts_above)

    def _keep_toasts_above(self, screen: Screen) -> None:
        """Toasts rise from just above this line (Textual docks them at the
        screen's bottom): never over it (an approval's diff) nor under it (the footer)."""
        rack = screen.query_one_optional(TOAST_RACK)
        if rack is None or not self.region.height:
            return
        below = screen.size.height - self.region.y
        if rack.styles.margin.bottom != below:
            rack.styles.margin = (0, 0, below, 0)

    @property
    def plain(self) -> str:
        return self._text.plain

    def _line_limit(self) -> int:
        return max(DETAIL_LINES, min(self._lines, self.app.size.height // SCREEN_SHARE))

    def render(self) -> Text:
        width = max(8, self.size.width)
        limit = self._line_limit()
        lines = list(self._text.wrap(self.app.console, width))
        if len(lines) > limit and self._lines == APPROVAL_LINES:
            more = Text(f"… {len(lines) - limit + 1} more lines: the Allow and Deny dialogs show the whole call",
                        style="dim")
            more.truncate(width, overflow="ellipsis")
            lines = lines[:limit - 1] + [more]
        elif len(lines) > limit:
            last = lines[limit - 1]
            last.truncate(width - 1)
            last.append("…")
            lines = lines[:limit - 1] + [last]
        return Text("\n").join(lines)
