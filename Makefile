# Two commands that work on a fresh machine with only Python 3.10+:
#   make demo   sets up .venv and runs the main job on small defaults
#   make test   sets up .venv and runs the fast tests
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_OUT ?= runs/demo

.PHONY: demo test test-all bench docs clean

# The virtual environment itself; each stamp below installs what its targets need into it.
$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[test,plot]"
	touch $(STAMP)

# `make docs` needs only the package (pdoc imports it) and pdoc: the docs extra, not the
# test or plot extras. In a .venv that `make test` set up it adds pdoc.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

demo: $(STAMP)
	$(VENV)/bin/decision-bench demo --out $(DEMO_OUT)

# One pytest run, its test files shared between two worker processes
# (pytest-xdist; --dist loadfile keeps a file's tests, and so its module-scoped
# fixtures and compiled programs, in one worker). The suite used to be split in
# two processes because one process crashed (SIGSEGV) in XLA's CPU compiler:
# every live XLA:CPU executable holds about three memory mappings, JAX keeps
# every program it compiled, and the process reached Linux's default
# vm.max_map_count (65530; LLVM reports "Cannot allocate memory" and XLA then
# segfaults; measured: 64,195 mappings 4 s before the crash). tests/conftest.py
# now frees the compiled programs after each test module (jax.clear_caches()):
# the whole suite in one process then peaks near 13,000 mappings, at no extra
# CPU time. tests/test_suite_memory_maps.py checks the mechanism.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(PY) -m pytest -m "not slow" -q --durations=10 -n $(TEST_WORKERS) --dist loadfile

test-all: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/agents.py --quick

# The API reference from the docstrings (pdoc) into docs/api/ (not committed);
# fails, listing them, on any pdoc warning.
docs: $(DOCS_STAMP)
	$(PY) scripts/build_docs.py --out docs/api

clean:
	rm -rf $(VENV) runs .pytest_cache docs/api
