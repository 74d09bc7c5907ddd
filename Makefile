# Every target creates the project's own virtualenv when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n 4

bench: $(STAMP)
	$(PY) bench/hook_latency.py
	$(PY) bench/gate_check.py

clean:
	rm -rf $(VENV) build *.egg-info
