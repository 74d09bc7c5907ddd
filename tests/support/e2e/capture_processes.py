"""Re-find the process facts of tests/e2e/agents/PROCESS_FACTS.md: which process of the Gemini
CLI and of the Codex CLI runs the hooks and the tools, headless and as an
interactive TUI in a tmux pane, and what cancels a tool call in flight.

Run from the repository: ``.venv/bin/python -m tests.support.e2e.capture_processes``
(``--only gemini`` or ``--only codex``, ``--codex-versions 0.169.0,0.171.0``,
``--raw`` to print every ancestry dump in full).

How: every CLI runs against its loopback stand-in (``gemini_standin``,
``codex_standin``) with a command hook on the gating event (Gemini
``BeforeTool``, Codex ``PreToolUse``) whose command is ``DUMP`` (a small Python
script written into the temporary folder): it writes its own ancestry (pid,
ppid, pgid, sid, tty, ``/proc/<pid>/comm``, the NUL-split cmdline, the ``exe``
link) up to pid 1 as JSON. The scripted model then calls the shell tool with
``<python> DUMP tool DIR; sleep 60; echo done > marker``, so the tool's shell
dumps its ancestry too and then waits; the ``sleep 60`` is found in /proc by
its working directory (the experiment's project folder) and the interrupt
under test is applied: SIGINT to one process of a headless run, or a key
(``Escape``, ``C-c``) pressed in the TUI's pane of a private tmux server
(``tmux -S <tmp>/tmux.sock -f /dev/null``). What is measured: how long the
``sleep`` lives on after it, whether the run ends (exit code), whether the
marker gets written, what the screen shows after, and whether the TUI takes
the next prompt.

Only one CLI runs at a time. Everything started is under one temporary folder
in /dev/shm; at the end (and after each Codex TUI, whose app-server daemon
outlives the TUI) every process whose command line, working directory or
executable lies in that folder is ended by pid, the tmux server is killed and
the folder removed. Codex's daemon makes a socket in ``/tmp/codex-daemon-<uid>``;
entries that were not there before are removed, and the folder too when it
was not there before and is empty.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from tests.support.e2e import codex_cli, gemini_cli
from tests.support.e2e import codex_standin as cs
from tests.support.e2e import gemini_standin as gs
from tests.support.e2e.panes import POLL, PaneServer
from tests.support.waiting import eventually

PYTHON = sys.executable
SLEEP_SECONDS = 60  # the long call's sleep: anything that ends it early was the interrupt
CALL_START_SECONDS = 90  # for the long call's sleep to appear
WATCH_SECONDS = 15  # how long the effect of a signal or key is watched
CODEX_DAEMON_DIR = Path(f"/tmp/codex-daemon-{os.getuid()}")
# What is recorded of a process's environment when the dump reads it.
ENV_NAMES = ("GEMINI_CLI_NO_RELAUNCH", "TMUX_PANE", "CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_PACKAGE_ROOT",
             "CODEX_THREAD_ID", "CODEX_SANDBOX", "CODEX_CI")

DUMP = r'''
import json, os, sys
label, out = sys.argv[1], sys.argv[2]
def read(path, binary=False):
    try:
        with open(path, "rb") as f:
            data = f.read()
        return data if binary else data.decode("utf-8", "replace")
    except OSError:
        return None
def info(pid):
    stat = read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    close = stat.rfind(")")
    fields = stat[close + 2:].split()
    cmdline = read(f"/proc/{pid}/cmdline", True) or b""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError as exc:
        exe = f"? {exc.strerror}"
    return {"pid": pid, "ppid": int(fields[1]), "pgid": int(fields[2]), "sid": int(fields[3]),
            "tty_nr": int(fields[4]), "comm": (read(f"/proc/{pid}/comm") or "").rstrip("\n"),
            "argv": [w.decode("utf-8", "replace") for w in cmdline.split(b"\0") if w], "exe": exe}
chain, pid = [], os.getpid()
while pid > 0:
    entry = info(pid)
    if entry is None:
        break
    chain.append(entry)
    if pid == 1:
        break
    pid = entry["ppid"]
payload = None
if label == "hook":
    try:
        payload = json.loads(sys.stdin.read() or "null")
    except ValueError:
        payload = "not json"
names = %(names)r
env = {name: os.environ[name] for name in names if name in os.environ}
record = {"label": label, "pid": os.getpid(), "chain": chain, "env": env,
          "event": payload.get("hook_event_name") if isinstance(payload, dict) else None,
          "tool": payload.get("tool_name") if isinstance(payload, dict) else None}
with open(os.path.join(out, f"{label}-{os.getpid()}.json"), "w") as f:
    json.dump(record, f)
''' % {"names": ENV_NAMES}


# ----------------------------------------------------------------- /proc
def read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def proc(pid: int) -> dict | None:
    """What /proc says of ``pid`` (None when it is gone)."""
    stat = read_text(f"/proc/{pid}/stat")
    if stat is None:
        return None
    close = stat.rfind(")")
    fields = stat[close + 2:].split()
    cmdline = read_text(f"/proc/{pid}/cmdline") or ""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = "?"
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = "?"
    return {"pid": pid, "state": fields[0], "ppid": int(fields[1]), "pgid": int(fields[2]), "sid": int(fields[3]),
            "tty_nr": int(fields[4]), "start": int(fields[19]),
            "comm": (read_text(f"/proc/{pid}/comm") or "").rstrip("\n"),
            "argv": [word for word in cmdline.split("\0") if word], "exe": exe, "cwd": cwd}


def alive(pid: int, start: int | None = None) -> bool:
    entry = proc(pid)
    return entry is not None and entry["state"] not in ("Z", "X") and (start is None or entry["start"] == start)


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def environ_of(pid: int) -> dict[str, str]:
    data = read_text(f"/proc/{pid}/environ") or ""
    pairs = [item.split("=", 1) for item in data.split("\0") if "=" in item]
    return {name: value for name, value in pairs if name in ENV_NAMES}


def descendants(root: int) -> list[dict]:
    """Every living process below ``root`` (by ppid), parents first."""
    entries = [entry for entry in map(proc, all_pids()) if entry is not None]
    children: dict[int, list[dict]] = {}
    for entry in entries:
        children.setdefault(entry["ppid"], []).append(entry)
    found, queue = [], [root]
    while queue:
        for entry in children.get(queue.pop(0), []):
            found.append(entry)
            queue.append(entry["pid"])
    return found


def find_sleep(project: Path, seconds: int = SLEEP_SECONDS) -> dict | None:
    """The long call's ``sleep SECONDS``: found by its working directory (each
    call of one experiment sleeps a different number of seconds)."""
    for pid in all_pids():
        entry = proc(pid)
        if entry and entry["argv"] == ["sleep", str(seconds)] and entry["cwd"] == str(project) \
                and entry["state"] != "Z":
            return entry
    return None


def short(entry: dict, width: int = 150) -> str:
    argv = " ".join(entry["argv"])
    if len(argv) > width:
        argv = argv[:width] + "…"
    tty = f" tty={entry['tty_nr']}" if entry.get("tty_nr") else ""
    return (f"pid={entry['pid']} comm={entry['comm']!r} pgid={entry['pgid']} sid={entry['sid']}{tty} "
            f"exe={entry['exe']} argv={argv}")


# ----------------------------------------------------------------- Codex's daemon folder
class CodexDaemonDir:
    """``CODEX_DAEMON_DIR`` as it was when made: what has been added to it
    since, and their removal (with the folder, when it was not there)."""

    def __init__(self) -> None:
        self.existed = CODEX_DAEMON_DIR.exists()
        self.entries = set(os.listdir(CODEX_DAEMON_DIR)) if self.existed else set()

    def added(self) -> list[str]:
        if not CODEX_DAEMON_DIR.exists():
            return []
        return sorted(set(os.listdir(CODEX_DAEMON_DIR)) - self.entries)

    def remove(self, names: list[str]) -> None:
        """``names`` removed from the folder; then the folder, when it was not there before and is empty."""
        for name in names:
            try:
                (CODEX_DAEMON_DIR / name).unlink()
            except OSError:
                pass
        if not self.existed:
            try:
                CODEX_DAEMON_DIR.rmdir()
            except OSError:
                pass


# ----------------------------------------------------------------- the lab
class Lab(PaneServer):
    """The temporary folder, the private tmux server (its panes: ``PaneServer``), and cleanup of all of it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="leash-procs-", dir="/dev/shm"))
        # what fails is reported, not raised: a tmux command that fails returns, a screen never shown is None
        super().__init__(self.root, check=False, error=RuntimeError, screen_seconds=40, screen_required=False)
        self.dump = self.root / "dump.py"
        self.dump.write_text(DUMP)
        self.daemon_dir = CodexDaemonDir()
        self.popens: list[subprocess.Popen] = []
        self.counter = 0
        self.report: list[str] = []

    def folder(self, name: str) -> Path:
        self.counter += 1
        path = self.root / f"{self.counter:02d}-{name}"
        path.mkdir()
        return path

    def say(self, line: str = "") -> None:
        print(line, flush=True)
        self.report.append(line)

    # ------------------------------------------------------------- processes
    def start(self, argv: list[str], *, cwd: Path, env: dict[str, str], out: Path) -> subprocess.Popen:
        stdout, stderr = open(out / "stdout", "w"), open(out / "stderr", "w")
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                   start_new_session=True)
        stdout.close(), stderr.close()
        self.popens.append(process)
        return process

    def ours(self) -> list[dict]:
        """Living processes whose command line, working directory or executable is in our folder."""
        mine = str(self.root)
        found = []
        for pid in all_pids():
            if pid == os.getpid():
                continue
            entry = proc(pid)
            if entry is None or entry["state"] == "Z":
                continue
            if mine in entry["cwd"] or mine in entry["exe"] or any(mine in word for word in entry["argv"]):
                found.append(entry)
        return found

    def sweep(self) -> list[str]:
        """End every process of ours (SIGTERM, then SIGKILL), by pid and start time."""
        ended = []
        for process in self.popens:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                process.wait()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            victims = [entry for entry in self.ours() if "tmux" not in entry["comm"]]
            for entry in victims:
                if alive(entry["pid"], entry["start"]):
                    try:
                        os.kill(entry["pid"], sig)
                        ended.append(f"{entry['pid']} {entry['comm']} ({signal.Signals(sig).name})")
                    except (ProcessLookupError, PermissionError):
                        pass
            if victims:
                eventually(lambda group=victims: not [e for e in group if alive(e["pid"], e["start"])], 5,
                           interval=POLL)
        return ended

    def close(self) -> None:
        self.sweep()
        self.tmux("kill-server")
        eventually(lambda: not [e for e in self.ours() if e["state"] != "Z"], 5, interval=POLL)
        self.daemon_dir.remove(self.daemon_dir.added())
        shutil.rmtree(self.root, ignore_errors=True)


# ----------------------------------------------------------------- reading dumps
def dumps(folder: Path) -> list[dict]:
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass
    return found


def trimmed_chain(record: dict, stop_pids: set[int]) -> list[dict]:
    """The dump's chain from the dumping process up to (and with) the first of
    ``stop_pids`` (the pane's shell, the driver), or to pid 1."""
    out = []
    for entry in record["chain"]:
        out.append(entry)
        if entry["pid"] in stop_pids:
            break
    return out


def show_chain(lab: Lab, title: str, record: dict | None, stop_pids: set[int], raw: bool) -> None:
    if record is None:
        lab.say(f"  {title}: NO DUMP (the hook or tool did not run)")
        return
    lab.say(f"  {title} (dumping process first; env {record['env']}):")
    chain = record["chain"] if raw else trimmed_chain(record, stop_pids)
    for entry in chain:
        lab.say("    " + short(entry))


def chain_pids(record: dict | None) -> list[int]:
    return [entry["pid"] for entry in record["chain"]] if record else []


def lowest_common(hook: dict | None, tool: dict | None) -> dict | None:
    """The nearest process both the hook and the tool run below."""
    if not hook or not tool:
        return None
    tool_pids = set(chain_pids(tool))
    for entry in hook["chain"][1:]:
        if entry["pid"] in tool_pids:
            return entry
    return None


def watch(sleep: dict, process: subprocess.Popen | None, seconds: float = WATCH_SECONDS,
          pane_alive: Callable[[], bool] | None = None) -> dict:
    """After an interrupt at now: when the sleep died, when (and how) the run ended."""
    start = time.monotonic()
    result: dict = {"sleep_died_after": None, "exited_after": None, "returncode": None}
    while time.monotonic() - start < seconds:
        now = time.monotonic() - start
        if result["sleep_died_after"] is None and not alive(sleep["pid"], sleep["start"]):
            result["sleep_died_after"] = round(now, 2)
        if process is not None and result["exited_after"] is None and process.poll() is not None:
            result["exited_after"], result["returncode"] = round(now, 2), process.returncode
        if result["sleep_died_after"] is not None and (process is None or result["exited_after"] is not None):
            break
        time.sleep(POLL)
    return result


def tail(path: Path, lines: int = 8) -> str:
    text = read_text(str(path)) or ""
    return "\n".join("      " + line[:220] for line in text.strip().splitlines()[-lines:])


def long_call(lab: Lab, dump_dir: Path, marker: Path, index: int = 0) -> str:
    return f"{PYTHON} {lab.dump} tool {dump_dir}; sleep {SLEEP_SECONDS + index}; echo done > {marker}"


def hook_command(lab: Lab, dump_dir: Path) -> str:
    return f"{PYTHON} {lab.dump} hook {dump_dir}"


def agent_candidates(record: dict | None, program: str) -> list[dict]:
    """The processes of the dump's chain that are the CLI (node or codex), with the
    environment names that tell them apart (read from /proc while they live)."""
    out = []
    for entry in (record or {}).get("chain", []):
        if entry["comm"] in ("node", "MainThread", "codex", "gemini") or program in " ".join(entry["argv"][:2]):
            out.append(dict(entry, environ=environ_of(entry["pid"])))
    return out


# ----------------------------------------------------------------- Gemini
def gemini_settings(lab: Lab, home: Path, dump_dir: Path) -> None:
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    hooks = {"BeforeTool": [{"matcher": ".*", "hooks": [{"type": "command", "name": "dump-ancestry",
                                                         "command": hook_command(lab, dump_dir),
                                                         "timeout": 20000}]}]}
    (folder / "settings.json").write_text(json.dumps({"hooks": hooks}))


def gemini_headless(lab: Lab, exe: Path, target: str, raw: bool) -> dict:
    """``gemini -p`` with a long shell call; SIGINT to ``target`` (``child``: the
    relaunched node, ``parent``: the node started first)."""
    base = lab.folder(f"gemini-headless-{target}")
    home, project, dump_dir = base / "home", base / "project", base / "dumps"
    for path in (home, project, dump_dir):
        path.mkdir()
    marker = project / "marker"
    gemini_settings(lab, home, dump_dir)
    gemini_cli.prepare_home(home, project)
    result: dict = {"mode": "headless", "target": target}
    with gs.GeminiStandin([gs.shell(long_call(lab, dump_dir, marker)), gs.text("finished")]) as api:
        env = gemini_cli.gemini_env(home, api.url)
        env["PATH"] = f"{exe.parent}:{env['PATH']}"
        process = lab.start(["gemini", "-p", "run the long command", *gemini_cli.HEADLESS_ARGS], cwd=project,
                            env=env, out=base)
        sleep = eventually(lambda: find_sleep(project), CALL_START_SECONDS, interval=POLL)
        if sleep is None:
            lab.say(f"  gemini headless ({target}): the long call never started; stderr:\n{tail(base / 'stderr')}")
            return result
        tree = [process.pid] + [e["pid"] for e in descendants(process.pid)]
        parent = proc(process.pid)
        child = next((e for e in descendants(process.pid) if e["ppid"] == process.pid), None)
        records = dumps(dump_dir)
        hook = next((r for r in records if r["label"] == "hook"), None)
        tool = next((r for r in records if r["label"] == "tool"), None)
        lab.say(f"\n== Gemini {exe.parent.parent.parent.name} headless, SIGINT to the {target} node ==")
        show_chain(lab, "BeforeTool hook ancestry", hook, {os.getpid()}, raw)
        show_chain(lab, "shell tool ancestry", tool, {os.getpid()}, raw)
        lab.say("  sleep: " + short(sleep))
        common = lowest_common(hook, tool)
        lab.say("  nearest process above both hook and tool: " + (short(common) if common else "none"))
        for entry in (parent, child):
            if entry:
                lab.say(f"  {'parent' if entry is parent else 'child '} node: {short(entry)} "
                        f"environ={environ_of(entry['pid'])}")
        victim = child if target == "child" else parent
        t0 = time.monotonic()
        os.kill(victim["pid"], signal.SIGINT)
        seen = watch(sleep, process, seconds=8 if target == "parent" else WATCH_SECONDS)
        result.update(seen)
        lab.say(f"  SIGINT to pid {victim['pid']}: sleep died after {seen['sleep_died_after']} s; "
                f"run exited after {seen['exited_after']} s with {seen['returncode']}")
        if target == "parent":
            child_alive = child is not None and alive(child["pid"], child["start"])
            lab.say(f"  after 8 s: parent alive={process.poll() is None}, child alive={child_alive}, "
                    f"sleep alive={alive(sleep['pid'], sleep['start'])}")
            if child_alive:
                os.kill(child["pid"], signal.SIGINT)
                again = watch(sleep, process)
                lab.say(f"  then SIGINT to the child: sleep died after {again['sleep_died_after']} s; "
                        f"run exited after {again['exited_after']} s with {again['returncode']}")
        lab.say(f"  marker written: {marker.exists()} (checked {time.monotonic() - t0:.1f} s after the signal)")
        if process.poll() is None:
            lab.say("  (still running: killed)")
        leftovers = [e for e in map(proc, tree) if e and e["state"] != "Z"]
        lab.say(f"  processes of the run still alive: {[short(e, 60) for e in leftovers]}")
        lab.say(f"  stdout tail:\n{tail(base / 'stdout', 3)}\n  stderr tail:\n{tail(base / 'stderr', 3)}")
    lab.sweep()
    return result


def tui_interrupt(lab: Lab, pane: str, project: Path, key: str, label: str, *, driver: set[int],
                  dump_dir: Path, raw: bool, index: int) -> dict:
    """With the long call ``index`` running in the pane's TUI, press ``key`` and watch."""
    result: dict = {"key": key}
    sleep = eventually(lambda: find_sleep(project, SLEEP_SECONDS + index), CALL_START_SECONDS, interval=POLL)
    result["sleep"] = sleep
    if sleep is None:
        lab.say(f"  {label}: the long call never started; screen:\n{lab.screen(pane)}")
        return result
    time.sleep(1.0)  # let the TUI draw the running call
    records = dumps(dump_dir)
    result["records"] = records
    hook = next((r for r in records if r["label"] == "hook" and r["pid"] not in driver), None)
    tool = next((r for r in records if r["label"] == "tool" and r["pid"] not in driver), None)
    driver.update(r["pid"] for r in records)  # the next call's dumps are the new ones
    pane_pid = lab.pane_pid(pane)
    stops = {pane_pid, os.getpid()}
    show_chain(lab, "hook ancestry", hook, stops, raw)
    show_chain(lab, "shell tool ancestry", tool, stops, raw)
    lab.say("  sleep: " + short(sleep))
    common = lowest_common(hook, tool)
    lab.say("  nearest process above both hook and tool: " + (short(common) if common else "none"))
    below = descendants(pane_pid)
    lab.say("  processes below the pane's shell " + str(pane_pid) + ":")
    for entry in below:
        lab.say("    " + short(entry, 110))
    hook_pids = set(chain_pids(hook))
    lab.say(f"  the hook runs below the pane's shell: {pane_pid in hook_pids}; "
            f"the tool runs below it: {pane_pid in set(chain_pids(tool))}")
    before = lab.screen(pane)
    lab.say("  screen while the call runs (tail):")
    for line in [line for line in before.rstrip().splitlines() if line.strip()][-8:]:
        lab.say("    | " + line.rstrip()[:118])
    lab.keys(pane, key)
    seen = watch(sleep, None)
    result.update(seen)
    time.sleep(1.5)
    after = lab.screen(pane)
    ui = [e for e in descendants(pane_pid) if e["comm"] not in ("sleep", "bash")]
    result["tui_alive"] = bool(ui)
    lab.say(f"  {key} pressed: sleep died after {seen['sleep_died_after']} s "
            f"(None = still alive after {WATCH_SECONDS} s); TUI processes still running: {bool(ui)}")
    lab.say("  screen after (non-empty lines, tail):")
    for line in [line for line in after.rstrip().splitlines() if line.strip()][-14:]:
        lab.say("    | " + line.rstrip()[:118])
    return result


def idle_ctrl_c(lab: Lab, pane: str) -> None:
    """C-c at the idle prompt (a few seconds after the last key), then again."""
    pane_pid = lab.pane_pid(pane)

    def running() -> bool:
        return bool([e for e in descendants(pane_pid) if e["comm"] != "bash"])

    if not running():
        return
    time.sleep(3)
    for press in (1, 2):
        lab.keys(pane, "C-c")
        gone = eventually(lambda: not running(), 3, interval=POLL)
        lines = [line.strip() for line in lab.screen(pane).splitlines() if line.strip()]
        lab.say(f" -- C-c number {press} at the idle prompt: TUI quit: {bool(gone)}; screen tail: "
                + " / ".join(lines[-6:])[-400:])
        if gone:
            break


def gemini_tui(lab: Lab, exe: Path, raw: bool) -> None:
    base = lab.folder("gemini-tui")
    home, project, dump_dir = base / "home", base / "project", base / "dumps"
    for path in (home, project, dump_dir):
        path.mkdir()
    gemini_settings(lab, home, dump_dir)
    gemini_cli.prepare_home(home, project)
    with gs.GeminiStandin([]) as api:
        env = gemini_cli.gemini_env(home, api.url)
        env.pop("TERM"), env.pop("NO_COLOR")
        env["PATH"] = f"{exe.parent}:{env['PATH']}"
        pane = lab.new_pane("gemini", project, env)
        lab.say(f"\n== Gemini {exe.parent.parent.parent.name} interactive TUI in tmux pane {pane} ==")
        lab.type_line(pane, "gemini --approval-mode yolo")
        if lab.wait_screen(pane, "Type your message") is None:
            lab.say("  the TUI never showed its input box:\n" + lab.screen(pane))
            return
        driver: set[int] = set()
        for index, key in enumerate(("Escape", "C-c")):
            marker = project / f"marker-{key}"
            api.script([gs.shell(long_call(lab, dump_dir, marker, index)), gs.text(f"after {key}")])
            lab.type_line(pane, f"run the long command {index}")
            lab.say(f" -- long call {index}, then {key}:")
            tui_interrupt(lab, pane, project, key, f"gemini {key}", driver=driver, dump_dir=dump_dir, raw=raw,
                          index=index)
            lab.say(f"  marker written: {marker.exists()}; model requests so far: {len(api.conversation())}, "
                    f"tool results sent: {[gs.response_text(r)[:100] for r in api.tool_results()][-1:]}")
            pane_pid = lab.pane_pid(pane)
            if not [e for e in descendants(pane_pid) if e["comm"] != "bash"]:
                lab.say("  the TUI has quit")
                break
            api.script([gs.text(f"SECOND-PROMPT-OK-{index}")])
            lab.type_line(pane, f"say hello {index}")
            ok = lab.wait_screen(pane, f"SECOND-PROMPT-OK-{index}", 30)
            lab.say(f"  next prompt answered (TUI usable): {ok is not None}")
            if ok is None:
                lab.say("  screen:\n" + lab.screen(pane))
        idle_ctrl_c(lab, pane)
        lab.tmux("kill-session", "-t", "gemini")
    lab.sweep()


# ----------------------------------------------------------------- Codex
CODEX_TUI_SETTINGS = {
    "check_for_update_on_startup": False,
    # the first-run screens of a TUI: the model-upgrade offer and the screen-reader check
    "notice": {"model_migrations": {codex_cli.MODEL: "gpt-6-sol"}},
    "tui": {"screen_reader_detection_done": True, "model_availability_nux": {"gpt-6.1-sol": 1}},
}


def codex_home_for(lab: Lab, base: Path, api: cs.CodexStandin, dump_dir: Path, project: Path) -> Path:
    home = base / "codex-home"
    hooks = {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": hook_command(lab, dump_dir),
                                                         "timeout": 20}]}]}
    settings = json.loads(json.dumps(CODEX_TUI_SETTINGS))
    codex_cli.write_codex_config(home, api.url, hooks, settings=settings, trusted_projects=(project,))
    states = codex_cli.hook_states(home, hooks)
    settings["hooks"] = {"state": states}
    codex_cli.write_codex_config(home, api.url, hooks, settings=settings, trusted_projects=(project,))
    return home


def codex_headless(lab: Lab, version: str, native: Path, via: str, raw: bool) -> dict:
    """``codex exec`` with a long shell call; ``via`` is ``native`` (the binary
    started directly, SIGINT to it) or ``node`` (the npm bin, SIGINT to node)
    or ``node-child`` (the npm bin, SIGINT to the native child)."""
    base = lab.folder(f"codex-{version}-headless-{via}")
    project, dump_dir = base / "project", base / "dumps"
    project.mkdir(), dump_dir.mkdir()
    marker = project / "marker"
    npm_bin = codex_cli.CACHE / version / "node_modules" / ".bin"
    result: dict = {"mode": "headless", "via": via}
    with cs.CodexStandin([cs.shell(long_call(lab, dump_dir, marker)), cs.text("finished")]) as api:
        home = codex_home_for(lab, base, api, dump_dir, project)
        env = codex_cli.codex_env(home, proxy_url=api.proxy_url)
        env["PATH"] = f"{npm_bin}:{env['PATH']}"
        program = str(native) if via == "native" else "codex"
        process = lab.start([program, "exec", *codex_cli.EXEC_ARGS, "run the long command"], cwd=project, env=env,
                            out=base)
        sleep = eventually(lambda: find_sleep(project), CALL_START_SECONDS, interval=POLL)
        lab.say(f"\n== Codex {version} headless `codex exec`, started as {program.rsplit('/', 1)[-1]} "
                f"({'native binary' if via == 'native' else 'npm bin (node wrapper)'}), "
                f"SIGINT to {'node' if via == 'node' else 'the native codex'} ==")
        if sleep is None:
            lab.say(f"  the long call never started; stderr:\n{tail(base / 'stderr')}")
            return result
        records = dumps(dump_dir)
        hook = next((r for r in records if r["label"] == "hook"), None)
        tool = next((r for r in records if r["label"] == "tool"), None)
        show_chain(lab, "PreToolUse hook ancestry", hook, {os.getpid()}, raw)
        show_chain(lab, "shell tool ancestry", tool, {os.getpid()}, raw)
        lab.say("  sleep: " + short(sleep))
        common = lowest_common(hook, tool)
        lab.say("  nearest process above both hook and tool: " + (short(common) if common else "none"))
        first = proc(process.pid)
        native_proc = first if first and first["comm"] == "codex" else next(
            (e for e in descendants(process.pid) if e["comm"] == "codex"), None)
        lab.say(f"  started process: {short(first)} environ={environ_of(process.pid)}")
        if native_proc and native_proc["pid"] != process.pid:
            lab.say(f"  its native child: {short(native_proc)} environ={environ_of(native_proc['pid'])}")
        tree = [process.pid] + [e["pid"] for e in descendants(process.pid)]
        victim = first if via in ("native", "node") else native_proc
        t0 = time.monotonic()
        os.kill(victim["pid"], signal.SIGINT)
        seen = watch(sleep, process)
        result.update(seen)
        lab.say(f"  SIGINT to pid {victim['pid']} ({victim['comm']}): sleep died after {seen['sleep_died_after']} s;"
                f" run exited after {seen['exited_after']} s with {seen['returncode']}")
        if native_proc and native_proc["pid"] != process.pid:
            lab.say(f"  native child alive after: {alive(native_proc['pid'], native_proc['start'])}")
        lab.say(f"  marker written: {marker.exists()} ({time.monotonic() - t0:.1f} s after the signal)")
        leftovers = [e for e in map(proc, tree) if e and e["state"] != "Z"]
        lab.say(f"  processes of the run still alive: {[short(e, 60) for e in leftovers]}")
        events = [json.loads(line) for line in (read_text(str(base / "stdout")) or "").splitlines()
                  if line.startswith("{")]
        lab.say(f"  --json event types: {[e.get('type') for e in events]}")
        lab.say(f"  stderr tail:\n{tail(base / 'stderr', 3)}")
    lab.sweep()
    return result


def codex_step(lab: Lab, api: cs.CodexStandin, pane: str, project: Path, dump_dir: Path, key: str, index: int,
               driver: set[int], raw: bool) -> bool:
    """One long call in the Codex TUI of ``pane`` interrupted by ``key``; when its
    ``sleep`` outlives the key, ``/stop`` is typed. Returns whether the TUI still runs."""
    marker = project / f"marker-{index}"
    api.script([cs.shell(long_call(lab, dump_dir, marker, index)), cs.text(f"after {key}")])
    lab.type_line(pane, f"run the long command {index}")
    if eventually(lambda: find_sleep(project, SLEEP_SECONDS + index), 10, interval=POLL) is None:
        lab.keys(pane, "Enter")  # a TUI just started may miss the first Enter
    lab.say(f" -- long call {index} in pane {pane}, then {key}:")
    result = tui_interrupt(lab, pane, project, key, f"codex {key}", driver=driver, dump_dir=dump_dir, raw=raw,
                           index=index)
    sleep = result.get("sleep")
    pane_pid = lab.pane_pid(pane)
    running = bool([e for e in descendants(pane_pid) if e["comm"] != "bash"])
    if sleep and result.get("sleep_died_after") is None:
        lab.say(f"  the sleep still runs {WATCH_SECONDS} s after {key}: "
                f"{alive(sleep['pid'], sleep['start'])}; its parent now: ppid={(proc(sleep['pid']) or {}).get('ppid')}")
        if running:
            lab.type_line(pane, "/stop")
            stopped = watch(sleep, None)
            lab.say(f"  then `/stop` typed: sleep died after {stopped['sleep_died_after']} s; screen tail: "
                    + " / ".join(line.strip() for line in lab.screen(pane).splitlines() if line.strip())[-300:])
    lab.say(f"  marker written: {marker.exists()}; model requests so far: {len(api.turns)}; "
            f"last tool output: {[t[:120] for t in api.tool_output_texts()][-1:]}")
    if not running:
        lab.say("  the TUI has quit")
        return False
    api.script([cs.text(f"SECOND-PROMPT-OK-{index}")])
    lab.type_line(pane, f"say hello {index}")
    ok = lab.wait_screen(pane, f"SECOND-PROMPT-OK-{index}", 30)
    lab.say(f"  next prompt answered (TUI usable): {ok is not None}")
    if ok is None:
        lab.say("  screen:\n" + lab.screen(pane))
    return True


def codex_tui(lab: Lab, version: str, daemon: bool, raw: bool) -> None:
    base = lab.folder(f"codex-{version}-tui-{'daemon' if daemon else 'nodaemon'}")
    project, dump_dir = base / "project", base / "dumps"
    project.mkdir(), dump_dir.mkdir()
    npm_bin = codex_cli.CACHE / version / "node_modules" / ".bin"
    flags = "--dangerously-bypass-approvals-and-sandbox" + ("" if daemon else " --no-daemon")
    with cs.CodexStandin([]) as api:
        home = codex_home_for(lab, base, api, dump_dir, project)
        env = codex_cli.codex_env(home, proxy_url=api.proxy_url)
        env.pop("TERM"), env.pop("NO_COLOR")
        env["PATH"] = f"{npm_bin}:{env['PATH']}"
        sessions: list[str] = []

        def open_tui(number: int) -> str | None:
            session = f"codex-{version.replace('.', '-')}-{int(daemon)}-{number}"
            sessions.append(session)
            pane = lab.new_pane(session, project, env)
            lab.say(f"\n== Codex {version} interactive TUI #{number} (`codex {flags}`) in tmux pane {pane} ==")
            lab.type_line(pane, f"codex {flags}")
            if lab.wait_screen(pane, "Ask Codex to do anything") is None:
                lab.say("  the TUI never showed its input box:\n" + lab.screen(pane))
                return None
            time.sleep(3)
            return pane

        driver: set[int] = set()
        pane = open_tui(1)
        if pane is not None:
            running = codex_step(lab, api, pane, project, dump_dir, "Escape", 0, driver, raw)
            if running and daemon:
                running = codex_step(lab, api, pane, project, dump_dir, "C-c", 1, driver, raw)
                if running:
                    idle_ctrl_c(lab, pane)
        if daemon:
            daemons = [e for e in lab.ours() if "app-server" in " ".join(e["argv"])]
            lab.say("  app-server processes alive after TUI #1 quit:")
            for entry in daemons:
                lab.say("    " + short(entry, 160) + f" ppid={entry['ppid']}")
            # a second TUI (another pane) while the daemon of the first still runs
            pane = open_tui(2)
            if pane is not None:
                codex_step(lab, api, pane, project, dump_dir, "Escape", 2, driver, raw)
        for session in sessions:
            lab.tmux("kill-session", "-t", session)
    ended = lab.sweep()
    if ended:
        lab.say(f"  ended afterwards by the script: {ended}")


# ----------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("gemini", "codex"), help="one CLI only")
    parser.add_argument("--codex-versions", default="0.169.0,0.171.0")
    parser.add_argument("--gemini-version", default=gemini_cli.PINNED_VERSION)
    parser.add_argument("--no-headless", action="store_true", help="skip the headless runs")
    parser.add_argument("--no-tui", action="store_true", help="skip the TUIs")
    parser.add_argument("--raw", action="store_true", help="print every ancestry up to pid 1")
    args = parser.parse_args(argv)
    lab = Lab()
    started = time.monotonic()
    try:
        if args.only in (None, "gemini"):
            exe = gemini_cli.install_gemini(args.gemini_version)
            if not args.no_headless:
                gemini_headless(lab, exe, "child", args.raw)
                gemini_headless(lab, exe, "parent", args.raw)
            if not args.no_tui:
                gemini_tui(lab, exe, args.raw)
        if args.only in (None, "codex"):
            for version in [v for v in args.codex_versions.split(",") if v]:
                native = codex_cli.install_codex(version)
                if not args.no_headless:
                    for via in ("native", "node", "node-child"):
                        codex_headless(lab, version, native, via, args.raw)
                if not args.no_tui:
                    codex_tui(lab, version, True, args.raw)
                    codex_tui(lab, version, False, args.raw)
    finally:
        lab.close()
        print(f"\n(done in {time.monotonic() - started:.0f} s; cleaned up {lab.root})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
