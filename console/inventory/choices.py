"""Enumerations of the inventory, shared with the topology file format (docs/contracts.md §1)."""

from django.db import models


class Tier(models.TextChoices):
    DEVICE = "device", "Device"
    EDGE = "edge", "Edge"
    REGIONAL = "regional", "Regional"
    CLOUD = "cloud", "Cloud"


class NodeRole(models.TextChoices):
    MIXED = "mixed", "Mixed (prefill and decode)"
    PREFILL = "prefill", "Prefill only"
    DECODE = "decode", "Decode only"


class NodeState(models.TextChoices):
    ACTIVE = "active", "Active"
    CORDONED = "cordoned", "Cordoned (no new requests)"
    DRAINING = "draining", "Draining (finishing in-flight work)"
    DOWN = "down", "Down"
