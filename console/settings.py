"""Settings, read from the environment (and an optional `.env` file at the project root).

Embedded defaults run everything in one machine with nothing installed: SQLite, an in-memory
channel layer, a filesystem Celery broker and a local-memory cache. `DATABASE_URL` switches to
Postgres and `REDIS_URL` to Redis for the channel layer, the cache and the broker. Every
variable may also be given as `NAME_FILE` pointing at a file (Docker/Kubernetes secrets).
docs/settings.md lists every variable with its default.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.FileAwareEnv()
environ.FileAwareEnv.read_env(BASE_DIR / ".env")

DEBUG: bool = env.bool("DEBUG", default=False)
SECRET_KEY: str = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off (`make setup` writes one into .env)."
        )
    SECRET_KEY = "insecure-debug-only-key"  # noqa: S105 - only ever used with DEBUG on

VAR_DIR = Path(env.str("LOCUS_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)
ALLOWED_HOSTS: list[str] = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS: list[str] = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# HTTPS deployments (`manage.py check --deploy`; docs/operations.md "Production settings").
# LOCUS_HTTPS=true says browsers reach the console over HTTPS: plain HTTP is redirected, the
# session and CSRF cookies are Secure and HSTS is sent; each may be set on its own. Off by
# default, since `make run` and the loopback-published compose serve plain HTTP, and always
# off with DEBUG.
LOCUS_HTTPS: bool = env.bool("LOCUS_HTTPS", default=False) and not DEBUG
SECURE_SSL_REDIRECT: bool = env.bool("SECURE_SSL_REDIRECT", default=LOCUS_HTTPS) and not DEBUG
# Probes, Prometheus and kube-scheduler (enableHTTPS: false) call over plain HTTP inside the
# network and do not follow redirects to TLS.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$", r"^extender/"]
SESSION_COOKIE_SECURE: bool = env.bool("SESSION_COOKIE_SECURE", default=LOCUS_HTTPS)
CSRF_COOKIE_SECURE: bool = env.bool("CSRF_COOKIE_SECURE", default=LOCUS_HTTPS)
SECURE_HSTS_SECONDS: int = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if LOCUS_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS: bool = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD: bool = env.bool("SECURE_HSTS_PRELOAD", default=False)
# Opt-in only: trusting X-Forwarded-Proto from a client that reaches the console directly
# would let it claim HTTPS. Set it when a TLS proxy in front sets (and overwrites) the header.
if env.bool("LOCUS_TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "axes",
    "console.access",
    "console.inventory",
    "console.live",
    "console.placement",
    "console.policies",
    "console.twin",
    "console.demo",
    "console.web",
    "telemetry",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "console.api.middleware.RefuseNulMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

# Login throttling by django-axes (https://django-axes.readthedocs.io): failed sign-ins are
# counted per (username, client address) in the database, so every server process shares
# them; past LOCUS_LOGIN_FAILURE_LIMIT the pair is locked out for LOCUS_LOGIN_COOLOFF_MINUTES
# (answer 429). Keyed on the pair so that guessing at one account from one place stops
# without letting anyone lock a colleague out from everywhere. API keys are not passwords
# (256-bit random) and are not counted.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT: int = env.int("LOCUS_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOCUS_LOGIN_COOLOFF_MINUTES", default=15.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False  # no banner on every manage.py command

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"
ASGI_APPLICATION = "console.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "console" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'locus.sqlite3'}")
}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker writes; the timeout rides out short locks.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Fail fast on a dead or partitioned server instead of blocking a thread for the kernel's
    # two-hour TCP timeout: the decision recorder and the snapshot refresh must notice an
    # outage and retry. Query parameters in DATABASE_URL override these.
    for option, value in {
        "connect_timeout": 5,
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
    }.items():
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault(option, value)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL: str = env.str("REDIS_URL", default="")

if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Celery: Redis when configured, otherwise kombu's filesystem transport, a broker that needs no
# server and works across processes (the web process enqueues, the worker consumes).
CELERY_BROKER_URL: str = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
if CELERY_BROKER_URL == "filesystem://":
    # `filesystem://` is served by console/broker.py, not kombu's own transport, which can
    # hand a consumer a half-written message (the Celery app installs it).
    _broker_dir = VAR_DIR / "celery-broker"
    _broker_dir.mkdir(exist_ok=True)
    (VAR_DIR / "celery-processed").mkdir(exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(VAR_DIR / "celery-processed"),
        "control_folder": str(VAR_DIR / "celery-control"),
        "store_processed": False,
        # kombu's virtual transports poll; with late acks and a prefetch of one, the default
        # 1 s interval caps a worker near one task a second, too slow for scrapes.
        "polling_interval": 0.05,
    }
CELERY_TASK_ALWAYS_EAGER: bool = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message to be redelivered
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker told to stop coldly (SIGQUIT; SIGTERM for the Procfile's jobs worker, which sets
# REMAP_SIGTERM=SIGQUIT) gives its running task this long, then cancels it; late acks make it
# redelivered on the next start (Celery 5.5 "soft shutdown"). Below the demo supervisor's
# 20 s grace, so a training run never makes Ctrl-C on `make run` kill a worker.
CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT: float = env.float(
    "CELERY_WORKER_SOFT_SHUTDOWN_TIMEOUT", default=10.0
)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Telemetry and heavy jobs get their own queues and workers, so a training run can never
# starve ingest (console/queues.py; docs/operations.md "Workers and queues").
LOCUS_TELEMETRY_QUEUE = "telemetry"
LOCUS_JOBS_QUEUE = "jobs"
CELERY_TASK_ROUTES = ("console.queues.route_task",)

# Telemetry (telemetry/conf.py reads these; docs/settings.md lists them).
LOCUS_TELEMETRY_STALE_SECONDS: float = env.float("LOCUS_TELEMETRY_STALE_SECONDS", default=30.0)
LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES: bool = env.bool(
    "LOCUS_TELEMETRY_REGISTER_UNKNOWN_NODES", default=False
)
LOCUS_TELEMETRY_REGISTER_SITE: str = env.str("LOCUS_TELEMETRY_REGISTER_SITE", default="")
LOCUS_TELEMETRY_REGISTER_ACCELERATOR: str = env.str(
    "LOCUS_TELEMETRY_REGISTER_ACCELERATOR", default=""
)
# Latest telemetry per node: Redis when configured, else a SQLite file every process shares.
LOCUS_TELEMETRY_STATE_URL: str = env.str(
    "LOCUS_TELEMETRY_STATE_URL",
    default=REDIS_URL or f"sqlite:///{VAR_DIR / 'telemetry-state.sqlite3'}",
)
LOCUS_TELEMETRY_STATE_PREFIX: str = env.str(
    "LOCUS_TELEMETRY_STATE_PREFIX", default="locus:telemetry"
)
LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS", default=10.0
)
LOCUS_TELEMETRY_SCRAPE_TIMEOUT_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_SCRAPE_TIMEOUT_SECONDS", default=5.0
)
LOCUS_TELEMETRY_SCRAPE_BACKOFF_MAX_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_SCRAPE_BACKOFF_MAX_SECONDS", default=300.0
)
LOCUS_TELEMETRY_RETENTION_DAYS: int = env.int("LOCUS_TELEMETRY_RETENTION_DAYS", default=7)
LOCUS_TELEMETRY_ROLLUP_RETENTION_DAYS: int = env.int(
    "LOCUS_TELEMETRY_ROLLUP_RETENTION_DAYS", default=90
)
LOCUS_TELEMETRY_PARTITION_DAYS_AHEAD: int = env.int(
    "LOCUS_TELEMETRY_PARTITION_DAYS_AHEAD", default=3
)
# Request bodies Django reads into memory: a full placements batch (1,000 requests with long
# prefix lists) fits; the decision fast path applies the same limit (413 beyond it).
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024
LOCUS_TELEMETRY_MAX_BODY_BYTES: int = env.int(
    "LOCUS_TELEMETRY_MAX_BODY_BYTES", default=32 * 1024 * 1024
)
# A remote-write body's size once decompressed (its snappy header is checked before any
# decompression; 413 beyond it). docs/hardening.md has the reasoning.
LOCUS_TELEMETRY_MAX_DECOMPRESSED_BYTES: int = env.int(
    "LOCUS_TELEMETRY_MAX_DECOMPRESSED_BYTES", default=16 * 1024 * 1024
)
LOCUS_TELEMETRY_MAX_FUTURE_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_MAX_FUTURE_SECONDS", default=300.0
)
LOCUS_TELEMETRY_INBOX_REDELIVER_SECONDS: float = env.float(
    "LOCUS_TELEMETRY_INBOX_REDELIVER_SECONDS", default=60.0
)
# SLA breaches: burn-rate rules on each SLO's outcomes (telemetry/slo_rules.py). The windows
# are the SRE workbook's for a 30-day budget and scale with the period (`make run`: 1 day).
LOCUS_SLO_PERIOD_DAYS: float = env.float("LOCUS_SLO_PERIOD_DAYS", default=30.0)
LOCUS_SLO_MIN_REQUESTS: int = env.int("LOCUS_SLO_MIN_REQUESTS", default=20)
LOCUS_SLO_EVAL_INTERVAL_SECONDS: float = env.float("LOCUS_SLO_EVAL_INTERVAL_SECONDS", default=30.0)
LOCUS_NODE_LATENCY_WINDOW_SECONDS: int = env.int("LOCUS_NODE_LATENCY_WINDOW_SECONDS", default=300)

CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "telemetry-scrape": {
        "task": "telemetry.scrape_all",
        "schedule": LOCUS_TELEMETRY_SCRAPE_INTERVAL_SECONDS,
    },
    "telemetry-freshness": {"task": "telemetry.check_freshness", "schedule": 5.0},
    "telemetry-redeliver": {"task": "telemetry.redeliver_inbox", "schedule": 30.0},
    "telemetry-slo-breaches": {
        "task": "telemetry.evaluate_slos",
        "schedule": LOCUS_SLO_EVAL_INTERVAL_SECONDS,
    },
    "telemetry-rollup": {"task": "telemetry.rollup", "schedule": 60.0},
    "telemetry-partitions": {"task": "telemetry.maintain_partitions", "schedule": 3600.0},
    "telemetry-retention": {"task": "telemetry.retention", "schedule": 3600.0},
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [FRONTEND_DIST] if FRONTEND_DIST.is_dir() else []
# Vite names every built asset under assets/ after its content hash: cache those for good.
WHITENOISE_IMMUTABLE_FILE_TEST = r"^/static/assets/.+-[\w-]{8}\.\w+$"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "console.access.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["console.access.permissions.RolePermission"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    # DRF's parsers, refusing NUL characters and absurd nesting (console/api/jsonbody.py).
    "DEFAULT_PARSER_CLASSES": [
        "console.api.parsers.SafeJSONParser",
        "console.api.parsers.SafeFormParser",
        "console.api.parsers.SafeMultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "console.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "console.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Locus API",
    "DESCRIPTION": "Fleet inventory, telemetry ingest and placement decisions for LLM inference.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # A breach's severity and an SLO's open-breach level are one choice set under one name.
    "ENUM_NAME_OVERRIDES": {"SeverityEnum": "telemetry.models.BreachSeverity"},
    # 3.1 shares JSON Schema 2020-12 with the pydantic models that document request bodies.
    "OAS_VERSION": "3.1.0",
    # Every operation documents the API's error responses (console/api/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "console.api.schema.add_error_responses",
    ],
    # Swagger UI and ReDoc from the sidecar package's static files, not a CDN: the docs load
    # offline and under a strict network policy (drf-spectacular docs, "Self-contained UI").
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
LOCUS_API_KEY_CACHE_SECONDS: float = env.float("LOCUS_API_KEY_CACHE_SECONDS", default=30.0)

# Threads serving HTTP requests in each ASGI process (console/asgi.py).
LOCUS_HTTP_THREADS: int = env.int("LOCUS_HTTP_THREADS", default=16)

# -- decision engine (console.placement) -------------------------------------------------------
# The policy that serves when no policy version is active, and the heuristic the engine falls
# back to when a scorer fails or is slow.
LOCUS_DEFAULT_POLICY: str = env.str("LOCUS_DEFAULT_POLICY", default="weighted-score")
LOCUS_FALLBACK_POLICY: str = env.str("LOCUS_FALLBACK_POLICY", default="least-loaded")
LOCUS_SNAPSHOT_REFRESH_SECONDS: float = env.float("LOCUS_SNAPSHOT_REFRESH_SECONDS", default=1.0)
LOCUS_MAX_FALLBACKS: int = env.int("LOCUS_MAX_FALLBACKS", default=3)
# One trained-scorer decision in this many keeps why it was picked in its receipt (integrated
# gradients, ~0.17 ms each against ~0.07 ms for the decision's pipeline on 2 cores:
# tests/bench/bench_learned_why.py); 0 keeps it only for decisions asked to explain
# (console/placement/engine/learned_why.py).
LOCUS_LEARNED_EXPLAIN_EVERY: int = env.int("LOCUS_LEARNED_EXPLAIN_EVERY", default=100)
# The decision's split stage (optimizer.decide.registry SPLITTERS; "" for none): on a fleet with
# prefill or decode nodes (a fleet of mixed nodes is never split) it may answer
# a long prompt with a prefill node and a decode node (issue #30, docs/decisions.md), above
# LOCUS_SPLIT_THRESHOLD_TOKENS uncached prompt tokens.
LOCUS_SPLIT_STAGE: str = env.str("LOCUS_SPLIT_STAGE", default="pd-threshold")
LOCUS_SPLIT_THRESHOLD_TOKENS: int = env.int("LOCUS_SPLIT_THRESHOLD_TOKENS", default=1024)
# /readyz fails when decision records wait this long with nothing written (the database is gone
# or refuses them); the recorder retries with backoff up to 5 s, so a healthy one never does.
LOCUS_RECORDER_STALLED_SECONDS: float = env.float("LOCUS_RECORDER_STALLED_SECONDS", default=30.0)
LOCUS_SCORER_BUDGET_MS: float = env.float("LOCUS_SCORER_BUDGET_MS", default=2.0)
# The shared live view (docs/deploying.md, "The shared live view"): every decider process
# publishes its sends to this Redis and merges the others'. Redis when configured; "" keeps
# each process on its own view.
LOCUS_SHARED_VIEW_URL: str = env.str("LOCUS_SHARED_VIEW_URL", default=REDIS_URL)
LOCUS_SHARED_VIEW_STREAM: str = env.str("LOCUS_SHARED_VIEW_STREAM", default="locus:view:sends")
# How long sends wait to be published as one batch, and the longest a read blocks, in ms.
LOCUS_SHARED_VIEW_BATCH_MS: float = env.float("LOCUS_SHARED_VIEW_BATCH_MS", default=5.0)
# Batches the stream keeps (about: MAXLEN ~); a starting process replays up to this many.
LOCUS_SHARED_VIEW_MAXLEN: int = env.int("LOCUS_SHARED_VIEW_MAXLEN", default=20_000)
# The decision recorder's write-ahead journal (console/placement/engine/journal.py,
# docs/deploying.md "Failover"): each decider appends its records and outcomes here before it
# answers, so a killed one loses none. A directory on a local disk; "" turns the journal off.
LOCUS_RECORD_JOURNAL_DIR: str = env.str(
    "LOCUS_RECORD_JOURNAL_DIR", default=str(VAR_DIR / "record-journal")
)
# Tests turn the background threads off and refresh/flush by hand.
LOCUS_ENGINE_BACKGROUND: bool = env.bool("LOCUS_ENGINE_BACKGROUND", default=True)
# Freeze the heap once the engine serves (console/placement/engine/runtime.py `_freeze_heap`):
# full garbage collections then scan what came later, not the whole framework.
LOCUS_GC_FREEZE: bool = env.bool("LOCUS_GC_FREEZE", default=True)
LOCUS_BREAKER: dict[str, float] = {
    key: env.float(f"LOCUS_BREAKER_{key.upper()}", default=default)
    for key, default in (
        ("consecutive_failures", 5),
        ("window_s", 120.0),
        ("error_rate", 0.5),
        ("min_requests", 10),
        ("open_s", 60.0),
        ("half_open_probes", 3),
        ("close_after_successes", 3),
    )
}
# kube-scheduler's extender protocol cannot send a bearer token: inside a cluster, protect
# /extender/ with a NetworkPolicy, or set this to false and front it with a proxy that adds one.
LOCUS_EXTENDER_ALLOW_ANONYMOUS: bool = env.bool("LOCUS_EXTENDER_ALLOW_ANONYMOUS", default=True)
# When set, /extender/* requires `Authorization: Bearer <this token>` and nothing else.
LOCUS_EXTENDER_TOKEN: str = env.str("LOCUS_EXTENDER_TOKEN", default="")

# -- the Envoy endpoint picker (console.placement.doors.extproc, docs/gateway.md) -------------
# llm-d's ports: 9002 ext_proc, 9003 gRPC health.
LOCUS_PICKER_HOST: str = env.str("LOCUS_PICKER_HOST", default="127.0.0.1")
LOCUS_PICKER_PORT: int = env.int("LOCUS_PICKER_PORT", default=9002)
LOCUS_PICKER_HEALTH_PORT: int = env.int("LOCUS_PICKER_HEALTH_PORT", default=9003)
LOCUS_PICKER_SOURCE: str = env.str("LOCUS_PICKER_SOURCE", default="")
# Prometheus /metrics of the picker process (llm-d uses 9090); 0: not served.
LOCUS_PICKER_METRICS_PORT: int = env.int("LOCUS_PICKER_METRICS_PORT", default=0)
# Pickers on the same ports, each with its own engine (run_picker --processes; docs/gateway.md).
LOCUS_PICKER_PROCESSES: int = env.int("LOCUS_PICKER_PROCESSES", default=1)
LOCUS_PICKER_MAX_BODY_BYTES: int = env.int("LOCUS_PICKER_MAX_BODY_BYTES", default=16 * 1024 * 1024)
# Endpoints per answer, the pick first (0: the pick and every fallback). Envoy's ORIGINAL_DST
# cluster reads one ip:port from the header: give it 1.
LOCUS_PICKER_ENDPOINTS: int = env.int("LOCUS_PICKER_ENDPOINTS", default=0)
# Shed (429) when every endpoint for the model has at least this many queued requests; 0: never.
LOCUS_PICKER_SHED_QUEUE_DEPTH: int = env.int("LOCUS_PICKER_SHED_QUEUE_DEPTH", default=0)

# -- the OpenAI-compatible router (console.placement.doors.router, docs/router.md) ------------
LOCUS_ROUTER_HOST: str = env.str("LOCUS_ROUTER_HOST", default="127.0.0.1")
LOCUS_ROUTER_PORT: int = env.int("LOCUS_ROUTER_PORT", default=8100)
# The request source of calls that name none (x-locus-source header or `locus_source` field).
LOCUS_ROUTER_SOURCE: str = env.str("LOCUS_ROUTER_SOURCE", default="")
LOCUS_ROUTER_PROCESSES: int = env.int("LOCUS_ROUTER_PROCESSES", default=1)
# true: no service key asked (a trusted network only; docs/router.md, "Authentication").
LOCUS_ROUTER_OPEN: bool = env.bool("LOCUS_ROUTER_OPEN", default=False)
LOCUS_ROUTER_MAX_BODY_BYTES: int = env.int("LOCUS_ROUTER_MAX_BODY_BYTES", default=16 * 1024 * 1024)
# Shed (429) when every eligible node has at least this many queued requests; 0: never.
LOCUS_ROUTER_SHED_QUEUE_DEPTH: int = env.int("LOCUS_ROUTER_SHED_QUEUE_DEPTH", default=0)
# A node that accepts no connection within this is skipped for the next fallback.
LOCUS_ROUTER_CONNECT_TIMEOUT_SECONDS: float = env.float(
    "LOCUS_ROUTER_CONNECT_TIMEOUT_SECONDS", default=2.0
)
# Sent to the nodes as `Authorization: Bearer` (vLLM's --api-key); the client's key never is.
LOCUS_ROUTER_UPSTREAM_API_KEY: str = env.str("LOCUS_ROUTER_UPSTREAM_API_KEY", default="")

# -- policies: evaluations and canaries (console.policies) -------------------------------------
LOCUS_TRACES_DIR = Path(
    # The public traces shipped in the repository (optimizer/data/traces/README.md).
    env.str("LOCUS_TRACES_DIR", default=str(BASE_DIR / "optimizer" / "data" / "traces"))
)
LOCUS_EVALUATION_TRACE: str = env.str(
    "LOCUS_EVALUATION_TRACE", default=str(LOCUS_TRACES_DIR / "mooncake_synthetic.jsonl")
)
LOCUS_EVALUATION_LOADS: list[float] = env.list(
    "LOCUS_EVALUATION_LOADS", cast=float, default=[1.0, 4.0]
)
# Seeds 0-2, as the evaluations the docs' figures come from (docs/learned-policy.md).
LOCUS_EVALUATION_SEEDS: list[int] = env.list("LOCUS_EVALUATION_SEEDS", cast=int, default=[0, 1, 2])
LOCUS_EVALUATION_LIMIT: int | None = env.int("LOCUS_EVALUATION_LIMIT", default=None)
LOCUS_CANARY_WINDOW_SECONDS: float = env.float("LOCUS_CANARY_WINDOW_SECONDS", default=900.0)
LOCUS_CANARY_MIN_OUTCOMES: int = env.int("LOCUS_CANARY_MIN_OUTCOMES", default=100)
LOCUS_CANARY_MAX_ATTAINMENT_DROP: float = env.float(
    "LOCUS_CANARY_MAX_ATTAINMENT_DROP", default=0.02
)
# How sure the watchdog must be that the canary's attainment is lower before the drop counts
# (console/policies/canary.py: a one-sided two-proportion z-test).
LOCUS_CANARY_CONFIDENCE: float = env.float("LOCUS_CANARY_CONFIDENCE", default=0.99)
LOCUS_CANARY_MAX_BREACH_SHARE_INCREASE: float = env.float(
    "LOCUS_CANARY_MAX_BREACH_SHARE_INCREASE", default=0.1
)
CELERY_BEAT_SCHEDULE["policies-canary-watchdog"] = {
    "task": "console.policies.tasks.canary_watchdog",
    "schedule": 30.0,
}
LOCUS_ARTIFACTS_DIR = Path(env.str("LOCUS_ARTIFACTS_DIR", default=str(VAR_DIR / "artifacts")))
# Console training runs: the defaults reach the PPO issue's result in minutes on 2 cores.
LOCUS_TRAINING_TIMESTEPS: int = env.int("LOCUS_TRAINING_TIMESTEPS", default=500_000)
LOCUS_TRAINING_BC_STEPS: int = env.int("LOCUS_TRAINING_BC_STEPS", default=100_000)
# Arrivals per training episode and validation replay (optimizer.rl.config.TrainConfig.window).
LOCUS_TRAINING_WINDOW: int = env.int("LOCUS_TRAINING_WINDOW", default=4096)
# The trace that stands for this fleet's workload: training runs default to it
# (docs/learned-policy.md). The demo fleet replays the Mooncake trace.
LOCUS_FLEET_TRACE: str = env.str(
    "LOCUS_FLEET_TRACE", default=str(LOCUS_TRACES_DIR / "mooncake_synthetic.jsonl")
)
# Where training runs start: "generalist" (fine-tune the shipped generalist) or "imitation".
LOCUS_TRAINING_INIT: str = env.str("LOCUS_TRAINING_INIT", default="generalist")
# Replays of evaluations and training validations fan out as Celery tasks; one that no worker
# finishes within this many seconds is run by the waiting task itself.
LOCUS_REPLAY_TIMEOUT_S: float = env.float("LOCUS_REPLAY_TIMEOUT_S", default=1800.0)
# The twin (docs/twin.md): the widest window of recorded traffic one export or calibration
# may cover, and the measured requests a profile needs before calibration fits it.
LOCUS_OBSERVATIONS_MAX_HOURS: float = env.float("LOCUS_OBSERVATIONS_MAX_HOURS", default=744.0)
LOCUS_CALIBRATION_MIN_SAMPLES: int = env.int("LOCUS_CALIBRATION_MIN_SAMPLES", default=50)

# -- the living demo (`make run`) ---------------------------------------------------------------
# Not PORT: honcho gives every process of the Procfile its own PORT.
LOCUS_WEB_PORT: int = env.int("LOCUS_WEB_PORT", default=8000)
LOCUS_DEMO_WEB_URL: str = env.str(
    "LOCUS_DEMO_WEB_URL", default=f"http://127.0.0.1:{LOCUS_WEB_PORT}"
)
# Where the demo's clients send their calls: the router (`run_router`, the Procfile's `router`).
LOCUS_DEMO_ROUTER_URL: str = env.str(
    "LOCUS_DEMO_ROUTER_URL", default=f"http://{LOCUS_ROUTER_HOST}:{LOCUS_ROUTER_PORT}"
)
LOCUS_DEMO_TRACE: str = env.str(
    "LOCUS_DEMO_TRACE", default=str(LOCUS_TRACES_DIR / "mooncake_synthetic.jsonl")
)
# How the demo fleet really behaves (docs/twin.md): profiles that differ from the inventory's
# nominal fleet-demo.yaml, so calibrating on recorded traffic has something true to find.
LOCUS_DEMO_TRUTH_TOPOLOGY: str = env.str(
    "LOCUS_DEMO_TRUTH_TOPOLOGY",
    default=str(BASE_DIR / "optimizer" / "topologies" / "fleet-demo-truth.yaml"),
)
# demo_prepare schedules a calibration of the demo's first minutes of recorded traffic.
LOCUS_DEMO_CALIBRATION_MINUTES: float = env.float("LOCUS_DEMO_CALIBRATION_MINUTES", default=20.0)
LOCUS_DEMO_TRAINING_TIMESTEPS: int = env.int("LOCUS_DEMO_TRAINING_TIMESTEPS", default=50_000)
