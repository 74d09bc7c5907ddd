"""What counts as leash's installed code for the tampering rule: the core and
console folders, the interpreter; the folder above them only when it is an
installed package, never a source checkout that happens to be named leash
(its other files are an agent's ordinary work)."""
from __future__ import annotations

import os

from leash.core.policy.halts import settingsguard


def test_a_checkout_named_leash_is_not_all_installed_code(tmp_path, monkeypatch):
    import leash.core

    checkout = tmp_path / "leash"
    (checkout / "core").mkdir(parents=True)
    (checkout / "core" / "__init__.py").write_text("")
    (checkout / "console").mkdir()
    monkeypatch.setattr(leash.core, "__file__", str(checkout / "core" / "__init__.py"))
    (checkout / "pyproject.toml").write_text("[project]\nname = 'leash'\n")
    places = settingsguard.installed(None)
    assert str(checkout / "core") in places and str(checkout) not in places
    os.unlink(checkout / "pyproject.toml")  # site-packages/leash: the whole folder is leash's
    assert str(checkout) in settingsguard.installed(None)


def test_the_leash_program_operators_run_is_installed_code(tmp_path):
    """A Write over the ``leash`` console script (beside this interpreter, or
    first on the agent's PATH) would replace what operators run: tampering."""
    import sys

    from leash.core.hook.gate import Gate

    found = tmp_path / "bin" / "leash"
    found.parent.mkdir()
    found.write_text("#!/bin/sh\n")
    found.chmod(0o755)
    places = settingsguard.installed(None, {"PATH": str(found.parent)})
    assert places[str(found)] == settingsguard.LEASH_PROGRAM
    beside = os.path.join(os.path.dirname(sys.executable), "leash")
    if os.path.isfile(beside):  # a venv's console script
        assert places[os.path.normpath(beside)] == settingsguard.LEASH_PROGRAM
        home = tmp_path / "home"
        verdict = Gate(home).check("s1", "Write", {"file_path": beside, "content": "exit 0"},
                                   env={"PATH": "/usr/bin"})
        assert not verdict.allow and "supervisor_tampering" in verdict.reason
