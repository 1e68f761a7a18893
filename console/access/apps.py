from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "console.access"
    label = "access"
    verbose_name = "Access"

    def ready(self) -> None:
        from console.access import (  # noqa: F401  (role groups; the schema's bearer scheme)
            schema,
            signals,
        )
