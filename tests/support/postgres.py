"""A throwaway PostgreSQL server for the tests: ``initdb`` and ``pg_ctl`` in a
temporary directory, listening on a Unix socket there only (no TCP), with
durability off (a test server loses nothing it needs). Run as the ``postgres``
user when the tests run as root (``initdb`` refuses root). One server per test
worker, started on first use; each test gets a schema of its own.

``.ci/run`` installs ``postgresql`` with apt-get when ``initdb`` is missing;
without it the tests that need a server are skipped with one line.
"""
from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile


def binaries() -> str | None:
    """The folder holding initdb and pg_ctl, or None."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(found))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(versions[-1]) if versions else None


class Cluster:
    def __init__(self, *, settings: str = ""):
        """``settings``: more ``-c name=value`` server options (a bench loads
        pg_stat_statements)."""
        self.bin = binaries()
        if self.bin is None:
            raise RuntimeError("PostgreSQL is not installed (initdb, pg_ctl)")
        self.root = tempfile.mkdtemp(prefix="leash-pg-")
        self.user = None
        if os.geteuid() == 0:
            self.user = "postgres"
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.data = os.path.join(self.root, "data")
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "leash", "-E", "UTF8", "--no-sync",
                  "--no-instructions")
        options = self.options = (f"-k {self.root} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=60 " + settings)
        self._run("pg_ctl", "-D", self.data, "-o", options, "-l", os.path.join(self.root, "log"), "-w", "start")

    def url(self, schema: str | None = None) -> str:
        url = f"postgresql://leash@/postgres?host={self.root}"
        return url + f"&options=-csearch_path%3D{schema}" if schema else url

    def fresh_schema(self) -> str:
        import psycopg

        schema = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return schema

    def role_url(self, role: str, schema: str) -> str:
        return f"postgresql://{role}@/postgres?host={self.root}&options=-csearch_path%3D{schema}"

    def two_roles(self) -> tuple[str, str]:
        """(the runtime role's url, the owner role's url) over a fresh schema
        the owner owns: two login roles of their own (roles are the server's,
        so each call makes new ones)."""
        import psycopg

        tag = secrets.token_hex(6)
        schema, owner, runtime = f"t_{tag}", f"owner_{tag}", f"runtime_{tag}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {owner} LOGIN")
            conn.execute(f"CREATE ROLE {runtime} LOGIN")
            conn.execute(f"CREATE SCHEMA {schema} AUTHORIZATION {owner}")
        return self.role_url(runtime, schema), self.role_url(owner, schema)

    def pause(self) -> None:
        """Stop the server, keeping its data (the database goes away, as in an
        outage; a fast shutdown, since this server's commits are not synchronous)."""
        self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-o", self.options, "-l", os.path.join(self.root, "log"), "-w", "start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run([os.path.join(self.bin, program), *args], capture_output=True, text=True,
                              user=self.user, timeout=120, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stderr.strip()[-500:]}")
