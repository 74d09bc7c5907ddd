"""Every halt is written through the backend's halt store: the
``supervisor_tampering`` halt a blocked ConfigChange records lands in the
shared store (a real PostgreSQL, the backend seen only through its protocol),
so the next tool call on any host is held; ``leash.core.state.halts`` exports no
writer keyed by a home, and nothing outside the file backend calls one."""
from __future__ import annotations

import ast
import json

import pytest

from leash.core.hook.hooks import answer
from leash.core.policy.halts.outcomes import HaltQuery
from leash.core.store import protocols
from leash.core.store.postgres import PostgresBackend

from ..support.backends import ProtocolOnly
from ..support.checkout import ROOT
from ..support.claude_code import SESSION, payload

NOW = 1_900_000_000.0
# The file backend's functions over one home's halts.db that write a halt, its state or its evidence.
HOME_KEYED_WRITERS = {"record_halt", "acknowledge_halt", "update_halt_config", "check_halt_conditions",
                      "record_attempt", "record_files_read", "stored_config_problems"}
# Where they may be called: the halt engine itself and the file backend's stores (and its doctor).
ALLOWED = {"core/store/filehalts.py", "core/store/filecheck.py"}


@pytest.fixture
def project(tmp_path, monkeypatch):
    from leash.core.hook.install import install

    directory = tmp_path / "project"
    (directory / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("LEASH_CLAUDE_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    install(str(directory / ".claude" / "settings.json"), "/usr/bin/true")
    return directory


def test_a_blocked_config_change_holds_the_session_on_the_shared_store(postgres_cluster, home, tmp_path, project):
    url = postgres_cluster.url(postgres_cluster.fresh_schema())
    shared = PostgresBackend(url, home=home, host="a")
    elsewhere = PostgresBackend(url, home=tmp_path / "host-c", host="c")
    backend = ProtocolOnly(shared, protocols.Backend)  # no path, no registry, no connection: the protocol only
    try:
        local = project / ".claude" / "settings.local.json"
        local.write_text(json.dumps({"disableAllHooks": True}))
        change = json.dumps(payload("ConfigChange", cwd=str(project), file_path=str(local))).encode()
        _, err, code = answer("config-change", change, home=str(home), backend=backend, env={}, now=NOW)
        assert code == 2 and "supervisor_tampering" in err
        call = json.dumps(payload("PreToolUse", session_id=SESSION, cwd=str(project),
                                  tool_input={"command": "touch x"})).encode()  # a halted session may still look
        out, _, code = answer("pre-tool-use", call, home=str(home), backend=backend, env={}, now=NOW + 1)
        decision = json.loads(out)["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny" and "halt" in decision["permissionDecisionReason"], out
        assert elsewhere.halts.state(SESSION, now=NOW + 1) == "halted"  # every host's gate reads it
        [halt] = elsewhere.halts.listing(HaltQuery(session=SESSION, pending=True), now=NOW + 1).halts
        assert halt.condition_name == "supervisor_tampering" and halt.severity == "critical"
        assert not (home / "halts.db").exists()  # nothing landed in this host's files
        assert [line.event for line in elsewhere.acklog.read(session=SESSION)] == ["tamper_blocked", "halt_recorded"]
    finally:
        shared.close()
        elsewhere.close()


def test_the_halts_package_exports_no_writer_keyed_by_a_home():
    import leash.core.state.halts as halts

    assert not HOME_KEYED_WRITERS & set(halts.__all__)
    assert not [name for name in HOME_KEYED_WRITERS if hasattr(halts, name) and name in vars(halts)]


def test_nothing_outside_the_file_backend_calls_a_home_keyed_halt_writer():
    callers = {}
    for folder in ("core", "console"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            if relative.startswith(("core/state/halts/", "core/policy/halts/")) or relative in ALLOWED:
                continue
            text = path.read_text()
            tree = ast.parse(text, filename=relative)
            imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                        and (node.module or "").startswith("leash.core.state.halts") for alias in node.names}
            through_module = {name for name in HOME_KEYED_WRITERS if f"api.{name}(" in text}  # halts.api.NAME(...)
            found = sorted((imported & HOME_KEYED_WRITERS) | through_module)
            if found:
                callers[relative] = found
    assert callers == {}
