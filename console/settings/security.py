"""Who may reach the console and how: host names, HTTPS, login throttling, passwords and API
key revocation. docs/settings.md, "Security"; docs/operations.md, "Production settings"."""

from __future__ import annotations

from datetime import timedelta

from console.settings.environment import DEBUG, env

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

# Login throttling by django-axes (https://django-axes.readthedocs.io): failed sign-ins are
# counted per (username, client address) in the database, so every server process shares
# them; past LOCUS_LOGIN_FAILURE_LIMIT the pair is locked out for LOCUS_LOGIN_COOLOFF_MINUTES
# (answer 429). Keyed on the pair so that guessing at one account from one place stops
# without letting anyone lock a colleague out from everywhere. API keys are not passwords
# (256-bit random) and are not counted. Its middleware is the last (core.MIDDLEWARE).
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

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

# How long another process may still accept a revoked API key (console/access/keyring.py).
LOCUS_API_KEY_CACHE_SECONDS: float = env.float("LOCUS_API_KEY_CACHE_SECONDS", default=30.0)
