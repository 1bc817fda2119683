# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: demo test lint docs docs-check bench tables clean wheel-check

# The install goes through uv (the same resolution of pyproject.toml, byte-compiled as pip
# does: 26 s against pip's 51 s from empty caches on the 2-core machine, 2026-11-26), and
# through pip where uv cannot be had.  $(call INSTALL,venv,what to install)
comma := ,
INSTALL = $(1)/bin/python -m pip install --quiet uv \
	&& $(1)/bin/python -m uv pip install --quiet --compile-bytecode --python $(1)/bin/python $(2) \
	|| $(1)/bin/python -m pip install --quiet $(2)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call INSTALL,$(VENV),-e ".[test$(comma)docs]")
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

# the release as users get it: the wheel and sdist built, the wheel installed into a fresh
# environment (no source tree on its path), its version, an import and the quick demo run
WHEEL = build/wheel-venv
wheel-check: $(STAMP)
	rm -rf build/dist $(WHEEL)
	$(BIN)/python -m build --outdir build/dist .
	$(PYTHON) -m venv $(WHEEL)
	$(call INSTALL,$(WHEEL),build/dist/mechint-*.whl)
	cd build && wheel-venv/bin/mechint --version
	cd build && wheel-venv/bin/python -c "import mechint, sys; assert 'site-packages' in mechint.__file__, mechint.__file__; print('import', mechint.__version__, mechint.__file__)"
	cd build && MPLBACKEND=Agg wheel-venv/bin/mechint demo --quick --out wheel-demo

# the peers in their own environment (jax-md pins sympy, which pins mpmath below what the
# tests use)
BENCH = .venv-bench
$(BENCH)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH)
	$(call INSTALL,$(BENCH),-e ".[bench$(comma)examples]")
	touch $@

bench: $(BENCH)/.installed
	$(BENCH)/bin/python benchmarks/peers.py
	$(BENCH)/bin/python benchmarks/euler_top.py
	$(BENCH)/bin/python benchmarks/rigid_bodies.py
	$(BENCH)/bin/python benchmarks/kepler_peers.py
	$(BENCH)/bin/python benchmarks/nbody.py
	$(BENCH)/bin/python benchmarks/constraints.py
	$(BENCH)/bin/python benchmarks/joints.py
	$(BENCH)/bin/python benchmarks/transit_times.py

# every table the docs include from benchmarks/results/ (and the work-precision figure),
# measured again on this machine with the peers of the bench extra; the README's accuracy
# figures are checked against a fresh run by the tests (tests/test_readme.py)
tables: $(BENCH)/.installed
	$(BENCH)/bin/python benchmarks/work_precision.py --figure docs/work-precision.png \
		--table benchmarks/results/work-precision.md
	$(BENCH)/bin/python benchmarks/rigid_bodies.py
	$(BENCH)/bin/python benchmarks/megno_map.py
	$(BENCH)/bin/python benchmarks/constraints.py
	$(BENCH)/bin/python benchmarks/joints.py

clean:
	rm -rf $(VENV) $(BENCH) mechint-demo .pytest_cache build docs/generated
