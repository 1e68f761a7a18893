# Locus: `make setup`, `make run`, `make test` (docs/contracts.md §0). Python 3.11+ is the only
# prerequisite; everything else is installed into .venv/.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

FRONTEND := frontend
NPM_STAMP := $(FRONTEND)/node_modules/.installed
FRONTEND_SOURCES := $(shell find $(FRONTEND)/src $(FRONTEND)/public -type f 2>/dev/null) \
	$(wildcard $(FRONTEND)/index.html $(FRONTEND)/vite.config.ts $(FRONTEND)/tsconfig.json)

.PHONY: setup run test lint migrate frontend results api-schema bench-routers

setup: $(STAMP) .env frontend migrate

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	# Pinned first so no other package can pull a CUDA build of torch.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# A local secret key, written once and readable by its owner only (umask 077: mode 0600);
# production sets SECRET_KEY in the environment instead.
.env:
	umask 077 && $(PY) -c "import secrets; print('SECRET_KEY=' + secrets.token_urlsafe(50))" > .env

# The browser dashboard (needs Node.js 20+ and npm): `npm ci` when the lock file changes, a
# build when a source is newer than the last build, nothing otherwise.
ifneq ($(wildcard $(FRONTEND)/package.json),)
frontend: $(FRONTEND)/dist/index.html

$(NPM_STAMP): $(FRONTEND)/package.json $(FRONTEND)/package-lock.json
	cd $(FRONTEND) && npm ci --no-audit --no-fund
	touch $@

$(FRONTEND)/dist/index.html: $(NPM_STAMP) $(FRONTEND_SOURCES)
	cd $(FRONTEND) && npm run build

# The committed OpenAPI schema (frontend/openapi.json) and the dashboard's TypeScript types
# made from it (frontend/src/api/schema.d.ts), regenerated from the server's views; run it
# after changing an API (tests/console/test_schema.py fails while they are stale).
api-schema: $(STAMP) .env $(NPM_STAMP)
	cd $(FRONTEND) && npm run gen:api
else
frontend: ;
endif

migrate: $(STAMP) .env frontend
	$(PY) manage.py migrate --noinput -v 0
	$(PY) manage.py collectstatic --noinput -v 0

# The living demo on the embedded defaults: web, workers, beat, the picker, the router, and a
# fleet of emulated vLLM endpoints whose clients' calls go through the router (see README). Ctrl-C stops everything: each
# process gets SIGTERM and LOCUS_STOP_GRACE_SECONDS (20) to drain, and make exits 0 when all
# did (console/demo/supervisor.py). The sign-in line comes last, once the console answers.
# SLO burn-rate windows of a 1-day budget (page: 2 min and 10 s), so a short demo shows
# them (docs/operations.md, "SLA breaches"); set either variable to override.
run: export LOCUS_SLO_PERIOD_DAYS ?= 1
run: export LOCUS_SLO_EVAL_INTERVAL_SECONDS ?= 5
run: setup
	$(PY) manage.py demo_prepare --no-signin
	exec $(PY) -m console.demo.supervisor -f Procfile --last signin --grace $${LOCUS_STOP_GRACE_SECONDS:-20}

# Two pytest-xdist workers, a test file each at a time, each with its own Redis database and
# artifacts directory (tests/support/workers.py; `-p` here, not in addopts, so it loads before
# pytest-django and from a fresh clone); then the `serial` tests, which time real clocks, alone.
# The later -m replaces addopts' -m 'not slow'.
TEST_WORKERS ?= 2
test: setup
	$(if $(wildcard $(FRONTEND)/package.json),cd $(FRONTEND) && npm test)
	$(PY) -m pytest -p tests.support.workers -n $(TEST_WORKERS) --dist loadfile -m 'not slow and not serial'
	$(PY) -m pytest -m 'serial and not slow'

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy console telemetry optimizer tools
	$(VENV)/bin/lint-imports
	$(PY) manage.py makemigrations --check --dry-run

# docs/results/ and the README's results table, rendered from the report files stored under
# docs/results/reports/ (tools/results needs only the standard library, so no set-up).
results:
	$(PYTHON) -m tools.results

# Side-by-side benchmark of OpenAI routers over the emulated fleet (docs/router-benchmark.md):
# the peer routers and the replay's OpenAI client live in their own venv, never the product's.
# Options through BENCH_ARGS, e.g. BENCH_ARGS="--quick" or "--routers round-robin".
BENCH_VENV ?= var/bench-venv
bench-routers: $(STAMP)
	bash tests/bench/routers/setup_bench_env.sh $(BENCH_VENV)
	$(PY) tests/bench/bench_routers.py --bench-venv $(BENCH_VENV) $(BENCH_ARGS)
