"""Capture real Claude Code transcripts with token usage, as fixtures for the
spend meter's reader (``core/policy/usagelines.py``).

    .venv/bin/python tests/support/e2e/capture_transcript.py [--out tests/fixtures/claude_code_transcript]

One headless run of the real ``claude -p`` against the loopback stand-in: a
turn that answers with text and a tool call (one API message in two content
blocks), a subagent (the ``Agent`` tool) that answers once, and a last text.
The stand-in's usage figures are made distinct per request here (input
1000 + 100 n, output 10 + n, cache writes 200 n, cache reads 50 n), and each
answer carries a ``request-id`` header as the Messages API's do (Claude Code
writes it as the line's ``requestId``), so a test can tell which request a
line belongs to. Every transcript file the run wrote under the private
``CLAUDE_CONFIG_DIR/projects`` is copied, keeping its place (a subagent's
transcript in ``session/subagents/``), its paths, UUIDs and times replaced by
fixed values (``capture.normalise``); message ids become ``msg_standin_N``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.support.e2e import standin as standin_module  # noqa: E402
from tests.support.e2e.capture import BYPASS, normalise  # noqa: E402
from tests.support.e2e.harness import ROOT, claude_env, ensure_claude, run_claude  # noqa: E402
from tests.support.e2e.standin import StandInServer, bash, text, tool_use  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "claude_code_transcript"
SCRIPT = [[text("Listing first."), bash("ls")],
          [tool_use("Agent", {"description": "look around", "prompt": "say hi", "subagent_type": "general-purpose"})],
          [text("hi from the helper")],
          [text("all done")]]
TIMESTAMP = re.compile(r'"timestamp": "[0-9T:.\-]+Z"')


def distinct_usage() -> None:
    """The stand-in's messages, each with usage figures of its own."""
    plain = standin_module.message_of
    numbers = itertools.count(1)

    def message_of(blocks, standin, model):
        message = plain(blocks, standin, model)
        n = next(numbers)
        message["usage"] = {"input_tokens": 1000 + 100 * n, "output_tokens": 10 + n,
                            "cache_creation_input_tokens": 200 * n, "cache_read_input_tokens": 50 * n}
        return message

    standin_module.message_of = message_of


def request_ids() -> None:
    """Every answer of the stand-in with a ``request-id`` header of its own."""
    plain = standin_module.handler_for
    numbers = itertools.count(1)

    def handler_for(state):
        base = plain(state)

        class Handler(base):  # type: ignore[misc, valid-type]
            def end_headers(self) -> None:
                self.send_header("request-id", f"req_standin_{next(numbers):04d}")
                super().end_headers()

        return Handler

    standin_module.handler_for = handler_for


def stable_message_ids(text: str, seen: dict[str, str]) -> str:
    """``text`` with each stand-in message id numbered in order of first sight
    (``seen`` is shared by all the run's files, as the ids are)."""
    return re.sub(r"msg_\d{8}standin",
                  lambda match: seen.setdefault(match.group(0), f"msg_standin_{len(seen) + 1}"), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--raw", type=Path, help="copy the transcripts as written, unnormalised, here")
    options = parser.parse_args(argv)
    claude, version = ensure_claude()
    distinct_usage()
    request_ids()
    with tempfile.TemporaryDirectory(prefix="capture-", dir=ROOT / ".cache") as base:
        own = Path(base) / "transcript"
        project = own / "project"
        project.mkdir(parents=True)
        with StandInServer(SCRIPT) as standin:
            env = claude_env(own, standin.url)
            run = run_claude(claude, project, "list the files, then ask a helper", env, args=BYPASS)
            print(f"exit {run.code}, {len(standin.requests)} requests", file=sys.stderr)
        projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
        files = sorted(path for path in projects.rglob("*.jsonl"))
        line = {"roots": {"project": str(project), "base": str(own)}}
        options.out.mkdir(parents=True, exist_ok=True)
        written = []
        seen: dict[str, str] = {}
        for path in files:
            relative = path.relative_to(projects)
            if options.raw:
                (options.raw / relative).parent.mkdir(parents=True, exist_ok=True)
                (options.raw / relative).write_bytes(path.read_bytes())
            raw_text = stable_message_ids(path.read_text(), seen)
            records = [normalise(line, json.loads(raw)) for raw in raw_text.splitlines() if raw.strip()]
            name = ("session/subagents/" + normalise(line, relative.name)) if relative.parent.name == "subagents" \
                else "session.jsonl"
            (options.out / name).parent.mkdir(parents=True, exist_ok=True)
            body = "".join(json.dumps(record) + "\n" for record in records)
            body = TIMESTAMP.sub('"timestamp": "2026-01-01T00:00:00.000Z"', body)
            (options.out / name).write_text(body)
            written.append(f"{name} ({len(records)} lines)")
        manifest = {"claude_code_version": version, "files": written,
                    "layout": "a subagent's transcript is a file of its own, <session>/subagents/agent-<id>.jsonl",
                    "usage": "input 1000+100n, output 10+n, cache writes 200n, cache reads 50n for the nth request"}
        (options.out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print("\n".join(written), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
