"""Helpers the tests share; a test module imports helpers from here (and
fixtures from conftest.py), never from another test module.

* ``checkout``: ``ROOT`` (the checkout) and ``leash_argv()`` (``leash`` run as a process).
* ``source``: ``parsed(path)``, a source file's syntax tree, parsed once per process.
* ``waiting``: ``wait_for`` (a predicate's first true value, AssertionError at its
  deadline) and ``eventually`` (whether it came true): polled, never a bare sleep.
* ``backends``: ``BACKENDS`` and ``make_backend`` (every kind the store contract runs
  on; conftest's ``backend`` and ``second_backend`` take each in turn) and
  ``ProtocolOnly`` (a backend seen through its protocol alone).
* ``changes``: ``changes_after`` (what ``Backend.changes()`` reports while another
  process writes).
* ``postgres``: ``Cluster`` and ``binaries`` (a throwaway PostgreSQL server;
  conftest's ``postgres_cluster``).
* ``daemon``: leashd in-process (``start_daemon``) or as a process
  (``daemon_process``, ``stop``), and a raw client of its sockets (``sockets``,
  ``connect``, ``exchange``, ``read_replies``, ``still_waiting``, ``hook_request``).
* ``pretooluse``: a PreToolUse ``payload`` and ``assert_denied``.
* ``claude_code``: Claude Code's captured payloads (``payload(event)``, ``SESSION``,
  ``FIXTURES``) and ``hook``, a hook run on one in this process.
* ``thin_hook``: ``hook``, ``leash hook`` as a real process (``BASH``, ``HOOK``), and
  the ``decision`` it printed.
* ``kennel``: agents in tmux panes (``start_agent``: silent, answering, busy,
  chatty, answering once then hung) and kennels that judge them (``run_kennel``,
  ``KennelThread``, ``kennel_process``, ``goes_idle``), the dog's records
  (``active_state``, ``health_checks``, ``events_for``), ``write_config`` and the
  short gates (``FAST``, ``ANSWER_AT_1``, ``ANSWER_AT_2``, ``POLL``).
* ``tmux_sessions``: ``start_session`` and ``rename_session`` with the tmux command.
* ``interrupt``: Claude Code stand-ins holding a long call in flight, headless
  (``start_headless``) or in a pane (``start_in_pane``); also bench/interrupt.py's.
* ``paste_tui``: a program (run in a pane, not imported) that reads its keys as
  Claude Code's TUI does.
* ``notify``: ``Inbox`` (an HTTP receiver on 127.0.0.1), ``Hanging`` (a port that
  never answers), ``closed_port_url``, ``argv_writer``/``written_argv``, ``write_routes``.
* ``tampering``: the tampering tests' scene (``build_scene``; conftest's ``scene``),
  ``judge`` and ``assert_tamper_blocked``.
* ``serve``: ``leash serve`` as a process (``start_server``, ``stop_servers``,
  ``Served``), its WebSocket ``client`` and ``read_until``, and its consoles in the
  process table (``console_started``, ``children_of``, ``alive``, ``gone_within``).
* ``console``: the seeded fleet at a fixed time (``CONSOLE_NOW``, ``CONSOLE_TMUX``,
  ``seed_console_fleet``), the console as tests build it (``console``; its keys'
  settle after a dialog on a ``StridingClock`` unless given a ``key_clock``), and its
  pilot (``SIZE``, ``settle``, ``ready``, ``select``, ``screen_text``).
* ``console_terminal``: the console as a process in a tmux pane at 80x24 over the
  demo's fleet (``seed_live_fleet``, ``start_console``, ``run_console``,
  ``stop_servers``), typed at with send-keys and read with capture-pane (``Terminal``).
* ``e2e``: the end-to-end suite's package (the agent CLIs, their stand-ins and
  rigs, the capture scripts); its docstring lists each module.

conftest.py has pytest rewrite these modules' asserts as it does a test's.
"""
