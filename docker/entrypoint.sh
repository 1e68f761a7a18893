#!/bin/sh
# locus-entrypoint ROLE: web | worker | beat | migrate | probe | manage ARGS...
# All configuration comes from the environment (see README, "Operations").
set -eu
role="${1:-web}"
[ "$#" -gt 0 ] && shift

case "$role" in
  migrate)
    exec python manage.py migrate --noinput
    ;;
  web)
    # Applying migrations here keeps a single-replica deployment to one command; with several
    # replicas run `migrate` once as a release step and set LOCUS_MIGRATE_ON_START=false.
    if [ "${LOCUS_MIGRATE_ON_START:-true}" = "true" ]; then
      python manage.py migrate --noinput
    fi
    rm -rf "${PROMETHEUS_MULTIPROC_DIR:?}"/* 2>/dev/null || true
    exec uvicorn console.asgi:application --host 0.0.0.0 --port "${PORT:-8000}" \
      --workers "${WEB_CONCURRENCY:-2}" --proxy-headers --no-access-log "$@"
    ;;
  worker)
    # CELERY_QUEUES picks what this worker consumes: `telemetry,celery` (ingest, scrapes,
    # watchdog) or `jobs` (training, evaluations); docs/operations.md "Workers and queues".
    exec celery -A console worker --loglevel "${LOG_LEVEL:-INFO}" \
      -Q "${CELERY_QUEUES:-telemetry,celery,jobs}" \
      --concurrency "${CELERY_CONCURRENCY:-2}" "$@"
    ;;
  beat)
    exec celery -A console beat --loglevel "${LOG_LEVEL:-INFO}" \
      --schedule /app/var/celerybeat-schedule "$@"
    ;;
  probe)
    # The web health check: GET /healthz with a Host header Django accepts (the first of
    # ALLOWED_HOSTS), since a probe to 127.0.0.1 is refused when ALLOWED_HOSTS names only the
    # public host.
    exec python -c '
import os, urllib.request
host = os.environ.get("ALLOWED_HOSTS", "localhost").split(",")[0].strip().lstrip(".")
host = "localhost" if host in ("", "*") else host
url = "http://127.0.0.1:%s/healthz" % os.environ.get("PORT", "8000")
urllib.request.urlopen(urllib.request.Request(url, headers={"Host": host}), timeout=2)
'
    ;;
  manage)
    exec python manage.py "$@"
    ;;
  *)
    echo "usage: locus-entrypoint web|worker|beat|migrate|probe|manage ARGS" >&2
    exit 64
    ;;
esac
