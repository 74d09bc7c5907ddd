"""The header line that sums up the fleet (problems shown escaped, never as markup)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from core.text import printable


def summary_text(summary: dict, problems: list[str]) -> Text:
    text = Text()
    if summary.get("fleet_stopped"):
        text.append(" FLEET STOPPED ", style="bold white on red")
        text.append("  ")
    text.append(f"sessions {summary.get('sessions', 0)}", style="bold")
    stopped = summary.get("stopped", 0)
    text.append(f"  stopped {stopped}", style="bold red" if stopped else "")
    halts = summary.get("halts", {})
    text.append("  halts ")
    for severity, style in (("critical", "bold white on red"), ("high", "bold red"), ("medium", "yellow"),
                            ("low", "dim")):
        count = halts.get(severity, 0)
        text.append(f"{severity[0].upper()}{count}", style=style if count else "dim")
        text.append(" ")
    text.append(f" warrants {summary.get('warrants', 0)}", style="bold" if summary.get("warrants") else "")
    text.append(f"  locks {summary.get('locks', 0)}")
    tripped = summary.get("breakers_tripped", 0)
    text.append(f"  breakers tripped {tripped}", style="bold red" if tripped else "")
    for problem in problems:
        text.append(f"   ⚠ {printable(problem)}", style="bold yellow")
    return text


class SummaryBar(Static):
    _shown = None

    def show(self, summary: dict, problems: list[str]) -> None:
        text = summary_text(summary, problems)
        if text != self._shown:
            self._shown = text
            self.update(text)
