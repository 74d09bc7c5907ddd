"""The soak's machinery: network namespaces, one PostgreSQL, a leashd per
host, and the faults done to them.

``Fleet`` makes a namespace for the database and one per host (a..e), each
host joined to the database's namespace by a veth pair of its own
(10.213.N.2 on the host, 10.213.N.1 on the database's side), starts a
throwaway PostgreSQL inside the database's namespace listening on those
addresses only (and a Unix socket in its temporary folder, which the bench
itself reads by), writes each host's home (``[daemon] host``, ``[store] url``
on its veth address, the approvals and budget settings the run asks for) and
runs ``leash daemon`` in the host's namespace (``ip netns exec``). Everything
it made is undone by ``close`` in the reverse order, each step on its own, so
one that fails does not leave the others behind: daemons killed, PostgreSQL
stopped, mounts unmounted, namespaces (and with them their veths) deleted,
the temporary folder removed.

Failure: ``CannotIsolate`` (its text says why) when namespaces cannot be made
(not root, no ``ip``); a daemon that does not answer in time, or PostgreSQL
that does not start, raise ``RuntimeError`` naming it (``close`` still runs).
"""
from __future__ import annotations

import errno
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_PORT = 5432
SUBNET = "10.213"
DAEMON_START_SECONDS = 30.0
TMPFS_SIZE = "48m"  # the home whose disk fills: small, so filling it is quick
FILL_CHUNK = 1 << 20


# Set by Ctrl-C or SIGTERM: every wait of the run ends early and the run goes to its cleanup.
STOPPING = threading.Event()


class CannotIsolate(Exception):
    """Network namespaces cannot be made here; ``str()`` says why."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def pg_binaries() -> str | None:
    sys.path.insert(0, str(ROOT))
    from tests.support.postgres import binaries

    return binaries()


class Host:
    """One host: its namespace, home, veth and leashd."""

    def __init__(self, name: str, index: int, namespace: str, home: Path):
        self.name, self.index, self.namespace, self.home = name, index, namespace, home
        short = f"ls{os.getpid() % 100000}{name}"  # an interface name holds 15 bytes
        self.veth, self.peer = f"{short}h", f"{short}d"
        self.db_address = f"{SUBNET}.{index}.1"
        self.address = f"{SUBNET}.{index}.2"
        self.daemon: subprocess.Popen | None = None
        self.tmpfs = False

    @property
    def agent_socket(self) -> str:
        return str(self.home / "run" / "agent.sock")

    @property
    def operator_socket(self) -> str:
        return str(self.home / "run" / "operator.sock")


class Fleet:
    def __init__(self, hosts: list[str], *, config: str, disk_host: str | None, first_host_config: str = ""):
        """``config``: more config.toml text every home gets, ``first_host_config``
        what the first host's gets besides (its leashd runs the kennel);
        ``disk_host``: the host whose home is a small tmpfs (the disk-full fault's)."""
        self.first_host_config = first_host_config
        self.tag = f"leash-soak-{os.getpid()}"
        self.root = Path(tempfile.mkdtemp(prefix="leash-soak-"))
        self.root.chmod(0o711)  # the server's user must reach its data folder
        self.extra_config = config
        self.disk_host = disk_host
        self.db_namespace = f"{self.tag}-db"
        self.namespaces: list[str] = []
        self.hosts = [Host(name, i + 1, f"{self.tag}-{name}", self.root / f"home-{name}")
                      for i, name in enumerate(hosts)]
        self.pg_data = self.root / "pg" / "data"
        self.pg_bin: str | None = None
        self.pg_user: str | None = None
        self.filler: Path | None = None

    # -- making it ---------------------------------------------------------
    def isolate(self) -> None:
        """The namespaces and links; CannotIsolate when this machine cannot."""
        if shutil.which("ip") is None:
            raise CannotIsolate("no `ip` command")
        if os.geteuid() != 0:
            raise CannotIsolate("not root")
        try:
            self._namespace(self.db_namespace)
        except subprocess.CalledProcessError as exc:
            raise CannotIsolate(exc.stderr.strip() or "ip netns add failed") from None
        for host in self.hosts:
            self._namespace(host.namespace)
            peer = host.peer
            ip("link", "add", host.veth, "netns", host.namespace, "type", "veth", "peer", "name", peer,
               "netns", self.db_namespace)
            ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", host.veth)
            ip("-n", self.db_namespace, "addr", "add", f"{host.db_address}/24", "dev", peer)
            ip("-n", host.namespace, "link", "set", host.veth, "up")
            ip("-n", self.db_namespace, "link", "set", peer, "up")

    def _namespace(self, name: str) -> None:
        ip("netns", "add", name)
        self.namespaces.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def start_postgres(self) -> None:
        self.pg_bin = pg_binaries()
        if self.pg_bin is None:
            raise RuntimeError("PostgreSQL is not installed (initdb, pg_ctl)")
        pg_root = self.pg_data.parent
        pg_root.mkdir()
        if os.geteuid() == 0:
            self.pg_user = "postgres"
            entry = pwd.getpwnam(self.pg_user)
            os.chown(pg_root, entry.pw_uid, entry.pw_gid)
        self._pg("initdb", "-D", str(self.pg_data), "-A", "trust", "-U", "leash", "-E", "UTF8", "--no-sync",
                 "--no-instructions")
        with open(self.pg_data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {SUBNET}.0.0/16 trust\n")
        self.pg_start()

    def pg_options(self) -> str:
        listen = ",".join(host.db_address for host in self.hosts)
        return (f"-k {self.pg_data.parent} -c listen_addresses='{listen}' -p {PG_PORT} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=120")

    def pg_start(self) -> None:
        self._pg("pg_ctl", "-D", str(self.pg_data), "-o", self.pg_options(), "-l", str(self.pg_data.parent / "log"),
                 "-w", "start")

    def pg_stop(self, mode: str = "fast") -> None:
        self._pg("pg_ctl", "-D", str(self.pg_data), "-m", mode, "-w", "stop")

    def _pg(self, program: str, *args: str) -> None:
        assert self.pg_bin is not None
        argv = [os.path.join(self.pg_bin, program), *args]
        if self.pg_user:
            argv = ["runuser", "-u", self.pg_user, "--", *argv]
        argv = ["ip", "netns", "exec", self.db_namespace, *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=self.pg_data.parent)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stderr.strip()[-500:]}")

    def local_url(self) -> str:
        """The bench's own way in: the server's Unix socket."""
        return f"postgresql://leash@/postgres?host={self.pg_data.parent}&port={PG_PORT}"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.pg_data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def make_homes(self) -> None:
        for host in self.hosts:
            host.home.mkdir(mode=0o700)
            if host.name == self.disk_host:
                subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs",
                                str(host.home)], check=True, capture_output=True, timeout=30)
                host.tmpfs = True
            url = f"postgresql://leash@{host.db_address}:{PG_PORT}/postgres"
            (host.home / "config.toml").write_text(f'[daemon]\nhost = "{host.name}"\n[store]\nurl = "{url}"\n'
                                                   + self.extra_config
                                                   + (self.first_host_config if host is self.hosts[0] else ""))

    def daemon_env(self, host: Host) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("LEASH_") and name not in ("TMUX", "TMUX_PANE")}
        env.update(LEASH_HOME=str(host.home), PYTHONPATH=str(ROOT))
        return env

    def start_daemon(self, host: Host) -> None:
        from leash.core.wire.operator import DaemonUnreachable, request

        log = open(self.root / f"leashd-{host.name}.log", "ab")
        try:
            kennel = [] if host is self.hosts[0] else ["--no-kennel"]  # the warrant's host works its queue
            host.daemon = subprocess.Popen(
                ["ip", "netns", "exec", host.namespace, sys.executable, "-m", "leash.console.cli", "daemon",
                 *kennel], env=self.daemon_env(host), stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT)
        finally:
            log.close()
        deadline = time.monotonic() + DAEMON_START_SECONDS
        while time.monotonic() < deadline and not STOPPING.is_set():
            if host.daemon.poll() is not None:
                break
            try:
                if request(host.operator_socket, {"verb": "ping"}, timeout=2).get("ok"):
                    return
            except (DaemonUnreachable, OSError):
                pass
            time.sleep(0.05)
        said = (self.root / f"leashd-{host.name}.log").read_text(errors="replace")[-800:]
        raise RuntimeError(f"leash daemon of host {host.name} did not come up: {said}")

    def stop_daemon(self, host: Host, sig: int = signal.SIGTERM) -> None:
        proc = host.daemon
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGCONT)  # a stopped one cannot end
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)

    # -- faults ------------------------------------------------------------
    def link(self, host: Host, up: bool) -> None:
        ip("-n", host.namespace, "link", "set", host.veth, "up" if up else "down")

    def fill_disk(self, host: Host) -> int:
        """Fill ``host``'s home (its tmpfs) with one file; the bytes written."""
        self.filler = host.home / "soak-filler"
        written = 0
        chunk = b"\0" * FILL_CHUNK
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            while True:
                try:
                    written += os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    if len(chunk) == 1:
                        return written
                    chunk = chunk[: len(chunk) // 16 or 1]  # the last bytes too, so nothing is left
        finally:
            os.close(fd)

    def free_disk(self) -> None:
        if self.filler is not None:
            self.filler.unlink(missing_ok=True)
            self.filler = None

    def keep_logs(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for log in [*self.root.glob("leashd-*.log"), self.pg_data.parent / "log"]:
            if log.exists():
                shutil.copy(log, folder / (log.name if log.name != "log" else "postgresql.log"))

    # -- undoing it --------------------------------------------------------
    def close(self) -> list[str]:
        """Undo everything; what could not be undone, in words."""
        problems: list[str] = []

        def step(what: str, action) -> None:
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - each step on its own: the rest must still run
                problems.append(f"{what}: {exc}")

        for host in self.hosts:  # all asked at once: each may take a while to finish its calls
            if host.daemon is not None and host.daemon.poll() is None:
                step(f"leashd {host.name}", lambda h=host: (os.kill(h.daemon.pid, signal.SIGCONT),
                                                            h.daemon.terminate()))
        for host in self.hosts:
            step(f"leashd {host.name}", lambda h=host: self.stop_daemon(h))
        if self.postmaster_pid() is not None:
            step("PostgreSQL", lambda: self.pg_stop("immediate"))
        self.free_disk()
        for host in self.hosts:
            if host.tmpfs:
                step(f"tmpfs of {host.name}", lambda h=host: subprocess.run(
                    ["umount", "-l", str(h.home)], check=True, capture_output=True, timeout=30))
        for name in reversed(self.namespaces):
            step(f"namespace {name}", lambda n=name: ip("netns", "del", n))
        shutil.rmtree(self.root, ignore_errors=True)
        return problems


def cpu_and_rss(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS bytes) of one process, from /proc; (0, 0) once gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0, 0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks, int(fields[21]) * os.sysconf("SC_PAGE_SIZE")


def tree_cpu_and_rss(parent: int) -> tuple[float, int]:
    """The same summed over ``parent`` and its children (PostgreSQL's backends)."""
    cpu, rss = cpu_and_rss(parent)
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == parent:
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            more_cpu, more_rss = cpu_and_rss(int(entry))
            cpu, rss = cpu + more_cpu, rss + more_rss
    return cpu, rss
