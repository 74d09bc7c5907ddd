"""The soak's terminals: real interactive Claude Code TUIs, a silent agent for
a warrant, and the operator's console, each in a private tmux server.

Each host that gets a TUI (a, b, c) has a tmux server of its own under the
run's folder (``tests/support/e2e/tui.py``'s ``Fleet``: a closed environment, the
project wired by ``leash install``, the model a loopback stand-in playing a
long script of Bash calls, the pane's hooks reaching that host's leashd
through its home). Host a's server also holds ``silent-1`` (a pane that never
answers: the warrant's target, worked by host a's kennel). The console
(``leash console`` at 120x35 on host a's home, in host a's namespace) runs in
a tmux server of its own, as an operator's does. A prompt is typed into each
TUI every 15-30 s, as a person does.

Without Claude Code cached under .cache/claude-code (``make e2e`` fills it)
there are no TUIs: host a's server holds the silent pane only.

Failure: a TUI or console that does not draw in time raises (the run's
cleanup still closes every server); a prompt that cannot be typed is counted
in ``problems``, not raised.
"""
from __future__ import annotations

import random
import threading
import time
from pathlib import Path

CONSOLE_WIDTH, CONSOLE_HEIGHT = 120, 35
CONSOLE_DRAWN = "Pending halts"   # a panel title the console draws once it runs
SILENT = "silent-1"
SCRIPT_TURNS = 400


def claude_cached() -> list[str] | None:
    """The pinned Claude Code's argv when ``make e2e`` has cached it, else None."""
    from tests.support.e2e import harness

    found = harness.installed(harness.PINNED_VERSION)
    return found[0] if found else None


def tmux_socket(root: Path) -> Path:
    """Host a's tmux server (its config names it, for the kennel and the CLI)."""
    return root / "tui-a" / "tmux.sock"


def script() -> list[list[dict]]:
    """Model replies for a long session: a Bash call, then a line of text, again and again."""
    from tests.support.e2e.standin import bash, text

    turns: list[list[dict]] = []
    for number in range(SCRIPT_TURNS):
        turns += [[bash(f"echo soak step {number}")], [text(f"step {number} done")]]
    return turns


class Screens:
    def __init__(self, fleet, claude: list[str] | None, tuis: int):
        self.fleet, self.claude, self.tuis = fleet, claude, tuis
        self.servers: dict = {}
        self.agents: list = []
        self.console = None
        self.problems: list[str] = []
        self.prompts = 0
        self.typing = threading.Lock()  # one person at the keyboard: the prompts and the stop check take turns
        self.during_stop: list[str] = []  # what each TUI did with a prompt typed during a fleet stop

    def start(self) -> None:
        from tests.support.e2e.tui import Fleet as Server
        from tests.support.e2e.tui import Pane

        hosts = self.fleet.hosts[:self.tuis] if self.claude else []
        for host in hosts or self.fleet.hosts[:1]:
            self.servers[host.name] = Server(self.claude or [], self.fleet.root / f"tui-{host.name}", host.home)
        first = self.servers[self.fleet.hosts[0].name]
        assert first.socket == tmux_socket(self.fleet.root)
        for host in hosts:
            self.agents += [(host, agent) for agent in self.servers[host.name].start([script()])]
        private = first.base / SILENT
        private.mkdir(parents=True, exist_ok=True)
        first._new_session(SILENT, ["sleep", "100000"], cwd=private, env=first._closed_env(private), width=120,
                           height=30)
        private = first.base / "console"
        private.mkdir(parents=True, exist_ok=True)
        from tests.support.e2e.harness import LEASH

        # On host a: inside its namespace, where its database address is reached.
        on_host_a = ["ip", "netns", "exec", self.fleet.hosts[0].namespace]
        # A console that cannot start leaves what it said on the screen a while.
        # Its own tmux server, as an operator's is: leashd refuses a process under an agent's server.
        first._new_session("console", [*on_host_a, "sh", "-c", '"$0" console --no-kennel || sleep 60', LEASH],
                           cwd=private, env=first._closed_env(private), width=CONSOLE_WIDTH, height=CONSOLE_HEIGHT,
                           socket=first.console_server.socket)
        self.console = Pane(first.console_server, "console")  # type: ignore[arg-type]  # a pane uses its tmux only
        try:
            self.console.wait_for(CONSOLE_DRAWN, 60)
        except AssertionError as exc:
            raise RuntimeError(f"the console did not start: {str(exc)[-800:]}") from None

    def prompting(self, done: threading.Event, seed: int) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._prompt, args=(agent, done, random.Random(seed + n)), daemon=True)
                   for n, (_host, agent) in enumerate(self.agents)]
        for thread in threads:
            thread.start()
        return threads

    def _prompt(self, agent, done: threading.Event, rng: random.Random) -> None:
        while not done.wait(rng.uniform(15, 30)):
            with self.typing:
                self.type_prompt(agent)

    def type_prompt(self, agent) -> bool:
        try:
            agent.submit("go on with the next step", timeout=15)
            self.prompts += 1
            return True
        except Exception as exc:  # noqa: BLE001 - a prompt a busy TUI did not take: counted, not fatal
            self.problems.append(f"{agent.fleet.home.name}/{agent.name}: {str(exc).splitlines()[0][:120]}")
            return False

    def stopped_turns(self, reason: str, give_up: float = 20.0) -> list[str]:
        """A prompt typed into every TUI while a fleet stop (its ``reason``)
        holds: its Bash call must not run (no "soak step" result), and leash's
        refusal should show (a tool result or the screen naming the reason).
        Returns the broken lines; what each did goes to ``during_stop``."""
        from tests.support.e2e.tui import squeezed

        broken: list[str] = []
        with self.typing:
            # every TUI's session is agent-1 of its own host's server: known by its host
            before = {host.name: set(agent.tool_results()) for host, agent in self.agents}
            typed = [(host, agent) for host, agent in self.agents if self.type_prompt(agent)]
            waiting = {host.name for host, _agent in typed}
            deadline = time.monotonic() + give_up
            while waiting and time.monotonic() < deadline:
                for host, agent in typed:
                    new = set(agent.tool_results()) - before[host.name]
                    if any("soak step" in result for result in new) and host.name in waiting:
                        broken.append(f"stop held: the Claude Code on host {host.name} ran a Bash call while "
                                      f"the fleet stop ({reason}) held")
                        waiting.discard(host.name)
                    elif host.name in waiting and (any(reason in result for result in new)
                                                    or squeezed(reason) in squeezed(agent.screen())):
                        self.during_stop.append(f"{host.name}: refused")
                        waiting.discard(host.name)
                time.sleep(0.5)
            self.during_stop += [f"{name}: no refusal seen in {give_up:g} s" for name in sorted(waiting)]
        return broken

    # -- the console ---------------------------------------------------------
    def shows(self, text: str) -> bool:
        return self.console is not None and text in self.console.screen()

    def until_console(self, text: str, present: bool, since: float, give_up: float = 5.0) -> float | None:
        """Seconds from ``since`` until the console shows (or no longer shows) ``text``; None: not in time."""
        while time.monotonic() - since < give_up:
            if self.shows(text) == present:
                return time.monotonic() - since
            time.sleep(0.03)
        return None

    # -- what the TUIs did ---------------------------------------------------
    def tui_lines(self) -> tuple[list[str], list[str]]:
        """(figures, broken): each TUI's tool results, and a TUI gone or without any."""
        figures, broken = [], []
        for host, agent in self.agents:
            results = agent.tool_results()
            refused = sum("soak op" in result or "leash" in result for result in results)
            figures.append(f"TUI {host.name}/{agent.name}: {len(results)} tool results, {refused} refused by leash, "
                           f"{len(agent.standin.model_requests)} model requests")
            if not agent.alive():
                broken.append(f"TUIs: the Claude Code on host {host.name} is gone")
            elif not results:
                broken.append(f"TUIs: the Claude Code on host {host.name} ran no tool call")
        return figures, broken

    def close(self) -> None:
        for server in self.servers.values():
            server.close()
