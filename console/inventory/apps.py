from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "console.inventory"
    label = "inventory"
    verbose_name = "Inventory"

    def ready(self) -> None:
        from console.inventory import signals

        signals.connect()
