"""The policy audit: how many of the known ways around leash's rules still get through the gate.

Prints, never asserts:

  (a) path-lock probes: the commands and tool calls of
      tests/policy/test_path_lock_probes.py (``PROBES``, ``CALL_PROBES``) against a
      ``path:src/auth/**`` lock on a fresh git work tree; a probe *escapes*
      when the gate allows it, and is *missed* when something other than the
      path lock denied it;
  (b) tampering: the corpus of tests/policy/test_tampering.py and
      tests/policy/test_tampering_reach.py (``TAMPER_CASES``) judged against a
      scene with a stopped session, a locked entity and leash's hooks wired;
      a case *lifts control* when the gate allows it; and the calls of
      ``NOT_TAMPERING`` that were wrongly taken for tampering.

Each case gets a session of its own (a blocked case halts its session), in a
temporary directory removed at the end. Run: ``.venv/bin/python bench/policy_audit.py``.
"""
from __future__ import annotations

import itertools
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from leash.core.hook.gate import Gate  # noqa: E402
from leash.core.views.protocol import StopProtocol  # noqa: E402
from tests.policy import test_path_lock_probes as lock_probes  # noqa: E402
from tests.policy import test_tampering as tampering  # noqa: E402
from tests.policy import test_tampering_reach as reach  # noqa: E402

SHOWN = 60  # characters of a case shown when it gets through
_sessions = itertools.count(1)


def session() -> str:
    return f"audit-{next(_sessions)}"


def path_lock_audit(base: Path) -> tuple[int, int, list[str], list[str]]:
    home = base / "lock-home"
    tree = lock_probes.build_tree(base / "tree")
    StopProtocol(home).hands_off(lock_probes.LOCK, reason="audit", source="audit")
    gate = Gate(home)
    cases = [(command, "tree", "Bash", {"command": command}) for command in lock_probes.PROBES]
    cases += [(label, place, tool, tool_input) for label, place, tool, tool_input in lock_probes.CALL_PROBES]
    escaped, missed = [], []
    for label, place, tool, tool_input in cases:
        cwd, env = lock_probes.where(tree, place)
        verdict = gate.check(session(), tool, lock_probes.filled(tool_input, tree), cwd=cwd, env=env)
        if verdict.allow:
            escaped.append(label)
        elif verdict.rule != "path_lock":
            missed.append(f"{label} ({verdict.rule})")
    return len(cases), len(lock_probes.PROBES), escaped, missed


def tamper_audit(base: Path) -> tuple[int, list[str], int, list[str]]:
    home = base / "tamper" / "leash-home"
    home.parent.mkdir(parents=True)
    os.environ["LEASH_HOME"] = str(home)
    places = reach.build_places(tampering.build_scene(home, home.parent))
    values = places["values"]
    old = tampering.HOME_WRITES + tampering.SETTINGS_WRITES + tampering.OPERATOR_VERBS + tampering.TMUX_AND_SIGNALS
    cases = [(c, "Bash", {"command": c.format(home=values["home"], tmp=values["tmp"])}) for c in old]
    cases += [(label, tool, reach.filled(given, values)) for label, tool, given in reach.TAMPER_CASES]
    lifted = [label for label, tool, given in cases if judged(places, tool, given).allow]
    wrong = [label for label, tool, given in reach.NOT_TAMPERING
             if "supervisor_tampering" in judged(places, tool, reach.filled(given, values)).reason]
    return len(cases), lifted, len(reach.NOT_TAMPERING), wrong


def judged(places: dict, tool: str, tool_input: dict):
    return Gate(places["home"]).check(session(), tool, tool_input, cwd=str(places["project"]), env=places["env"])


def shown(labels: list[str]) -> str:
    return "".join(f"\n      - {label[:SHOWN]!r}" for label in labels)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="leash-audit-") as scratch:
        base = Path(scratch)
        total, plain, escaped, missed = path_lock_audit(base)
        print(f"path-lock probes: {len(escaped)} of {total} escape ({plain} command probes, "
              f"{total - plain} call probes){shown(escaped)}")
        print(f"  denied by another rule than the path lock: {len(missed)}{shown(missed)}")
        total, lifted, calm, wrong = tamper_audit(base)
        print(f"tampering: {len(lifted)} of {total} commands and calls lift control{shown(lifted)}")
        print(f"  taken for tampering although they are not: {len(wrong)} of {calm}{shown(wrong)}")


if __name__ == "__main__":
    main()
