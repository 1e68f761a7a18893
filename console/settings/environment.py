"""The environment, read once for every part of the settings: the project's place, the `.env`
file, debug mode and the secret key, where state lives (`LOCUS_VAR_DIR`) and `REDIS_URL`, the
one switch that moves the cache, the channel layer, the broker, the latest telemetry and the
shared live view from embedded defaults to Redis. docs/settings.md, "The project"."""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# FileAwareEnv: every variable may also be given as `NAME_FILE` (Docker/Kubernetes secrets).
env = environ.FileAwareEnv()
environ.FileAwareEnv.read_env(BASE_DIR / ".env")

DEBUG: bool = env.bool("DEBUG", default=False)
SECRET_KEY: str = env.str("SECRET_KEY", default="")
# Checked before anything else is read or created, so a misconfigured start fails first.
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off (`make setup` writes one into .env)."
        )
    SECRET_KEY = "insecure-debug-only-key"  # noqa: S105 - only ever used with DEBUG on

VAR_DIR = Path(env.str("LOCUS_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

REDIS_URL: str = env.str("REDIS_URL", default="")
