"""The Locus console: a Django project with one app per bounded context."""

from console.celery import app as celery_app

__all__ = ["celery_app"]
