from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "console.access"
    label = "access"
    verbose_name = "Access"

    def ready(self) -> None:
        from console.access import signals  # noqa: F401  (creates the role groups)
