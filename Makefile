# Every target creates the project's own virtualenv when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test e2e e2e-capture bench demo screenshots venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]' 
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n 4

# The real Claude Code CLI against a loopback stand-in for the API (npm registry needed once).
e2e: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests/e2e -n 2

# Real hook payloads of every event into tests/fixtures/claude_code/.
e2e-capture: $(STAMP)
	$(PY) tests/e2e/capture.py

bench: $(STAMP)
	$(PY) bench/hook_latency.py
	$(PY) bench/gate_check.py
	$(PY) bench/halts.py
	$(PY) bench/secrets.py
	$(PY) bench/kennel.py
	$(PY) bench/console.py

demo: $(STAMP)
	$(VENV)/bin/leash demo

# PNG pictures of the console for the README (needs the cairo library).
screenshots: $(STAMP)
	@dpkg -s libcairo2 >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq libcairo2)
	$(PY) -m pip install --quiet -e '.[test,screenshots]' 
	$(PY) screenshots/render.py

clean:
	rm -rf $(VENV) build *.egg-info
