# pymc_evidence: build, test and demo targets.
#
#   make demo         set up .venv and run the Minnesota radon demo (scripts/demo.py)
#   make test         set up .venv, run ruff and the fast test suite
#   make test-other   set up .venv-other (the other PyMC major) and run the fast tests there
#   make check-install  build the wheel, install it with no extras in fresh venvs (both PyMC
#                     majors) and run the README quick start + a netCDF round trip
#
# .venv uses a Python >= 3.12 (PyMC 6) when there is one, else 3.11 (PyMC 5); .venv-other uses
# the other one (see scripts/find_python.sh). Override with PYTHON=... / PYTHON_OTHER=....
# Venvs are created once and re-installed when pyproject.toml changes (stamp file inside).
# `make demo` needs only the runtime dependencies: a .venv it creates has no extras, and a
# later `make test`/`make docs` adds theirs (scripts/ensure_venv.sh keeps installed extras).

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV       ?= .venv
VENV_OTHER ?= .venv-other
# Extras installed into the venvs: the test tools (pytest, ruff, notebook runner) and the docs
# tools, so that `make test` and `make docs` share one install. The demo needs none.
EXTRAS      ?= test,docs
DEMO_EXTRAS ?=
PY         := $(VENV)/bin/python
PY_OTHER   := $(VENV_OTHER)/bin/python
# Extra arguments, e.g. make test PYTEST_ARGS="-k ct -x", make demo DEMO_ARGS="--draws 300"
PYTEST_ARGS ?=
# Test processes (pytest-xdist): 2 by default, as many as CI's cores (each holds ~2.5 GiB);
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
XDIST       = $(if $(filter 0,$(PYTEST_WORKERS)),-p no:xdist,-n $(PYTEST_WORKERS))
DEMO_ARGS   ?=
BENCH_ARGS  ?=
LINT_PATHS  ?= pymc_evidence tests

export EXTRAS PYTHON PYTHON_OTHER

.PHONY: help venv venv-other venv-demo $(VENV) $(VENV_OTHER) demo test test-other test-slow \
        check check-install lint bench info clean distclean docs

help:
	@echo "make demo        run the radon model-comparison demo (creates .venv on first use)"
	@echo "make test        ruff + fast tests in .venv (slow tests deselected by pyproject)"
	@echo "make test-slow   only the slow statistical tests (pytest -m slow)"
	@echo "make test-other  fast tests in .venv-other, the other PyMC major, notebooks and heavy checks excluded"
	@echo "make check       test + test-other (what CI runs)"
	@echo "make check-install  wheel + fresh venvs, no extras: README quick start and netCDF round trip"
	@echo "make lint        ruff check $(LINT_PATHS)"
	@echo "make bench       benchmarks/compare_smc.py against pm.sample_smc"
	@echo "make docs        build the Sphinx site, notebooks included, in docs/_build/html (warnings are errors)"
	@echo "make info        which Python / PyMC each venv uses"
	@echo "make clean       remove caches and build files; make distclean also removes venvs"
	@echo "Variables: PYTHON=, PYTHON_OTHER=, PYTEST_ARGS=, PYTEST_WORKERS=, DEMO_ARGS=, BENCH_ARGS=, EXTRAS=, DEMO_EXTRAS="

# The venv targets always run the script; it does nothing when the stamp matches.
venv $(VENV):
	@scripts/ensure_venv.sh $(VENV)

# The demo's venv: the runtime dependencies (plus DEMO_EXTRAS); an existing .venv with more
# extras is used as it is.
venv-demo:
	@scripts/ensure_venv.sh $(VENV) --extras "$(DEMO_EXTRAS)"

# Exit code 10 from ensure_venv.sh: no interpreter for the other PyMC major.
ENSURE_OTHER = PRIMARY_PYTHON="$$( [ -x $(PY) ] && echo $(abspath $(PY)) )" \
	scripts/ensure_venv.sh $(VENV_OTHER) --other

venv-other $(VENV_OTHER):
	@$(ENSURE_OTHER); rc=$$?; if [ $$rc -eq 10 ]; then exit 0; fi; exit $$rc

demo: venv-demo
	$(PY) scripts/demo.py $(DEMO_ARGS)

# ruff and pytest both run; the target fails if either failed.
test: $(VENV)
	@rc=0; \
	echo "== ruff check $(LINT_PATHS)"; $(VENV)/bin/ruff check $(LINT_PATHS) || rc=1; \
	echo "== pytest ($$($(PY) -c 'import sys, pymc; print("Python", sys.version.split()[0], "PyMC", pymc.__version__)'))"; \
	$(PY) -m pytest $(XDIST) --durations=25 $(PYTEST_ARGS) || rc=1; \
	exit $$rc

test-slow: $(VENV)
	$(PY) -m pytest -m slow $(XDIST) $(PYTEST_ARGS)

test-other:
	@$(ENSURE_OTHER); rc=$$?; \
	if [ $$rc -eq 10 ]; then echo "test-other: skipped (no Python for the other PyMC major)"; exit 0; fi; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; \
	echo "== pytest ($$($(PY_OTHER) -c 'import sys, pymc; print("Python", sys.version.split()[0], "PyMC", pymc.__version__)'))"; \
	$(PY_OTHER) -m pytest -m "not slow and not notebooks and not heavy" $(XDIST) --durations=25 $(PYTEST_ARGS)

check: test test-other

# Needs no project venv: builds the wheel and makes its own throw-away venvs.
check-install:
	@scripts/clean_install_check.sh

lint: $(VENV)
	$(VENV)/bin/ruff check $(LINT_PATHS)

bench: $(VENV)
	@if [ -f benchmarks/compare_smc.py ]; then \
	  echo "$(PY) benchmarks/compare_smc.py $(BENCH_ARGS)"; $(PY) benchmarks/compare_smc.py $(BENCH_ARGS); \
	else echo "bench: benchmarks/compare_smc.py does not exist yet"; fi

# The notebooks are rendered with the outputs stored in them (scripts/execute_notebooks.py
# writes those); the build runs no notebook.
docs: $(VENV)
	rm -rf docs/api/generated
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html (notebooks: docs/_build/html/notebooks/index.html)"

info:
	@for v in $(VENV) $(VENV_OTHER); do \
	  if [ -x $$v/bin/python ]; then \
	    echo "$$v: $$($$v/bin/python -c 'import sys; from importlib.metadata import version as V; print("Python", sys.version.split()[0], "| pymc", V("pymc"), "| pytensor", V("pytensor"), "| arviz", V("arviz"))')"; \
	  else echo "$$v: not created"; fi; \
	done
	@echo "primary interpreter candidate: $$(scripts/find_python.sh 2>/dev/null || echo none)"
	@echo "other interpreter candidate:   $$(scripts/find_python.sh --other 2>/dev/null || echo none)"

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache docs/_build docs/api/generated
	find . -path ./.venv -prune -o -path ./.venv-other -prune -o \
	  -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(VENV_OTHER)
