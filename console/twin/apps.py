from django.apps import AppConfig


class TwinConfig(AppConfig):
    name = "console.twin"
    label = "twin"
    verbose_name = "Twin"
