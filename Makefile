# Two commands that work on a fresh machine with only Python 3.10+:
#   make demo   sets up .venv and runs the main job on small defaults
#   make test   sets up .venv and runs the fast tests
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT ?= runs/demo

.PHONY: demo test test-all bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,plot]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/decision-bench demo --out $(DEMO_OUT)

test: $(STAMP)
	$(PY) -m pytest -m "not slow" -q

test-all: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/agents.py --quick

clean:
	rm -rf $(VENV) runs .pytest_cache
