from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "console.live"
    label = "live"
    verbose_name = "Live stream"
