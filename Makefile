# Locus: `make setup`, `make run`, `make test` (CONTRACTS §0). Python 3.11+ is the only
# prerequisite; everything else is installed into .venv/.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test lint migrate

setup: $(STAMP) .env migrate

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	# Pinned first so no other package can pull a CUDA build of torch.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# A local secret key, written once; production sets SECRET_KEY in the environment instead.
.env:
	$(PY) -c "import secrets; print('SECRET_KEY=' + secrets.token_urlsafe(50))" > .env

migrate: $(STAMP) .env
	$(PY) manage.py migrate --noinput -v 0
	$(PY) manage.py collectstatic --noinput -v 0

run: setup
	$(VENV)/bin/honcho -f Procfile start

test: setup
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy console telemetry optimizer
	$(PY) manage.py makemigrations --check --dry-run
