"""What the end-to-end suite (``tests/e2e``, run by ``make e2e``) shares with
its capture scripts and the benches that drive a real agent CLI. Each CLI is
installed from npm into ``.cache/<cli>/<version>`` once and runs against a
loopback stand-in for its model API; nothing here reaches another host.

Claude Code:

* ``harness``: ``ensure_claude`` (installed once; ``ClaudeUnavailable`` says why
  not), ``run_claude`` (one headless ``claude -p``), ``claude_env``, ``wire`` and
  ``settings_file`` (leash's hooks in a project), ``LEASH``, ``ROOT``.
* ``standin``: the Messages API stand-in (``StandInServer``) and the turns a
  script plays (``bash``, ``text``, ``tool_use``, ``api_error``).
* ``claude_agent``: ``Agent``, a wired project on its own leash home (the
  ``agent`` fixture of ``tests/e2e/conftest.py``).
* ``tui``: interactive Claude Code TUIs in tmux panes and the console beside
  them (``Fleet``, ``Pane``, ``squeezed``).
* ``http_probe``: an HTTP hook listener that fails as asked (``ProbeServer``).
* ``record_hook``: a hook that records what it was given (run, not imported).
* ``capture``, ``capture_transcript``, ``capture_http_hooks``: scripts that
  re-record the fixtures and the HTTP hook facts.

Codex CLI and Gemini CLI:

* ``codex_cli``, ``gemini_cli``: install and run each CLI headless.
* ``codex_standin``, ``gemini_standin``: their API stand-ins and scripted calls.
* ``rig``: the rig both CLIs' tests run on (``codex``, ``wired``; ``gemini``,
  ``rig``: fixtures of ``tests/e2e/agents/conftest.py``).
* ``agent_tui``, ``panes``: a CLI's TUI in a private tmux server and a call
  interrupted in flight.
* ``jsonlines``: the JSON events both print headless.
* ``capture_codex``, ``capture_gemini``, ``capture_processes``: scripts that
  re-record their fixtures and their process facts.
* ``npm``: installing any of the three CLIs into the cache.

Waiting is ``tests/support/waiting.py``'s, as everywhere in the tests.
"""
