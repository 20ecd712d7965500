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

# Two pytest processes: in one process of ~750 tests, XLA's CPU compiler crashed
# (SIGSEGV) compiling the tune command's grid program after every other package's
# tests had run; each half passes on its own, and a fresh process per half keeps
# the accumulated programs of one half from reaching the other.
TEST_FIRST := tests/agents tests/bandit tests/envs tests/data
TEST_SECOND := tests/evaluation tests/experiments tests/analysis tests/cli $(wildcard tests/test_*.py)

test: $(STAMP)
	$(PY) -m pytest -m "not slow" -q --durations=10 $(TEST_FIRST)
	$(PY) -m pytest -m "not slow" -q --durations=10 $(TEST_SECOND)

test-all: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/agents.py --quick

clean:
	rm -rf $(VENV) runs .pytest_cache
