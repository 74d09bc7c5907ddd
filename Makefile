# Every target creates the project's own virtualenv when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: lint test e2e e2e-capture bench soak demo screenshots venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP) $(RUNTIME_STAMP)

# leash alone, without the test extras: what ``make demo`` needs.
RUNTIME_STAMP := $(VENV)/.installed-runtime
$(RUNTIME_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $(RUNTIME_STAMP)

# ruff on the tree, then mypy on the core and the console (both run; either
# failing fails it). mypy resolves ``leash.core`` and ``leash.console`` through
# links to core/ and console/ (the install maps the folders, which mypy cannot
# see); its file names are printed relative to the tree.
MYPY_PATH := .cache/mypy-path
lint: $(STAMP)
	@mkdir -p $(MYPY_PATH)/leash && ln -sfn ../../../core $(MYPY_PATH)/leash/core \
		&& ln -sfn ../../../console $(MYPY_PATH)/leash/console
	@status=0; \
	echo "ruff check ."; $(VENV)/bin/ruff check . || status=1; \
	echo "mypy (leash.core, leash.console)"; $(VENV)/bin/mypy > .cache/mypy.out 2>&1 || status=1; \
	sed 's#^$(MYPY_PATH)/leash/##' .cache/mypy.out; exit $$status

# Compiled modules are kept in .cache/pycache even where the environment asks
# Python to write none (PYTHONDONTWRITEBYTECODE): without them every test
# worker, and every leash process a test starts (a hook, leashd, the CLI),
# compiles each module it imports again. When the cache is not there yet, one
# collection first fills it, so the workers do not all compile the same files
# at once (once it is there, that collection would only add its 3-4 s).
# The agent CLIs' marks are cleared: leashd refuses an operator whose environment holds one
# (core/daemon/agentmarks.py), which a test run started from inside an agent would be.
TEST_ENV := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/.cache/pycache CLAUDECODE= CLAUDE_CODE_SESSION_ID= \
	CLAUDE_CODE_ENTRYPOINT= AI_AGENT= GEMINI_CLI=
test: $(STAMP)
	@test -d .cache/pycache || $(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider --collect-only > /dev/null 2>&1 || true
	$(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider -n 6 --dist worksteal

# The real Claude Code CLI against a loopback stand-in for the API, once per
# version (each installed once into .cache/claude-code/<version>; ``latest`` is
# asked of the npm registry every run). Every version runs; any failing fails it.
# A real client driven through a real terminal on a busy machine is slow at
# times: a failed test runs again (twice at most) and fails only if it fails each time.
# The other agent CLIs' tests (tests/e2e/agents) do not run in the Claude Code
# loop: the Codex CLI's run once per Codex version (0.169.0 pinned, ``latest``),
# the Gemini CLI's once per Gemini version (0.61.0 pinned, ``latest``).
# Then the tests of tests/ that make test leaves out for its two minutes
# (``@pytest.mark.heavy(reason)``: several leashd hosts, Chromium, real
# terminals, the costlier benches), once, and the fleet soak.
CLAUDE_VERSIONS ?= 2.1.197 latest
CODEX_VERSIONS ?= 0.169.0 latest
GEMINI_VERSIONS ?= 0.61.0 latest
CODEX_TESTS := $(wildcard tests/e2e/agents/test_*codex*.py)
GEMINI_TESTS := $(wildcard tests/e2e/agents/test_*gemini*.py)
# Claude Code makes its runtime folders in /tmp whatever TMPDIR says (its
# sandbox's sockets, its background daemon's): those a run made are removed after it.
CLAUDE_TMP_LEFTOVERS = /tmp/cc-daemon-$$(id -u) /tmp/cc-socks-$$(id -u)
e2e: $(STAMP)
	@status=0; made=""; for left in $(CLAUDE_TMP_LEFTOVERS); do [ -e "$$left" ] || made="$$made $$left"; done; \
	for version in $(CLAUDE_VERSIONS); do \
		echo "e2e: Claude Code $$version"; \
		LEASH_E2E_CLAUDE_VERSION=$$version $(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider tests/e2e \
			--ignore=tests/e2e/agents -n 2 --reruns 2 --reruns-delay 1 || status=1; \
	done; \
	for version in $(CODEX_VERSIONS); do \
		echo "e2e: Codex CLI $$version"; \
		LEASH_E2E_CODEX_VERSION=$$version $(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider $(CODEX_TESTS) -n 2 \
			--reruns 2 --reruns-delay 1 || status=1; \
	done; \
	for version in $(GEMINI_VERSIONS); do \
		echo "e2e: Gemini CLI $$version"; \
		LEASH_E2E_GEMINI_VERSION=$$version $(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider $(GEMINI_TESTS) -n 2 \
			--reruns 2 --reruns-delay 1 || status=1; \
	done; \
	echo "e2e: the tests make test leaves out (marked heavy: each says why)"; \
	$(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider --heavy -n 2 || status=1; \
	echo "e2e: the fleet soak, 3 minutes"; $(TEST_ENV) $(PY) bench/soak.py --minutes 3 || status=1; \
	for left in $$made; do rm -rf "$$left"; done; \
	exit $$status

# Five leashd hosts (network namespaces, root) on one PostgreSQL, fifty agents,
# an operator and injected faults, invariants checked all along; figures printed
# (docs/performance.md, "Fleet soak"). ``make soak MINUTES=30``.
MINUTES ?= 30
soak: $(STAMP)
	$(TEST_ENV) $(PY) bench/soak.py --minutes $(MINUTES)

# Real hook payloads of every event into tests/fixtures/claude_code/.
e2e-capture: $(STAMP)
	$(PY) tests/support/e2e/capture.py

bench: $(STAMP)
	$(PY) bench/hook_latency.py
	$(PY) bench/gate_check.py
	$(PY) bench/halts.py
	$(PY) bench/secret_rules.py
	$(PY) bench/kennel.py
	$(PY) bench/console.py
	$(PY) bench/daemon.py
	$(PY) bench/shared_store.py
	$(PY) bench/interrupt.py
	$(PY) bench/warrant_delivery.py
	$(PY) bench/notify.py
	$(PY) bench/policy_audit.py
	$(PY) bench/approvals.py
	$(PY) bench/budget.py

demo: $(RUNTIME_STAMP)
	$(VENV)/bin/leash demo

# PNG pictures of the console for the README (needs the cairo library).
screenshots: $(STAMP)
	@dpkg -s libcairo2 >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq libcairo2)
	$(PY) -m pip install --quiet -e '.[test,screenshots]' 
	$(PY) screenshots/render.py
	LEASH_SCREENSHOTS=$(CURDIR)/docs $(TEST_ENV) $(PY) -m pytest -q -p no:cacheprovider -p no:xdist --heavy \
		tests/console/test_serve_approvals_browser.py

clean:
	rm -rf $(VENV) build *.egg-info
