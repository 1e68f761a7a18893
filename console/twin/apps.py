from django.apps import AppConfig


class TwinConfig(AppConfig):
    name = "console.twin"
    label = "twin"
    verbose_name = "Twin"

    def ready(self) -> None:
        # Imported once the apps are loaded (the selectors import models).
        from console.placement.probes import connect
        from console.twin.probe_selectors import TwinProbes

        # Placement carries the running probe without importing this app
        # (console/placement/probes.py).
        connect(TwinProbes())
