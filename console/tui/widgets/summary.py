"""The header line that sums up the fleet, fitted to the screen's width.

What must be seen comes first and is never cut: a fleet stop, then each
problem's banner ("⚠ STOP STATE UNREADABLE", from the problem's own words).
Then the counts, approvals waiting first, in the colour of their urgency
(bold yellow while any waits, red when one is within ``APPROVAL_DUE_SECONDS``
of its deadline), in the widest wording that fits: words and numbers, then
short words, then one letter or symbol each (``LEGEND`` says what each
stands for; the help screen shows it); short of room, the halts count only
their critical ones and the severities that are not zero. After the counts,
in the same wording, the fleet's spend today and its busiest subscription
window (``$12.40 today · 5h 63%``) when the budget meters anything and the
line has room for both. Then what each
banner did not say of its problem (its cause, what to do), as far as it goes.
Problems are agent-reachable text: shown escaped, never as markup.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from leash.core.base.text import printable
from leash.core.views.fleet import approval_due

SEVERITIES = (("critical", "bold white on red"), ("high", "bold red"), ("medium", "yellow"), ("low", "dim"))
# (sessions, stopped, halts, warrants, locks, breakers tripped, approvals) in three widths: words, short
# words, a letter or symbol (none the same as another, nor as a severity's letter).
LABELS = (("sessions ", "stopped ", "halts ", "warrants ", "locks ", "breakers tripped ", "approvals "),
          ("sess ", "stop ", "halts ", "warr ", "locks ", "trip ", "appr "),
          ("S", "■", "", "W", "K", "T", "A"))
# What the summary line's words and symbols stand for, widest first (the help screen shows it).
LEGEND = (("approvals, appr, A", "approvals waiting for an answer (yellow; red within a minute of the deadline)"),
          ("sessions, sess, S", "sessions"),
          ("stopped, stop, ■", "sessions stopped"),
          ("halts C H M L", "pending halts by severity: critical, high, medium, low (short of room, the critical "
                            "count and the others that are not zero)"),
          ("warrants, warr, W", "warrants filed"),
          ("locks, K", "hands-off locks"),
          ("breakers tripped, trip, T", "restart-loop breakers tripped"),
          ("$12.40 today", "the fleet's spend today, as metered; ~ before it: part of it is estimated"),
          ("5h 63%", "the busiest subscription window (5h, 7d) and how much of it is used (yellow from 75%)"),
          ("⚠ NAME", "something leash cannot read or reach; what it is and what to do follow the counts"))
WINDOW_NAMES = {"five_hour": "5h", "seven_day": "7d"}
WINDOW_WARN_PERCENT = 75  # a subscription window's percentage shows yellow from here (red at 100)
APPROVALS_WAITING_STYLE = "bold yellow"
APPROVALS_DUE_STYLE = "bold white on red"
PROBLEM_MARK_LIMIT = 30


def _head(problem: str) -> str:
    """ "stop state unreadable (...) — run ..." -> "stop state unreadable"."""
    return problem.split(" (")[0].split(" —")[0]


def _marker(problem: str) -> str:
    """The problem's banner: its head in capitals ("STOP STATE UNREADABLE")."""
    return printable(_head(problem), limit=PROBLEM_MARK_LIMIT).upper()


def _rest(problem: str) -> str:
    """What the banner does not say: "stop state unreadable (bad JSON) — run x" -> "bad JSON — run x"."""
    rest = problem[len(_head(problem)):].strip(" —")
    if rest.startswith("(") and ")" in rest:
        inside, _, after = rest[1:].partition(")")
        rest = f"{inside}{after}" if after.strip() else inside
    return printable(rest)


def approvals_style(summary: dict, now: float | None) -> str:
    """The colour of the approvals' count: none waiting, some, one due."""
    if not summary.get("approvals"):
        return "dim"
    due = now is not None and approval_due(summary.get("approval_deadline"), now)
    return APPROVALS_DUE_STYLE if due else APPROVALS_WAITING_STYLE


def _counts(summary: dict, labels: tuple[str, ...], gap: str, approvals: str, every_severity: bool = True) -> Text:
    """The counts in ``labels``' wording; without ``every_severity``, the
    halts' critical count and the other severities' that are not zero."""
    text = Text()
    stopped, warrants = summary.get("stopped", 0), summary.get("warrants", 0)
    tripped = summary.get("breakers_tripped", 0)
    text.append(f"{labels[6]}{summary.get('approvals', 0)}", style=approvals)
    text.append(gap)
    text.append(f"{labels[0]}{summary.get('sessions', 0)}", style="bold")
    text.append(gap)
    text.append(f"{labels[1]}{stopped}", style="bold red" if stopped else "")
    text.append(gap + labels[2])
    halts = summary.get("halts", {})
    for index, (severity, style) in enumerate(SEVERITIES):
        count = halts.get(severity, 0)
        if every_severity or index == 0 or count:
            text.append(("" if index == 0 else " ") + f"{severity[0].upper()}{count}", style=style if count else "dim")
    text.append(gap)
    text.append(f"{labels[3]}{warrants}", style="bold" if warrants else "")
    text.append(gap + f"{labels[4]}{summary.get('locks', 0)}")
    text.append(gap)
    text.append(f"{labels[5]}{tripped}", style="bold red" if tripped else "")
    return text


def window_name(name: str) -> str:
    """A subscription window as the header names it: ``window-5h``/``five_hour`` -> ``5h``."""
    name = str(name).removeprefix("window-")
    return WINDOW_NAMES.get(name, name)


def _spend(spend: dict | None, index: int) -> Text:
    """The fleet's spend today and its busiest window, in the wording of level
    ``index`` (0: ``$12.40 today · 5h 63%``; 1: ``$12.40 · 5h 63%``; 2: ``$12.40 5h63%``)."""
    text = Text()
    if not spend:
        return text
    mark = "~" if spend.get("estimated") else ""
    text.append(f"{mark}${float(spend.get('today_usd') or 0):,.2f}{' today' if index == 0 else ''}", style="bold")
    busiest = spend.get("busiest_window")
    if busiest:
        name, percent = busiest
        style = "bold red" if percent >= 100 else "bold yellow" if percent >= WINDOW_WARN_PERCENT else ""
        text.append(" · " if index < 2 else " ")
        text.append(f"{window_name(name)}{' ' if index < 2 else ''}{percent:.0f}%", style=style)
    return text


def summary_text(summary: dict, problems: list[str], width: int = 1000, approvals: str = "") -> Text:
    """The line; ``approvals``: the style of their count (``approvals_style``).
    The spend's figures follow the counts in the same wording, when there is
    room for both; short of it, the counts alone."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if summary.get("fleet_stopped"):
        text.append(" FLEET STOPPED ", style="bold white on red")
        text.append(" ")
    for problem in problems:
        text.append(f" ⚠ {_marker(problem)} ", style="bold white on dark_orange3")
        text.append(" ")
    room = width - text.cell_len
    style = approvals or approvals_style(summary, None)
    levels = list(enumerate(zip(LABELS, ("  ", " ", " "), strict=True)))
    chosen: Text | None = None
    for index, (labels, gap) in levels:
        counts = _counts(summary, labels, gap, style, every_severity=index == 0)
        spend = _spend(summary.get("spend"), index)
        if spend:
            counts.append(gap + " ")
            counts.append_text(spend)
        if counts.cell_len <= room:
            chosen = counts
            break
    if chosen is None:  # no room for the spend: the counts as they always fit
        for index, (labels, gap) in levels:
            chosen = _counts(summary, labels, gap, style, every_severity=index == 0)
            if chosen.cell_len <= room:
                break
    text.append_text(chosen or Text())
    for problem in problems:  # its banner is drawn: the rest of what it says
        rest = _rest(problem)
        if rest:
            text.append(f"   {rest}", style="bold yellow")
    text.truncate(width, overflow="ellipsis")
    return text


class SummaryBar(Static):
    _data: tuple[dict, list[str], str] | None = None

    def show(self, summary: dict, problems: list[str], now: float | None = None) -> None:
        """``now``: the time the approvals' urgency is judged at."""
        data = (summary, list(problems), approvals_style(summary, now))
        if data != self._data:
            self._data = data
            self.refresh()

    def render(self) -> Text:
        if self._data is None:
            return Text("")
        summary, problems, approvals = self._data
        return summary_text(summary, problems, width=max(1, self.size.width), approvals=approvals)
