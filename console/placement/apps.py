from django.apps import AppConfig


class PlacementConfig(AppConfig):
    name = "console.placement"
    label = "placement"
    verbose_name = "Placement"

    def ready(self) -> None:
        # Lets drf-spectacular document the pydantic request bodies of the decision API.
        import drf_spectacular.contrib.pydantic  # noqa: F401
