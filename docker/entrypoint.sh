#!/bin/sh
# locus-entrypoint ROLE: web | worker | beat | migrate | manage ARGS...
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
    exec celery -A console worker --loglevel "${LOG_LEVEL:-INFO}" \
      --concurrency "${CELERY_CONCURRENCY:-2}" "$@"
    ;;
  beat)
    exec celery -A console beat --loglevel "${LOG_LEVEL:-INFO}" \
      --schedule /app/var/celerybeat-schedule "$@"
    ;;
  manage)
    exec python manage.py "$@"
    ;;
  *)
    echo "usage: locus-entrypoint web|worker|beat|migrate|manage ARGS" >&2
    exit 64
    ;;
esac
