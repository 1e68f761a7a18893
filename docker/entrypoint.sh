#!/bin/sh
# locus-entrypoint ROLE: web | worker | beat | picker | router | migrate | probe |
#   picker-probe | router-probe | manage ARGS...
# All configuration comes from the environment (docs/settings.md lists it).
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
  picker)
    # The Envoy ext_proc endpoint picker (docs/gateway.md); LOCUS_PICKER_SOURCE names the
    # request source its gateway serves.
    exec python manage.py run_picker --host 0.0.0.0 "$@"
    ;;
  router)
    # The OpenAI-compatible router (docs/router.md); LOCUS_ROUTER_SOURCE names the request
    # source of calls that name none.
    exec python manage.py run_router --host 0.0.0.0 --port 8100 "$@"
    ;;
  router-probe)
    # The router's health check: GET /health answers 200 once it holds an inventory snapshot.
    exec python -c '
import urllib.request
urllib.request.urlopen("http://127.0.0.1:8100/health", timeout=2)
'
    ;;
  picker-probe)
    # The picker's health check: gRPC readiness (SERVING once it holds an inventory snapshot).
    exec python -c '
import os, sys, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
port = os.environ.get("LOCUS_PICKER_HEALTH_PORT", "9003")
with grpc.insecure_channel("127.0.0.1:%s" % port) as channel:
    reply = health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service="readiness"), timeout=2)
sys.exit(0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1)
'
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
    echo "usage: locus-entrypoint web|worker|beat|picker|router|migrate|probe|picker-probe|router-probe|manage ARGS" >&2
    exit 64
    ;;
esac
