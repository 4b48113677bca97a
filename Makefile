# kraftlog — the two set-up commands are `make run` and `make test`; both work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
CLUSTER_DIR ?= .cluster
# Debian packages the tests use: kcat (compatibility tests), faketime (clock-skew chaos),
# iptables and iproute2 (network partitions inside a namespace), golang-go and
# golang-github-shopify-sarama-dev (Go + Sarama, for the Sarama compatibility test).
DEB_PACKAGES := kcat faketime iptables iproute2 golang-go golang-github-shopify-sarama-dev

.PHONY: run test test-fast lint bench venv system-deps stop clean chaos

venv: $(STAMP)

$(STAMP): pyproject.toml common/version.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark,chaos]'
	touch $(STAMP)

# Installs missing Debian packages when running as root; otherwise says what is missing.
system-deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "warning: missing Debian packages:$$missing (tests that need them are skipped)"; fi; \
	fi

# ruff (lint rules and formatting), the import contracts of pyproject.toml (layers that
# only point down), strict mypy on the packages [tool.mypy] lists, and the docs check (no
# history in docs and docstrings; generated tables up to date).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	$(PY) .ci/check_docs.py

# pytest-xdist workers: integration tests mostly wait on node processes, so three workers
# keep two cores busy; tests/conftest.py keeps each module (or folder sharing one cluster) on
# one worker and queues the longest groups first. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 3
PYTEST_DIST = -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder
# More pytest options for either target, e.g. PYTEST_ARGS=--durations=30.
PYTEST_ARGS ?=

# pytest exits 5 when it collects no tests; that is not a failure of the suite.
test: $(STAMP) system-deps lint
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_DIST) $(PYTEST_ARGS); rc=$$?; if [ $$rc -eq 5 ]; then exit 0; fi; exit $$rc

# The unit tests (the codec's kafka-python oracle included): no node processes, CPU-bound,
# so one worker per core.
test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS) \
	  tests/unit

run: $(STAMP)
	$(VENV)/bin/kraftlog --version
	$(PY) -m deploy.demo

# Benchmarks print figures and never assert. `make bench` is one bounded session (bench/suite.py:
# each section capped in time) beside NATS JetStream: it installs Debian's nats-server, Go and
# nats.go (as root) and the `bench` extra (nats-py, matplotlib) first; the tests need none of
# them. Results go to
# bench/results/ and docs/benchmarks.md; BENCH_ARGS=--quick for a shorter run.
BENCH_DEB_PACKAGES := nats-server golang-go golang-github-nats-io-go-nats-dev
BENCH_ARGS ?=
bench: $(STAMP)
	@missing=""; for p in $(BENCH_DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "warning: missing Debian packages:$$missing (the NATS section is skipped)"; fi; \
	fi
	@$(PY) -c "import nats, matplotlib" 2>/dev/null || $(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m bench.suite $(BENCH_ARGS)

# The chaos acceptance campaign (root; about an hour): 10 seeded 5-minute runs mixing every
# nemesis, the queue and the transactional workloads side by side; one table of outcomes at
# the end, artifacts under .chaos/ (see docs/chaos.md).
CHAOS_RUNS ?= 10
CHAOS_TIME_LIMIT ?= 300
chaos: $(STAMP) system-deps
	$(PY) -m chaos.campaign --runs $(CHAOS_RUNS) --time-limit $(CHAOS_TIME_LIMIT) \
	  --artifacts .chaos/$$(date +%Y%m%d-%H%M%S)

stop: $(STAMP)
	-$(VENV)/bin/kraftlog cluster down --dir $(CLUSTER_DIR)

clean: stop
	rm -rf $(VENV) $(CLUSTER_DIR) .pytest_cache .ruff_cache .mypy_cache .hypothesis
