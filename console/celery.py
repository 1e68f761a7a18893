"""The Celery application; tasks are discovered in every installed app's `tasks` module."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("locus")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
