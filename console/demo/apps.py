from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "console.demo"
    label = "demo"
    verbose_name = "Demo"
