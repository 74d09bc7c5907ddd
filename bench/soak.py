"""``make soak``: fifty agents on five hosts, one PostgreSQL, under faults.

Five hosts (a..e), each a network namespace of its own with a veth link to
the database's namespace, each running ``leash daemon`` on its own home with
``[store] url`` on that link; one throwaway PostgreSQL listening on the
database side of those links only. Simulated Claude Code agents spread over
the hosts speak the hook protocol as the thin hook does (``soak_agents``),
real interactive Claude Code TUIs join them when Claude Code is cached, an
operator acts on every host every 30 s (``soak_operator``),
and at known fractions of the run the faults come (``soak_faults``):
PostgreSQL restarted, one leashd SIGKILLed and restarted, one SIGSTOPped, one
host's link to the database cut, one home's disk full. Invariants are checked
(``soak_checks``); any broken is a line naming it and exit 1. The figures are
printed at the end.

``--minutes N`` (default 30). ``--smoke``: two hosts, a handful of simulated
agents, no TUIs, about 40 s, every invariant still checked: it shows the soak
works, its figures mean nothing.

Where network namespaces cannot be made (not root, no ``ip``) the run prints
one line, "soak: skipped: ...", and exits 0. Everything it made (namespaces,
veths, the tmpfs, tmux servers, PostgreSQL, temporary folders) is removed at
the end, on failure and on Ctrl-C too.
"""
from __future__ import annotations

import argparse
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/ holds scripts named like standard modules (secrets.py): not on the path first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))

from soak_agents import Call, Recorder, SimulatedAgent, hook, outcome_of, start_agents  # noqa: E402
from soak_faults import Faults, budget_cap  # noqa: E402
from soak_hosts import STOPPING, CannotIsolate, Fleet, cpu_and_rss, tree_cpu_and_rss  # noqa: E402
from soak_operator import Operator, environment  # noqa: E402
from soak_report import report, report_faults, report_screens  # noqa: E402
from soak_screens import SILENT, Screens, claude_cached, tmux_socket  # noqa: E402

CAP = "soak-fleet"
CAP_LIMIT_USD = 1000.0  # reached only when the run pushes spend over it (at ``BUDGET_AT``)
BUDGET_AT = 0.5  # the fraction of the run at which the fleet's spend goes over the cap
WARRANT_AT = 0.3  # ... at which a warrant is filed on the silent agent
WARRANT_TIMEOUTS = "[2, 4, 8]"  # the kennel's waits for an answer (default 60, 120, 240 s)
WARRANT_GIVE_UP_SECONDS = 40.0  # the gates and the kennel's turns take about 15 s
APPROVAL_WAIT_SECONDS = 60


@dataclass
class Form:
    hosts: list[str]
    simulated: int
    seconds: float
    pace: tuple[float, float]
    round_seconds: float
    hold_seconds: float
    fault_scale: float   # 1: SIGSTOP 30 s, link down 20 s, disk full 20 s
    probe_seconds: float
    tuis: int


def form_of(options) -> Form:
    if options.smoke:
        return Form(["a", "b"], 6, 26.0, (1.0, 3.0), 6.0, 1.0, 0.15, 0.2, 0)
    seconds = options.minutes * 60
    return Form(["a", "b", "c", "d", "e"], 47, seconds, (2.0, 10.0), 30.0, 3.0,
                max(0.25, min(1.0, options.minutes / 10)), 0.25, 3)


def config_text() -> str:
    return (f'[approvals]\nask = ["Bash(git push*)"]\ntimeout_s = {APPROVAL_WAIT_SECONDS}\n'
            f'[[budget.cap]]\nname = "{CAP}"\nscope = "fleet"\nperiod = "total"\nlimit_usd = {CAP_LIMIT_USD:g}\n')


class Probes:
    """A probe session per host, a PreToolUse every ``every`` seconds: when a host refuses, and for how long."""

    def __init__(self, fleet: Fleet, every: float):
        self.fleet, self.every = fleet, every
        self.recorder = Recorder()

    def run(self, host, done: threading.Event) -> None:
        env = {"LEASH_SOCKET": host.agent_socket, "HOME": "/", "USER": "root"}
        payload = {"session_id": f"probe-{host.name}", "cwd": "/", "hook_event_name": "PreToolUse",
                   "tool_name": "Bash", "tool_input": {"command": "true"}}
        while not done.is_set():
            sent = time.monotonic()
            try:
                outcome, detail = outcome_of("pre-tool-use", *hook("pre-tool-use", payload, home=str(host.home),
                                                                   env=env))
            except Exception as exc:  # noqa: BLE001 - recorded, as an agent's call is
                outcome, detail = "error", str(exc)
            self.recorder.add(Call(host.name, payload["session_id"], "pre-tool-use", "Bash", "true", sent,
                                   time.monotonic(), outcome, detail[:200], 0.0))
            done.wait(self.every)

    def start(self, done: threading.Event) -> list[threading.Thread]:
        threads = [threading.Thread(target=self.run, args=(host, done), daemon=True) for host in self.fleet.hosts]
        for thread in threads:
            thread.start()
        return threads


class Usage:
    """CPU and peak RSS of each leashd (over its restarts) and of PostgreSQL, sampled from /proc."""

    def __init__(self, fleet: Fleet):
        self.fleet = fleet
        self.cpu: dict[str, dict[int, float]] = {}
        self.rss: dict[str, int] = {}

    def sample(self) -> None:
        seen = [(f"leashd {h.name}", h.daemon.pid, cpu_and_rss) for h in self.fleet.hosts if h.daemon]
        pid = self.fleet.postmaster_pid()
        if pid:
            seen.append(("PostgreSQL", pid, tree_cpu_and_rss))
        for name, pid, read in seen:
            cpu, rss = read(pid)
            if rss:
                self.cpu.setdefault(name, {})[pid] = cpu
                self.rss[name] = max(self.rss.get(name, 0), rss)

    def run(self, done: threading.Event) -> None:
        while not done.is_set():
            self.sample()
            done.wait(2.0)

    def lines(self, seconds: float) -> list[str]:
        return [f"{name}: CPU {sum(by_pid.values()) / seconds * 100:.1f} % of a core, peak RSS "
                f"{self.rss[name] / 2 ** 20:.0f} MiB" for name, by_pid in sorted(self.cpu.items())]


def first_host_config(root: Path) -> str:
    return f'[tmux]\nsocket = "{tmux_socket(root)}"\n[warrants]\ntimeouts = {WARRANT_TIMEOUTS}\n'


class Warrant:
    """The warrant on the silent agent: filed through host a, worked by its kennel; when the pane went."""

    def __init__(self):
        self.filed: float | None = None
        self.gone_after: float | None = None
        self.said = ""

    def file(self, operator, host, screens) -> None:
        ack = operator.act(host, "warrant", SILENT, "warrant", "file", SILENT)
        self.said = operator.said
        if ack is None or screens.console is None:
            return
        self.filed = ack.acked
        silent = type(screens.console)(screens.servers[host.name], SILENT)  # in the agents' server
        threading.Thread(target=self.watch, args=(silent,), daemon=True).start()

    def watch(self, pane) -> None:
        while time.monotonic() - (self.filed or 0) < WARRANT_GIVE_UP_SECONDS and not STOPPING.is_set():
            if not pane.alive():
                self.gone_after = time.monotonic() - (self.filed or 0)
                return
            time.sleep(0.5)

    def wait(self) -> None:
        """Until the kennel's verdict, or the give-up: the run's end may come first."""
        while self.filed is not None and self.gone_after is None and not STOPPING.is_set() and \
                time.monotonic() - self.filed < WARRANT_GIVE_UP_SECONDS:
            time.sleep(0.5)


def soak(form: Form, fleet: Fleet, seed: int, screens: Screens) -> int:
    rng = random.Random(seed)
    fleet.isolate()
    fleet.start_postgres()
    fleet.make_homes()
    for host in fleet.hosts:
        fleet.start_daemon(host)
    if form.tuis and screens.claude is None:
        print(f"soak: Claude Code is not cached under .cache/claude-code (make e2e caches it): "
              f"{form.simulated + form.tuis} simulated agents, no TUIs", flush=True)
        form.simulated += form.tuis
    screens.start()
    print(f"soak: {len(fleet.hosts)} hosts ({', '.join(h.name for h in fleet.hosts)}), PostgreSQL on their links, "
          f"{form.simulated} simulated agents, {len(screens.agents)} Claude Code TUIs, the console on host "
          f"{fleet.hosts[0].name}, {form.seconds:g} s", flush=True)
    recorder = Recorder()
    (fleet.root / "transcripts").mkdir()
    agents = [SimulatedAgent(i, fleet.hosts[i % len(fleet.hosts)], fleet.root / "projects",
                             fleet.root / "transcripts", recorder, seed=seed, approval_wait=APPROVAL_WAIT_SECONDS,
                             pace=form.pace) for i in range(form.simulated)]
    done = threading.Event()
    operator = Operator(fleet, agents, env=environment())
    operator.screens = screens
    warrant = Warrant()
    probes = Probes(fleet, form.probe_seconds)
    usage = Usage(fleet)
    started = time.monotonic()
    threads = start_agents(agents, done) + probes.start(done) + screens.prompting(done, seed)
    threads.append(threading.Thread(target=operator.answer_approvals, args=(done, fleet.hosts[0]), daemon=True))
    threads.append(threading.Thread(target=usage.run, args=(done,), daemon=True))
    for thread in threads[-2:]:
        thread.start()
    faults = Faults(fleet, form.fault_scale)
    budget = None
    rounds = 0
    try:
        # to the run's end, and on while a fault or the cap is still to come (a slow machine falls behind)
        while time.monotonic() - started < form.seconds or len(faults.done) < len(faults.plan) or budget is None:
            next_round = started + (rounds + 1) * form.round_seconds
            next_fault = min((started + f.at * form.seconds for f in faults.plan if f not in faults.done),
                             default=float("inf"))
            if budget is None:
                next_fault = min(next_fault, started + BUDGET_AT * form.seconds)
            if STOPPING.wait(max(0.0, min(next_round, next_fault, started + form.seconds) - time.monotonic())):
                raise KeyboardInterrupt
            fraction = (time.monotonic() - started) / form.seconds
            for fault in faults.due(fraction):
                print(f"fault: {fault.name} ({fault.end - fault.start:.1f} s)", flush=True)
            if warrant.filed is None and fraction >= WARRANT_AT:
                warrant.file(operator, fleet.hosts[0], screens)
            if budget is None and fraction >= BUDGET_AT:
                budget = budget_cap(fleet, agents[0], operator, CAP, form.hold_seconds)
            if STOPPING.is_set():
                raise KeyboardInterrupt
            if time.monotonic() >= next_round and fraction < 1:
                operator.round(rng, skip=set(), hold_seconds=form.hold_seconds, fleet_stop=rounds % 2 == 0)
                rounds += 1
        warrant.wait()
    finally:
        done.set()
    wall = time.monotonic() - started
    give_up = time.monotonic() + max(agent.limits["pre-tool-use"] for agent in agents) + 5
    for thread in threads:
        thread.join(timeout=max(0.1, give_up - time.monotonic()))
    in_flight = sum(thread.is_alive() for thread in threads)
    broken = report(form, fleet, operator, recorder.snapshot(), usage, wall, in_flight, rounds, faults)
    broken += report_faults(faults, budget, probes.recorder.snapshot(), recorder.snapshot())
    broken += report_screens(operator, screens, warrant)
    for line in broken[:40]:
        print(f"INVARIANT BROKEN: {line}")
    print(f"soak: {'FAILED, ' + str(len(broken)) + ' broken' if broken else 'every invariant held'}")
    return 1 if broken else 0


def interrupted(*_) -> None:
    """Ctrl-C or SIGTERM: the run's waits end and it goes to its cleanup (never a
    KeyboardInterrupt raised in the middle of a step, which would leave it half done)."""
    STOPPING.set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the run lasts (default 30)")
    parser.add_argument("--smoke", action="store_true", help="the smallest form, about 25 s (figures mean nothing)")
    parser.add_argument("--seed", type=int, default=1, help="the random pacing's seed")
    parser.add_argument("--logs", metavar="DIR", help="copy each leashd's log and PostgreSQL's there before cleanup")
    options = parser.parse_args()
    form = form_of(options)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    fleet = Fleet(form.hosts, config=config_text(), disk_host=form.hosts[-1])
    fleet.first_host_config = first_host_config(fleet.root)
    screens = Screens(fleet, claude_cached() if form.tuis else None, form.tuis)
    status = 1
    try:
        status = soak(form, fleet, options.seed, screens)
    except CannotIsolate as exc:
        print(f"soak: skipped: cannot create network namespaces ({exc})")
        status = 0
    except KeyboardInterrupt:
        print("soak: interrupted; cleaning up")
        status = 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):  # cleanup runs to its end, a second Ctrl-C or not
            signal.signal(sig, signal.SIG_IGN)
        if options.logs:
            fleet.keep_logs(Path(options.logs))
        screens.close()
        for problem in fleet.close():
            print(f"soak: cleanup: {problem}")
    return status


if __name__ == "__main__":
    sys.exit(main())
