# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: demo test lint docs docs-check bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,docs]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/mechint demo --out mechint-demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples docs/hooks.py
	$(BIN)/ruff format --check src tests benchmarks examples docs/hooks.py
	$(BIN)/pyright

# the site, with the gallery's examples run and their figures drawn: build/site
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 MPLBACKEND=Agg $(BIN)/mkdocs build --strict

# the same build, strict (warnings are errors, links checked), without running the examples
docs-check: $(STAMP)
	NO_MKDOCS_2_WARNING=1 MECHINT_DOCS_QUICK=1 $(BIN)/mkdocs build --strict --quiet --site-dir build/site-check

# lint and the docs build side by side (one core each), then the tests on both cores
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 lint docs-check
	$(BIN)/python -m pytest

# the peers in their own environment (jax-md pins sympy, which pins mpmath below what the
# tests use)
BENCH = .venv-bench
$(BENCH)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH)
	$(BENCH)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH)/bin/python -m pip install --quiet -e ".[bench]"
	touch $@

bench: $(BENCH)/.installed
	$(BENCH)/bin/python benchmarks/peers.py
	$(BENCH)/bin/python benchmarks/euler_top.py
	$(BENCH)/bin/python benchmarks/rigid_bodies.py

clean:
	rm -rf $(VENV) $(BENCH) mechint-demo .pytest_cache build docs/generated
