from django.apps import AppConfig


class PlacementConfig(AppConfig):
    name = "console.placement"
    label = "placement"
    verbose_name = "Placement"
