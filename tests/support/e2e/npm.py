"""Installing an agent CLI from npm into the project's cache, once per version
(Claude Code, Codex CLI and Gemini CLI alike)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

NPM_TIMEOUT_SECONDS = 300


def npm_error(stderr: str) -> str:
    """npm's error code and message, without its stack trace and log hints."""
    errors = [line[len("npm error"):].strip() for line in stderr.splitlines() if line.startswith("npm error")]
    code = next((line[len("code "):] for line in errors if line.startswith("code ")), "")
    message = next((line for line in errors if line and not line.startswith(
        ("code ", "syscall ", "errno ", "at ", "A complete log"))), "")
    return " ".join(part for part in (code, message[:200]) if part) or (stderr.strip()[-200:] or "no message")


def npm_install(npm: str, spec: str, folder: Path) -> str | None:
    """``npm install --prefix folder spec``; why it failed, or None. A folder
    this call made is removed again on failure, so no empty one looks like an
    installed version."""
    fresh = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "install", "--prefix", str(folder), spec, "--no-audit", "--no-fund",
                               "--fetch-retries=1", "--fetch-timeout=30000"],
                              capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, cwd=folder)
    except subprocess.TimeoutExpired:
        done = None
    if done is not None and done.returncode == 0:
        return None
    if fresh:
        shutil.rmtree(folder, ignore_errors=True)
    if done is None:
        return f"npm install {spec} took over {NPM_TIMEOUT_SECONDS} s (is the npm registry reachable?)"
    return f"npm install {spec} failed (is the npm registry reachable?): {npm_error(done.stderr)}"
