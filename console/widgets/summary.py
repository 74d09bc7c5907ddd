"""The header line that sums up the fleet, fitted to the screen's width.

What must be seen comes first and is never cut: a fleet stop, then each
unreadable state ("STOP STATE UNREADABLE", from the problem's own words).
Then the counts, approvals waiting first, in the colour of their urgency
(bold yellow while any waits, red when one is within ``APPROVAL_DUE_SECONDS``
of its deadline), in the widest wording that fits: words and numbers, then
short words, then numbers alone (letters for the halt severities); then the
problems' full text as far as it goes. Problems are agent-reachable text:
shown escaped, never as markup.
"""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from leash.core.base.text import printable
from leash.core.views.fleet import approval_due

SEVERITIES = (("critical", "bold white on red"), ("high", "bold red"), ("medium", "yellow"), ("low", "dim"))
# (sessions, stopped, halts, warrants, locks, breakers tripped, approvals) in three widths: words, short
# words, none.
LABELS = (("sessions ", "stopped ", "halts ", "warrants ", "locks ", "breakers tripped ", "approvals "),
          ("sess ", "stop ", "halts ", "warr ", "locks ", "trip ", "appr "),
          ("", "■", "", "W", "L", "T", "A"))
APPROVALS_WAITING_STYLE = "bold yellow"
APPROVALS_DUE_STYLE = "bold white on red"
PROBLEM_MARK_LIMIT = 30


def _marker(problem: str) -> str:
    """ "stop state unreadable (...) — run ..." -> "STOP STATE UNREADABLE"."""
    return printable(problem.split(" (")[0].split(" —")[0], limit=PROBLEM_MARK_LIMIT).upper()


def approvals_style(summary: dict, now: float | None) -> str:
    """The colour of the approvals' count: none waiting, some, one due."""
    if not summary.get("approvals"):
        return "dim"
    due = now is not None and approval_due(summary.get("approval_deadline"), now)
    return APPROVALS_DUE_STYLE if due else APPROVALS_WAITING_STYLE


def _counts(summary: dict, labels: tuple[str, ...], gap: str, approvals: str) -> Text:
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
        text.append(("" if index == 0 else " ") + f"{severity[0].upper()}{count}", style=style if count else "dim")
    text.append(gap)
    text.append(f"{labels[3]}{warrants}", style="bold" if warrants else "")
    text.append(gap + f"{labels[4]}{summary.get('locks', 0)}")
    text.append(gap)
    text.append(f"{labels[5]}{tripped}", style="bold red" if tripped else "")
    return text


def summary_text(summary: dict, problems: list[str], width: int = 1000, approvals: str = "") -> Text:
    """The line; ``approvals``: the style of their count (``approvals_style``)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if summary.get("fleet_stopped"):
        text.append(" FLEET STOPPED ", style="bold white on red")
        text.append(" ")
    for problem in problems:
        text.append(f" ⚠ {_marker(problem)} ", style="bold white on dark_orange3")
        text.append(" ")
    room = width - text.cell_len
    for labels, gap in zip(LABELS, ("  ", " ", " "), strict=True):
        counts = _counts(summary, labels, gap, approvals or approvals_style(summary, None))
        if counts.cell_len <= room:
            break
    text.append_text(counts)
    for problem in problems:
        text.append(f"   ⚠ {printable(problem)}", style="bold yellow")
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
