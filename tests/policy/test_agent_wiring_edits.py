"""Edits of Gemini CLI's and Codex CLI's hook wiring judged by the file they
leave: each CLI's own edit tool (Gemini's ``replace`` and ``write_file``,
Codex's ``apply_patch``) and Claude Code's on the files ``leash install
--agent gemini|codex`` wrote, through the real gate. A change to
``hooksConfig``, a leash hook's command, matcher or timeout, the trust of
hooks or folders, or a removed hook is ``supervisor_tampering`` whatever
words the edit holds; a theme or a model name is not."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from leash.core.hook.hooks import run

CODEX_FIXTURES = Path(__file__).parent.parent / "fixtures" / "codex_cli"
SESSION = "7a1c0d1e-0000-4000-8000-00000000a11e"


@pytest.fixture
def wired(home, cli, tmp_path, monkeypatch):
    """A project wired by ``leash install --agent gemini`` and ``--agent codex``
    (the user's Codex config trusting it), homes and system files in tmp_path."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("CODEX_HOME", str(user / ".codex"))
    monkeypatch.setenv("LEASH_GEMINI_SYSTEM_SETTINGS", str(tmp_path / "etc" / "gemini-settings.json"))
    monkeypatch.setenv("LEASH_CODEX_REQUIREMENTS", str(tmp_path / "etc" / "requirements.toml"))
    project = tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    (project / ".gemini" / "settings.json").write_text(json.dumps({"model": {"name": "gemini-2.5-pro"}}))
    (user / ".codex").mkdir()
    (user / ".codex" / "config.toml").write_text('model = "gpt-5.5"\n')
    for args in (("--agent", "gemini", "--project", str(project)), ("--agent", "codex"),
                 ("--agent", "codex", "--project", str(project))):
        assert cli("install", *args).code == 0
    read_first(home, project)
    return project


def read_first(home, project: Path) -> None:
    """The session reads each wiring file first, as an agent about to edit it
    does (an edit of a file never read halts for ``modifying_unread_code``):
    Gemini CLI with ``read_file``, Codex CLI with ``cat``."""
    for path in files(project).values():
        gemini = {"session_id": SESSION, "transcript_path": f"{project}/.gemini/chats/session.json",
                  "cwd": str(project), "hook_event_name": "AfterTool", "timestamp": "2026-11-29T01:00:00.000Z",
                  "tool_name": "read_file", "tool_input": {"file_path": str(path)},
                  "tool_response": {"llmContent": "..."}}
        assert gate(home, "gemini-after-tool", gemini)[0] == 0
        read_first_codex(home, project, path)


def files(project: Path) -> dict[str, Path]:
    user = project.parent / "user"
    return {"gemini": project / ".gemini" / "settings.json", "trust": user / ".gemini" / "trustedFolders.json",
            "codex": user / ".codex" / "config.toml", "codex project": project / ".codex" / "config.toml"}


def gate(home, verb: str, data: dict) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(verb, home=str(home), stdin=io.BytesIO(json.dumps(data).encode()), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def read_first_codex(home, project: Path, path: Path) -> None:
    codex = json.loads((CODEX_FIXTURES / "PostToolUse.Bash.json").read_text().replace("<CWD>", str(project))
                       .replace("<SESSION_ID>", SESSION))
    codex["tool_input"] = {"command": f"cat {path}"}
    assert gate(home, "codex-post-tool-use", codex)[0] == 0


def gemini_call(home, project: Path, tool: str, tool_input: dict) -> str | None:
    """The reason Gemini CLI's BeforeTool refuses the call (None: it runs)."""
    data = {"session_id": SESSION, "transcript_path": f"{project}/.gemini/chats/session.json",
            "cwd": str(project), "hook_event_name": "BeforeTool", "timestamp": "2026-11-29T01:00:00.000Z",
            "tool_name": tool, "tool_input": tool_input}
    code, out, err = gate(home, "gemini-before-tool", data)
    answer = json.loads(out) if code == 0 and out.strip() else {}
    if code == 0 and answer.get("decision") != "deny":
        return None
    return answer.get("stopReason") or answer.get("reason") or err or f"exit {code}"


def codex_patch(home, project: Path, patch: str) -> str | None:
    """The reason Codex CLI's PreToolUse refuses the apply_patch call (None: it runs)."""
    text = (CODEX_FIXTURES / "PreToolUse.apply_patch.update.json").read_text()
    text = text.replace("<CWD>", str(project)).replace("<SESSION_ID>", SESSION)
    data = json.loads(text)
    data["tool_input"] = {"command": patch}
    code, out, err = gate(home, "codex-pre-tool-use", data)
    return None if code == 0 else err or f"exit {code}"


def claude_call(home, project: Path, tool: str, tool_input: dict) -> str | None:
    data = {"session_id": SESSION, "cwd": str(project), "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": tool_input}
    code, out, err = gate(home, "pre-tool-use", data)
    answer = json.loads(out) if code == 0 and out.strip() else {}
    decision = answer.get("hookSpecificOutput", {}).get("permissionDecision")
    return None if code == 0 and decision != "deny" else json.dumps(answer) + err


def patch(path: Path | str, *chunks: str) -> str:
    return "*** Begin Patch\n" + f"*** Update File: {path}\n" + "".join(chunks) + "*** End Patch\n"


def hash_of(config: Path, key: str) -> str:
    """The trusted hash line of a hook's key in a Codex config."""
    lines = config.read_text().splitlines()
    return lines[lines.index(f'[hooks.state."{key}"]') + 1]


# ------------------------------------------------------------------ Gemini CLI
def gemini_edits(project: Path) -> dict[str, tuple[str, dict]]:
    """The Gemini CLI tool calls that switch leash's hooks off or bend them."""
    paths = files(project)
    settings, trust = str(paths["gemini"]), str(paths["trust"])
    wiring = json.loads(paths["gemini"].read_text())
    without_hooks = {key: value for key, value in wiring.items() if key != "hooks"}
    return {
        "hooksConfig enabled false": ("replace", {"file_path": settings, "old_string": '"enabled": true',
                                                  "new_string": '"enabled": false'}),
        "BeforeTool timeout 1 s": ("replace", {"file_path": settings, "old_string": '"timeout": 330000',
                                               "new_string": '"timeout": 1000'}),
        "matcher matches no tool": ("replace", {"file_path": settings, "old_string": '"matcher": ".*"',
                                                "new_string": '"matcher": "none"', "expected_replacements": 2}),
        "hooks removed": ("write_file", {"file_path": settings, "content": json.dumps(without_hooks, indent=2)}),
        "command runs another verb": ("replace", {"file_path": settings,
                                                  "old_string": "hook gemini-before-tool ||",
                                                  "new_string": "hook gemini-after-tool ||"}),
        "folder no longer trusted": ("replace", {"file_path": trust, "old_string": '"TRUST_FOLDER"',
                                                 "new_string": '"DO_NOT_TRUST"'}),
    }


GEMINI_EDITS = ["hooksConfig enabled false", "BeforeTool timeout 1 s", "matcher matches no tool", "hooks removed",
                "command runs another verb", "folder no longer trusted"]


@pytest.mark.parametrize("name", GEMINI_EDITS)
def test_a_gemini_edit_of_leashs_wiring_halts_as_tampering(home, wired, name):
    tool, tool_input = gemini_edits(wired)[name]
    before = Path(tool_input["file_path"]).read_text()
    assert tool == "write_file" or tool_input["old_string"] in before  # the edit applies to the file as written
    reason = gemini_call(home, wired, tool, tool_input)
    assert reason is not None and "supervisor_tampering" in reason
    assert Path(tool_input["file_path"]).read_text() == before


def test_gemini_edits_elsewhere_in_its_settings_run(home, wired):
    settings = files(wired)["gemini"]
    assert gemini_call(home, wired, "replace", {"file_path": str(settings), "old_string": '"gemini-2.5-pro"',
                                                "new_string": '"gemini-2.5-flash"'}) is None
    themed = json.loads(settings.read_text()) | {"ui": {"theme": "Dracula"}}
    assert gemini_call(home, wired, "write_file", {"file_path": str(settings),
                                                   "content": json.dumps(themed, indent=2)}) is None


def test_a_gemini_edit_that_leaves_its_settings_unreadable_halts(home, wired):
    settings = files(wired)["gemini"]
    reason = gemini_call(home, wired, "replace", {"file_path": str(settings), "old_string": '"gemini-2.5-pro"',
                                                  "new_string": '"gemini-2.5-pro",'})
    assert reason is not None and "supervisor_tampering" in reason and "unreadable" in reason


def test_a_claude_code_multiedit_of_gemini_settings_is_judged_by_the_file_after(home, wired):
    settings = str(files(wired)["gemini"])
    quiet = [{"old_string": '"gemini-2.5-pro"', "new_string": '"gemini-2.5-flash"'}]
    assert claude_call(home, wired, "MultiEdit", {"file_path": settings, "edits": quiet}) is None
    bent = quiet + [{"old_string": '"timeout": 330000', "new_string": '"timeout": 1000'}]
    reason = claude_call(home, wired, "MultiEdit", {"file_path": settings, "edits": bent})
    assert reason is not None and "supervisor_tampering" in reason


# ------------------------------------------------------------------ Codex CLI
def codex_edits(project: Path) -> dict[str, str]:
    """The apply_patch calls that switch leash's hooks off or bend them."""
    paths = files(project)
    config, own = paths["codex"], paths["codex project"]
    key = f"{own}:pre_tool_use:0:0"
    trusted = hash_of(config, key)
    return {
        "PreToolUse timeout 1 s": patch(config, "@@ [[hooks.PreToolUse.hooks]]\n", "-timeout = 330\n",
                                        "+timeout = 1\n"),
        "matcher matches no tool": patch(config, "@@ [[hooks.PreToolUse]]\n", '-matcher = "*"\n',
                                         '+matcher = "none"\n'),
        "trusted hash changed": patch(config, f'@@ [hooks.state."{key}"]\n', f"-{trusted}\n",
                                      f'+trusted_hash = "sha256:{"0" * 64}"\n'),
        "features hooks false": patch(".codex/config.toml", "@@\n", "+[features]\n", "+hooks = false\n"),
        "hook removed": patch(".codex/config.toml", "@@ [[hooks.Stop]]\n", "-[[hooks.Stop.hooks]]\n"),
        "command runs another verb": patch(config, "@@ [[hooks.PreToolUse.hooks]]\n", " type = \"command\"\n",
                                           _command_line(config, "codex-pre-tool-use", "codex-stop")),
    }


def _command_line(config: Path, verb: str, other: str) -> str:
    line = next(line for line in config.read_text().splitlines() if line.startswith("command") and verb in line)
    return f"-{line}\n+{line.replace(verb, other)}\n"


CODEX_EDITS = ["PreToolUse timeout 1 s", "matcher matches no tool", "trusted hash changed", "features hooks false",
               "hook removed", "command runs another verb"]


@pytest.mark.parametrize("name", CODEX_EDITS)
def test_a_codex_patch_of_leashs_wiring_halts_as_tampering(home, wired, name):
    before = {path: path.read_text() for path in files(wired).values()}
    reason = codex_patch(home, wired, codex_edits(wired)[name])
    assert reason is not None and "supervisor_tampering" in reason
    assert {path: path.read_text() for path in files(wired).values()} == before


def test_codex_patches_elsewhere_in_its_config_run(home, wired):
    config = files(wired)["codex"]
    assert codex_patch(home, wired, patch(config, "@@\n", '-model = "gpt-5.5"\n', '+model = "o4"\n')) is None
    foreign = ('+[[hooks.PreToolUse]]\n+matcher = "Bash"\n+[[hooks.PreToolUse.hooks]]\n+type = "command"\n'
               '+command = "audit-log"\n')
    assert codex_patch(home, wired, patch(config, "@@\n", foreign)) is None  # after leash's: its place holds


def test_a_codex_hook_put_before_leashs_halts_its_trust_is_by_place(home, wired):
    config = files(wired)["codex"]
    foreign = ('+[[hooks.PreToolUse]]\n+matcher = "Bash"\n+[[hooks.PreToolUse.hooks]]\n+type = "command"\n'
               '+command = "audit-log"\n')
    reason = codex_patch(home, wired, patch(config, "@@\n", ' model = "gpt-5.5"\n', foreign))
    assert reason is not None and "moves leash's hook (Codex trusts a hook by its place)" in reason


def test_a_codex_patch_that_does_not_apply_to_its_config_halts(home, wired):
    config = files(wired)["codex"]
    reason = codex_patch(home, wired, patch(config, "@@\n", '-model = "gpt-4"\n', '+model = "o4"\n'))
    assert reason is not None and "supervisor_tampering" in reason


def test_a_codex_patch_deleting_its_config_halts(home, wired):
    reason = codex_patch(home, wired, "*** Begin Patch\n*** Delete File: .codex/config.toml\n*** End Patch\n")
    assert reason is not None and "supervisor_tampering" in reason


def test_a_codex_patch_moving_a_file_onto_its_config_halts(home, wired):
    (wired / "notes.toml").write_text('model = "o4"\n')
    read_first_codex(home, wired, wired / "notes.toml")
    moved = "*** Begin Patch\n*** Update File: notes.toml\n*** Move to: .codex/config.toml\n@@\n model = \"o4\"\n" \
            "*** End Patch\n"
    reason = codex_patch(home, wired, moved)
    assert reason is not None and "removes or changes leash's hook" in reason


def test_a_codex_patch_of_claude_code_settings_is_judged_by_the_file_after(home, wired, cli):
    settings = wired / ".claude" / "settings.json"
    assert cli("install", "--project", str(wired)).code == 0
    read_first_codex(home, wired, settings)
    lines = [line for line in settings.read_text().splitlines() if '"timeout": 30' in line][:2]
    bent = patch(settings, *(f"@@\n-{line}\n+{line.split(':')[0]}: 1\n" for line in lines))  # two chunks
    reason = codex_patch(home, wired, bent)
    assert reason is not None and "removes or changes leash's hook" in reason


@pytest.mark.parametrize("before, after, why", [
    ("[features]\nhooks = true\n", "allow_managed_hooks_only = true\n[features]\nhooks = true\n",
     "changes whether hooks run"),
    ("", "[profiles.quiet.features]\nhooks = false\n", "changes whether hooks run"),
    ('[hooks.state."x"]\ntrusted_hash = "sha256:1"\n',
     '[hooks.state."x"]\ntrusted_hash = "sha256:1"\nenabled = false\n', "changes the trust of hooks"),
    ("", "[features]\nhooks = [", "leaves it unreadable (not TOML)"),
])
def test_the_managed_codex_file_and_profiles_are_judged_too(before, after, why):
    from leash.core.policy.halts.agentsettings import CODEX_REQUIREMENTS, wiring_changes

    assert any(found.startswith(why) for found in wiring_changes(CODEX_REQUIREMENTS, before, after))
    assert wiring_changes(CODEX_REQUIREMENTS, before, before) == []
