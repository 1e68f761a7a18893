from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "console.inventory"
    label = "inventory"
    verbose_name = "Inventory"
