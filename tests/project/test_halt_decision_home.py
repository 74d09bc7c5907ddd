"""The halt decision is written once, in ``core/policy/halts/decision.py``:
no function that decides a check, a record, an acknowledgement or a config
change is defined in core/state or core/store, none of the decision's is
defined twice, and the stores never import the rules, the engine or the
conditions (they reach the policy through the decision and its records)."""
from __future__ import annotations

import ast

from ..support.checkout import ROOT
from ..support.source import parsed

# What a check, a record or an acknowledgement decides, by the names it had in each backend and has now.
DECIDING = {"check_in", "_add_attempts", "_with_stored_attempts", "_record_findings", "halts_to_record",
            "to_auto_record", "finding_halt", "new_halt", "check_answer", "fail_safe", "refuse_acknowledgement",
            "acknowledged_answer", "acknowledge_request", "validate_record", "_validate_record", "recorded_lines",
            "recorded_answer", "recorded_line_fields", "_record_high", "_insert", "_halt_context", "_annotations",
            "config_request", "config_answer"}
# The policy modules that decide: no store imports them (the decision and its records are the door).
DECIDING_MODULES = ("leash.core.policy.halts.engine", "leash.core.policy.halts.rules",
                    "leash.core.policy.halts.context", "leash.core.policy.halts.conditions.execution",
                    "leash.core.policy.halts.conditions")


def _defined_functions(path) -> set[str]:
    return {node.name for node in ast.walk(parsed(path)) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_the_functions_that_decide_are_defined_in_the_decision_only():
    stores = [path for folder in ("core/state", "core/store") for path in sorted((ROOT / folder).rglob("*.py"))]
    found = {str(path.relative_to(ROOT)): sorted(_defined_functions(path) & DECIDING) for path in stores}
    assert {path: names for path, names in found.items() if names} == {}
    decided_here = _defined_functions(ROOT / "core/policy/halts/decision.py")
    assert {"check", "record", "acknowledge", "fail_safe", "new_halt", "refuse_acknowledgement"} <= decided_here
    elsewhere = {str(path.relative_to(ROOT)): sorted(_defined_functions(path) & (decided_here & DECIDING))
                 for path in sorted((ROOT / "core").rglob("*.py")) if path.name != "decision.py"}
    assert {path: names for path, names in elsewhere.items() if names} == {}


def test_no_store_imports_the_rules_the_engine_or_the_conditions():
    importers = {}
    for folder in ("core/state", "core/store"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            modules = set()
            for node in ast.walk(parsed(path)):
                if isinstance(node, ast.ImportFrom) and node.module:
                    modules |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
                elif isinstance(node, ast.Import):
                    modules |= {alias.name for alias in node.names}
            deciding = sorted(m for m in modules if m in DECIDING_MODULES)
            if deciding:
                importers[str(path.relative_to(ROOT))] = deciding
    assert importers == {}
