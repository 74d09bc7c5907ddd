"""What the console's symbols stand for, for the help screen: the summary
line's words and letters (``summary.LEGEND``), the Sessions panel's mark
(``sessions.LEGEND``) and the marks of costs and caps (``budget.LEGEND``).
Plain text, never markup."""
from __future__ import annotations

from rich.text import Text

from leash.console.tui.widgets.budget import LEGEND as BUDGET_LEGEND
from leash.console.tui.widgets.sessions import LEGEND as SESSIONS_LEGEND
from leash.console.tui.widgets.summary import LEGEND as SUMMARY_LEGEND


def legend_text() -> Text:
    """Each symbol, a colon, what it stands for; grouped by where it shows."""
    text = Text("\nSymbols\n", style="bold")
    for heading, legend in (("The summary line (its widest wording first)", SUMMARY_LEGEND),
                            ("The Sessions panel", SESSIONS_LEGEND), ("Costs and caps", BUDGET_LEGEND)):
        text.append(f"  {heading}\n", style="italic")
        for symbols, meaning in legend:
            text.append(f"    {symbols}: ", style="bold cyan")
            text.append(f"{meaning}\n")
    return text
