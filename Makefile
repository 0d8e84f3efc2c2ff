# The two commands of the README: `make run` (broker, topics, demo) and `make test`.
# Each sets itself up on a fresh machine: a venv with the packages, and the Kafka jars.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup browser run test test-fast lint down clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

setup: $(STAMP) browser
	$(BIN)/jobstream kafka jars
	$(BIN)/jobstream deploy crds  # KEDA's CRDs, so the manifests are checked offline

# The dashboard tests drive Debian's chromium (Playwright never downloads a browser).
browser:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	  else echo "the dashboard tests need chromium: sudo apt-get install chromium"; fi; }

# KAFKA_PORT and DEMO_ARGS (e.g. --home DIR --base-port N) let a test run this very
# target beside other brokers; JOBSTREAM_KAFKA_HOME moves the broker's folder.
KAFKA_PORT ?= 9092
DEMO_ARGS ?=
run: export JOBSTREAM_BOOTSTRAP_SERVERS ?= 127.0.0.1:$(KAFKA_PORT)
run: setup
	$(BIN)/jobstream kafka up --port $(KAFKA_PORT)
	$(BIN)/jobstream topics create
	$(BIN)/jobstream demo $(DEMO_ARGS)

# Tests come in tiers, marked from the fixtures they use (tests/support/tiers.py).
# `make test-fast` runs the fast tier: no broker, no browser, no child process, about a
# minute on two cores. `make test` runs it first and stops there if it fails, then the
# rest in TEST_WORKERS processes (pytest-xdist, a whole module to each, each with a broker
# of its own; fault scenarios keep to their modules, tests/ops/faults/scenario_check.py).
# The 15 slowest tests are listed at the end.
TEST_WORKERS ?= 2
test-fast: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) -m fast -q

test: setup test-fast
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile -m "not fast" --durations=15

lint: $(STAMP)
	$(BIN)/ruff check jobstream/*.py pipeline connectors ops tests
	$(BIN)/mypy

down: $(STAMP)
	$(BIN)/jobstream kafka down

clean: down
	rm -rf .jobstream
