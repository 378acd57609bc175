# `make test` and `make bench` work on a fresh machine: they create the virtual
# environment and install what they need.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: run test check lint bench clean

$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]' -e clients/python
	touch $@

run: $(VENV)/.installed
	scripts/run.sh

lint: $(VENV)/.installed
	$(PY) -m ruff check app devtools tests bench migrations clients
	$(PY) -m ruff format --check app devtools tests bench migrations clients
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m mypy --strict clients/python/src
	$(PY) -m mypy app

# The API tests run against SQLite and a throwaway PostgreSQL server, the browser tests in Debian's headless
# Chromium (both installed from the distribution if missing).
# pytest exits non-zero when it collects no tests, so an empty run fails too.
# Most of the suite waits on servers, sockets and PostgreSQL, so it runs on $(TEST_WORKERS) workers (pytest-xdist),
# a test file to a worker (the longest files first: SLOW_FILES in tests/conftest.py), each worker with a PostgreSQL
# server of its own; the tests marked `serial` assert latency bounds under a load they make themselves, and run after,
# alone.
TEST_WORKERS ?= 2
test: lint
	scripts/ensure-postgres.sh
	scripts/ensure-patroni.sh
	scripts/ensure-chromium.sh
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m 'not serial' --durations=30
	$(PY) -m pytest -m serial --durations=10

# A developer's quick loop: lint, the rating maths and the API tests on SQLite (no PostgreSQL server, no browser),
# on 4 workers (they mostly wait on sockets and SQLite), without the suites that kill, fuzz and stream to real
# servers for their length (crash, fuzz, events, concurrency); `make test` runs everything, as CI does.
CHECK_WORKERS ?= 4
check: lint
	$(PY) -m pytest -q -n $(CHECK_WORKERS) --dist load -m 'not serial' -k 'not postgresql and not pgbouncer' \
		--ignore tests/api/test_replica.py --ignore tests/api/test_pooler.py --ignore tests/api/test_crash.py \
		--ignore tests/api/test_fuzz.py --ignore tests/api/test_events.py --ignore tests/api/test_concurrency.py \
		tests/rating tests/api

# bench_api needs wrk and PostgreSQL from the distribution; both are installed if missing.
bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test,bench]'
	scripts/ensure-postgres.sh
	command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
	$(PY) -m bench.bench_rating
	$(PY) -m bench.bench_api
	$(PY) -m bench.bench_scale
	$(PY) -m bench.bench_mixed
	$(PY) -m bench.bench_heavy_ladder
	$(PY) -m bench.bench_apply
	$(PY) -m bench.bench_import
	$(PY) -m bench.bench_void
	$(PY) -m bench.bench_export
	$(PY) -m bench.bench_select_k
	$(PY) -m bench.bench_teams
	$(PY) -m bench.bench_batch
	$(PY) -m bench.bench_client
	$(PY) -m bench.bench_events
	$(PY) -m bench.bench_catch_up
	scripts/ensure-patroni.sh
	$(PY) -m bench.bench_failover
	scripts/ensure-chromium.sh
	$(PY) -m bench.bench_pages
	$(PY) -m bench.bench_refit_memory
	$(PY) -m bench.bench_refit
	$(PY) -m bench.quality

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
