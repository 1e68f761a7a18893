"""The Celery application; tasks are discovered in every installed app's `tasks` module."""

import os

from celery import Celery

from console.broker import install as install_broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
install_broker()  # a filesystem:// broker that never hands out half-written messages

app = Celery("locus")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Long jobs requeue themselves when the worker stops (its signal handlers connect on import).
import console.worker_stop  # noqa: E402,F401
