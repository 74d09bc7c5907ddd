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
