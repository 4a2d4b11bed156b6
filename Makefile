# Two entry points a newcomer needs: `make demo` and `make test`. Each builds its own venv.
SHELL  := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime-installed
LINT_PATHS := exporter tests $(wildcard bench deploy/k8s/*.py deploy/release/*.py)

.PHONY: demo test test-fast lint typecheck check bench docs golden mutation lock sim clean

# What running the exporter needs (the demo): the runtime dependencies only, as locked
# (requirements.lock: versions and hashes, the image installs the same), then the package.
$(RUNTIME): pyproject.toml setup.py requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(RUNTIME)

# The test, lint and type-check toolchain on top (make test and the other targets).
$(STAMP): $(RUNTIME)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(RUNTIME)  ## the exporter against its built-in simulator; flags in ARGS="--web.listen-address=:9900"
	$(BIN)/cdnvideo-exporter demo $(ARGS)

# The rest runs on TEST_WORKERS processes (pytest-xdist; auto: one per core); the simulation's
# CI batch stays on one of them (xdist_group), which spreads its seeds over the cores itself.
TEST_WORKERS ?= auto
test: $(STAMP)  ## lint, type-check and the whole test suite
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy --strict exporter
	@# The realtime tests mostly wait on the wall clock: they run beside the rest, their
	@# output printed after it. Exit 5 (nothing collected, e.g. PYTEST_ARGS chose none) is fine.
	$(BIN)/python -m pytest -q -ra -m realtime -p no:cacheprovider $(PYTEST_ARGS) \
	  > $(VENV)/realtime-tests.log 2>&1 & rt=$$!; \
	$(BIN)/python -m pytest -q -ra -m "not realtime" -n $(TEST_WORKERS) --dist loadgroup \
	  $(PYTEST_ARGS) | tee $(VENV)/tests.log; \
	rc=$${PIPESTATUS[0]}; wait $$rt; rrc=$$?; echo "--- realtime tests (run beside the rest) ---"; \
	cat $(VENV)/realtime-tests.log; echo "--- the rest, again: ---"; tail -n 1 $(VENV)/tests.log; \
	if [ $$rc -eq 5 ]; then rc=0; fi; if [ $$rrc -eq 5 ]; then rrc=0; fi; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$rrc

# The editing lane: unit and integration tests against the in-process simulator, without the
# real tools (prometheus, promtool, chromium, linters, package builds), child daemons, the
# reliability suite or the tests that drive a simulated day. `make test` stays the full suite.
FAST_ARGS := -m "not system and not slow and not simulation_batch" -k "not promtool" \
  --ignore=tests/system --ignore=tests/release --ignore=tests/lifecycle --ignore=tests/deploy \
  --ignore=tests/reliability --ignore=tests/bench/test_bench_smoke.py \
  --ignore=tests/web/admin/test_schemathesis.py --ignore=tests/web/admin/test_generated_client.py

# On FAST_WORKERS processes (pytest-xdist; auto: one per core); tests/conftest.py's FULL_SUITE
# names the tests moved to `make test` for their CPU (docs/dev/testing.md, *The fast lane*).
FAST_WORKERS ?= auto
test-fast: $(STAMP)  ## the fast lane while editing (under a minute; not a substitute for make test)
	$(BIN)/python -m pytest -q -n $(FAST_WORKERS) $(FAST_ARGS) $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

typecheck: $(STAMP)
	$(BIN)/mypy --strict exporter

# The deterministic simulation of the daemon (tests/simulation, docs/dev/testing.md): SIM_SEEDS
# seeds of SIM_MINUTES simulated minutes on SIM_JOBS processes (by default 1,000 simulated
# days over every core); each failing seed is printed with the command that replays it.
# `make sim SEED=1234` replays one seed and explains it.
SIM_SEEDS ?= 0:1000
SIM_MINUTES ?= 1440
SIM_JOBS ?= $(shell nproc)
sim: $(STAMP)  ## deterministic simulation: 1,000 simulated days over the cores (SEED=N replays one)
	$(BIN)/python -m tests.simulation --minutes $(SIM_MINUTES) \
	  $(if $(SEED),--seed $(SEED) --verbose,--seeds $(SIM_SEEDS) --jobs $(SIM_JOBS))

$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $@

# The aged start (docs/performance.md, *Day two*) runs at 1,000 and 5,000 resources in accounts
# of 1,000 on a run of its own; at 25,000 it is run by hand (minutes, gigabytes).
bench: $(VENV)/.bench-installed  ## performance table and plot, remote_write off/on, the aged start (docs/performance.md)
	$(BIN)/python -m bench
	$(BIN)/python -m bench.remotewrite
	$(BIN)/python -m bench --scales 1000,5000 --per-account 1000 --aged-hours 48 \
	  --simulation-minutes 0 --out bench/out/aged

$(VENV)/.mutation-installed: $(STAMP)
	$(BIN)/pip install --quiet 'mutmut>=3.3,<4'
	touch $@

# Mutants of the modules listed under [tool.mutmut] in pyproject.toml, each run against the
# test files listed there; capped at MUTATION_SECONDS. Not part of CI; see docs/dev/testing.md.
MUTATION_SECONDS ?= 1800
mutation: $(VENV)/.mutation-installed  ## mutation check of the riskiest modules (slow; not in CI)
	rm -rf mutants
	timeout $(MUTATION_SECONDS) $(BIN)/mutmut run --max-children 2; rc=$$?; \
	  $(BIN)/mutmut results; exit $$rc

docs: $(STAMP)  ## regenerate the metric and config references
	$(BIN)/python -m exporter.docgen

golden: $(STAMP)  ## rewrite tests/golden/exposition.prom after a deliberate metric change
	$(BIN)/python -m tests.golden --update

# requirements.lock from pyproject.toml's dependencies (pip-tools); after changing them run
# `make lock` and commit both (tests/deploy/test_lock.py checks that they agree).
LOCK_COMMAND := pip-compile --generate-hashes --strip-extras --no-emit-index-url --no-emit-find-links --output-file=requirements.lock pyproject.toml
$(VENV)/.lock-installed: $(STAMP)
	$(BIN)/pip install --quiet 'pip-tools>=7.4,<8'
	touch $@

lock: $(VENV)/.lock-installed  ## rewrite requirements.lock (versions and hashes) from pyproject.toml
	$(BIN)/$(LOCK_COMMAND)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
